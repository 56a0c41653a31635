"""One exception tree, rooted at HilError.

Every failure hil reports on purpose is a HilError subclass whose message says what happened
and whose `fix` says what to do about it. The subtrees tell the plugin how to classify a case:

    HilError
    ├── UsageError            bad option, unknown target or recipe
    ├── DeviceSpecError       malformed devices/*.yaml (names the file and the key)
    ├── CaseError             a suite case that cannot be built or has malformed inputs
    ├── ExportError           PyTorch -> .pte failed (carries the exporter's message)
    │   └── ExporterIncomplete  the installed ExecuTorch lacks a part the recipe needs (a
    │                           source build without CMSIS-NN's bindings): never remembered
    ├── ResourceExhausted     this machine ran out of memory or disk (never remembered as the
    │                         model's failure; the lab's problem, like infrastructure)
    ├── CacheError            the artifact store could not be read or written
    ├── ProgramUnreadable     a .pte that is not one, is damaged, or is another ExecuTorch's
    ├── ResultsBusy           a results folder is held by a run still writing it (hil.results)
    ├── ReportError           a results folder or report is unreadable or fails its schema
    │   └── ReportAltered     a report, an input or a subject differs from what was sealed
    │                         or signed (an edited report is never merged or verified)
    ├── SigningError          a lab key cannot be loaded or cannot sign (hil.signing)
    │   └── SignatureInvalid  a signature does not verify with the key given
    ├── ExplainError          the first-divergent-operator explainer cannot work on an
    │                         artifact (missing or damaged side files, no delegates)
    ├── SdkError              `hil sdk build` cannot make a bare-metal ExecuTorch (hil.sdk)
    │   ├── SdkSourceMissing  a source tree lacks a piece (an empty submodule, an old driver,
    │   │                     a compiler without the CPU, CMake too old), named with the fix
    │   └── SdkBuildFailed    a configure, build or install stage failed (its log kept)
    ├── ExploreError          `hil explore` cannot show a model (hil.explore)
    │   ├── ArtifactMissing   the case was never exported (and --no-export refuses to)
    │   ├── PortInUse         the viewer's port on 127.0.0.1 is taken
    │   ├── ViewerMissing     Model Explorer is not installed and could not be installed
    │   └── ViewerFailed      Model Explorer is installed but did not start or convert
    ├── ExplainError          the first divergent operator cannot be looked for (hil.explain):
    │                         no .pte, a damaged one, a re-export that is another program
    ├── TargetError
    │   ├── TargetUnavailable  the target cannot exist here (missing tool): skip, with the fix
    │   ├── InfrastructureError  lost link, hung emulator, dead board: not the model's fault
    │   │   ├── TransportError / ProtocolError / LinkTimeout
    │   │   └── InfrastructureRecovered  the attempt was lost, the target recovered (retry it)
    │   ├── TargetCrash        the runner faulted or asserted while running the model
    │   ├── RunRefused         the runtime refused the program, the runner alive (its fault)
    │   ├── DeployError        the model could not be put on the target
    │   │   └── PoolsTooSmall  it does not fit the runner's memory pools
    │   └── TargetStateError   a lifecycle method called in the wrong state (a bug in the caller)
    └── CheckFailed (also AssertionError, so pytest reports a failure, not an error)
        ├── OutputMismatch     the target's outputs are wrong (against eager, or against the
        │   │                  quantized model it was compiled from)
        │   ├── LoweringMismatch  the lowered program's own reference is what is wrong
        │   └── DeviceMismatch    the device left its program's reference
        ├── MissingKernel      the device's runtime has no kernel for a CPU operator
        ├── PartitionMismatch  the CPU fallback set differs from what the case expects
        ├── QuantizationLoss   the quantized model itself is too far from eager (the model's
        │                      quantization, not the target)
        ├── BudgetExceeded     latency or memory over budget
        └── NotJudged          something that applies could not be judged (--hil-require)
"""

from __future__ import annotations

import errno
from typing import Any


class HilError(Exception):
    """Root of every error hil raises deliberately."""

    def __init__(self, message: str, *, fix: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.fix = fix

    def __str__(self) -> str:
        if self.fix:
            return f"{self.message}\n  fix: {self.fix}"
        return self.message


class UsageError(HilError):
    """The user asked for something that does not exist (a target, a recipe, an option value)."""


class DeviceSpecError(HilError):
    """A device file is malformed; the message names the file, the key and what was expected."""


class CaseError(HilError):
    """A suite case could not be built, or its inputs are malformed."""


class ExportError(HilError):
    """Lowering a model to a .pte failed; the message carries the exporter's own words."""


class ExporterIncomplete(ExportError):
    """The installed ExecuTorch lacks a part a recipe lowers with (a source build configured
    without CMSIS-NN's Python bindings). The environment's failure, not the model's: never
    remembered as an export failure, so a rebuilt ExecuTorch is tried at once."""


class ResourceExhausted(HilError):
    """This machine ran out of memory or disk while working (exporting, caching). Not the
    model's failure: it is never remembered as an export failure, and running again after
    freeing memory or disk may well succeed."""


class CacheError(HilError):
    """The artifact store could not be read or written."""


class ProgramUnreadable(HilError):
    """A .pte hil was asked to read is not one, is damaged, or is another ExecuTorch's."""


class TargetError(HilError):
    """Something went wrong on or with a target."""


class TargetUnavailable(TargetError):
    """The target cannot run on this machine (missing binary, board, toolchain)."""


class InfrastructureError(TargetError):
    """The target's infrastructure failed (link, emulator, board), not the model under test."""


class TransportError(InfrastructureError):
    """Bytes could not be moved (port closed, connection dropped)."""


class LinkLost(TransportError):
    """The link to a runner went away under a step (an SSH connection dropped, a serial port
    that disappeared): a target that can get it back reconnects once and does the step again."""


class ProtocolError(InfrastructureError):
    """The peer spoke, but not the protocol we expect (bad frame, wrong version)."""


class LinkTimeout(InfrastructureError):
    """The peer did not answer in time."""


class InfrastructureRecovered(InfrastructureError):
    """This attempt was lost to the infrastructure, and the target has recovered by itself
    (a board power-cycled, or another board of a pool taken): it stays in service, and the
    case may be retried. `recovery` says what was done."""

    def __init__(self, message: str, *, fix: str | None = None, recovery: str = "") -> None:
        super().__init__(message, fix=fix)
        self.recovery = recovery


def with_log_tail(text: str, log_tail: str, heading: str = "last log lines") -> str:
    """`text`, then the last lines a process printed, indented under `heading`."""
    if not log_tail:
        return text
    return text + f"\n  {heading}:\n" + "\n".join("    " + line for line in log_tail.splitlines())


class WithLogTail(HilError):
    """An error that carries the last lines its process printed, shown under its message."""

    heading = "last log lines"

    def __init__(self, message: str, *, fix: str | None = None, log_tail: str = "") -> None:
        super().__init__(message, fix=fix)
        self.log_tail = log_tail

    def __str__(self) -> str:
        return with_log_tail(super().__str__(), self.log_tail, self.heading)


class TargetCrash(WithLogTail, TargetError):
    """The runner crashed, faulted or asserted while working on the model."""


class RunRefused(WithLogTail, TargetError):
    """The runtime refused to run the program (a kernel's own check failed, execute() returned
    an error) while the runner stayed alive: the program's fault on this runtime (a kernel that
    does not take this dtype or memory layout), a test failure, not the lab's."""


class DeployError(TargetError):
    """The model could not be deployed (too large for the pool, disk full, no permission)."""


class PoolsTooSmall(DeployError):
    """The model cannot fit the runner's memory pools; refused before anything is sent.
    `shortfalls` names each pool, what the model needs and what the runner has."""

    def __init__(
        self, message: str, *, fix: str | None = None, shortfalls: tuple[Any, ...] = ()
    ) -> None:
        super().__init__(message, fix=fix)
        self.shortfalls = shortfalls


class TraceUnavailable(TargetError):
    """The device cannot record ExecuTorch's ETDump for an explaining run: a runner older than
    protocol 1.3 or built without ETDump, or no room in its pools for the debug buffer. The
    verdict stands; what explains it comes from elsewhere, and says so."""


class TargetStateError(TargetError):
    """A target method was called in a lifecycle state that does not allow it."""


class CheckFailed(HilError, AssertionError):
    """A verdict failed: the case ran, and its result is not acceptable."""


class OutputMismatch(CheckFailed):
    """The target's outputs are wrong: against eager PyTorch (a float program) or against the
    quantized PyTorch model it was compiled from (a quantized program), beyond the limits."""


class LoweringMismatch(OutputMismatch):
    """The lowered program's own reference (its TOSA graphs in Arm's reference model) computes
    otherwise than the model it was compiled from: the lowering is what to fix, not a device."""


class DeviceMismatch(OutputMismatch):
    """The device's outputs differ from its program's reference beyond the device's allowance:
    the device (its NPU command stream, kernel or driver) is what to fix, not the lowering."""


class MissingKernel(CheckFailed):
    """The program needs a CPU kernel the device's runtime lacks: it would not load there (or a
    runner's ExecuTorch build refused it, naming `operator`)."""

    def __init__(self, message: str, *, fix: str | None = None, operator: str = "") -> None:
        super().__init__(message, fix=fix)
        self.operator = operator


class QuantizationLoss(CheckFailed):
    """The quantized PyTorch model is too far from eager: the model quantizes badly."""


class NotJudged(CheckFailed):
    """A budget, counter or check that applies could not be judged (under --hil-require)."""


class PartitionMismatch(CheckFailed):
    """Operators ran on the CPU that the case expects on the accelerator, or the reverse."""


class BudgetExceeded(CheckFailed):
    """Latency or memory exceeded the budget."""


class ResultsBusy(HilError):
    """A results folder is held by another run that has not ended (its `.lock`): two runs
    writing one folder would mix their records, so the second is refused before any work.
    `holder` is what the holding run wrote into the lock (run id, pid, host, command)."""

    def __init__(
        self, message: str, *, fix: str | None = None, holder: dict[str, Any] | None = None
    ) -> None:
        super().__init__(message, fix=fix)
        self.holder = dict(holder or {})


class ReportError(HilError):
    """A results folder or report file cannot be read, is malformed, or fails its schema."""


class ReportAltered(ReportError):
    """A report, an input of a report, or a file a signed report vouches for no longer has the
    bytes that were sealed or signed."""


class SigningError(HilError):
    """A lab key cannot be loaded, does not match its public half, or cannot sign."""


class SignatureInvalid(SigningError):
    """A signature does not verify with the key given: not signed by it, or changed since."""


class ExplainError(HilError):
    """The first-divergent-operator explainer (hil.explain) cannot work on an artifact: its
    .pte or a side file it needs is missing or damaged, the program cannot be re-exported or
    run with its intermediates kept, or it has nothing to explain."""


class SdkError(HilError):
    """`hil sdk build` cannot make a bare-metal ExecuTorch for a board (hil.sdk)."""


class SdkSourceMissing(SdkError):
    """A source tree the build needs lacks a piece; the message names it, `fix` says how to
    get it. Raised before anything is configured, so nothing is half built."""


class SdkBuildFailed(SdkError):
    """A stage of the SDK build failed; `log_path` is its full log, kept beside the SDK."""

    def __init__(self, message: str, *, fix: str | None = None, log_path: str = "") -> None:
        super().__init__(message, fix=fix)
        self.log_path = log_path


class ExploreError(HilError):
    """`hil explore` cannot show a model: a bad .pte, an overlay file that does not fit it."""


class ArtifactMissing(ExploreError):
    """The case has no exported artifact for that target and recipe, and exporting was refused."""


class PortInUse(ExploreError):
    """The port the viewer should listen on (on 127.0.0.1) is taken by another process."""


class ViewerMissing(ExploreError):
    """Model Explorer is not installed in its tool venv, and installing it failed or was refused."""


class ViewerFailed(WithLogTail, ExploreError):
    """Model Explorer is installed but failed: it did not start, or a conversion failed.
    `log_tail` holds its last output lines."""

    heading = "last lines it printed"


_OUT_OF_MEMORY = (
    "out of memory",
    "can't allocate memory",
    "cannot allocate memory",
    "std::bad_alloc",
)
_OUT_OF_DISK = (errno.ENOSPC, errno.EDQUOT)


def resource_exhaustion(error: BaseException) -> str | None:
    """ "memory" or "disk space" when `error` (or what caused it) is the machine running out."""
    seen: BaseException | None = error
    while seen is not None:
        if isinstance(seen, MemoryError):
            return "memory"
        if isinstance(seen, OSError) and seen.errno == errno.ENOMEM:
            return "memory"
        if isinstance(seen, OSError) and seen.errno in _OUT_OF_DISK:
            return "disk space"
        text = str(seen).lower()
        if any(words in text for words in _OUT_OF_MEMORY):
            return "memory"
        if "no space left on device" in text:
            return "disk space"
        seen = seen.__cause__ or seen.__context__
    return None


# What fails as a test fails: the model or the runtime does not meet the bar (a verdict, an
# export, a deploy, a missing kernel, a test's own assert). Only these may be expected (xfail)
# or quarantined; a lost link, a crash or an unavailable target never is.
TEST_FAILURES: tuple[type[BaseException], ...] = (
    AssertionError,
    ExportError,
    DeployError,
    RunRefused,
)
