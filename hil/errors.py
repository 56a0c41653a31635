"""One exception tree, rooted at HilError.

Every failure hil reports on purpose is a HilError subclass whose message says what happened
and whose `fix` says what to do about it. The subtrees tell the plugin how to classify a case:

    HilError
    ├── UsageError            bad option, unknown target or recipe
    ├── DeviceSpecError       malformed devices/*.yaml (names the file and the key)
    ├── CaseError             a suite case that cannot be built or has malformed inputs
    ├── ExportError           PyTorch -> .pte failed (carries the exporter's message)
    ├── CacheError            the artifact store could not be read or written
    ├── ReportError           a results folder or report is unreadable or fails its schema
    ├── TargetError
    │   ├── TargetUnavailable  the target cannot exist here (missing tool): skip, with the fix
    │   ├── InfrastructureError  lost link, hung emulator, dead board: not the model's fault
    │   │   ├── TransportError / ProtocolError / LinkTimeout
    │   │   └── InfrastructureRecovered  the attempt was lost, the target recovered (retry it)
    │   ├── TargetCrash        the runner faulted or asserted while running the model
    │   ├── DeployError        the model could not be put on the target
    │   └── TargetStateError   a lifecycle method called in the wrong state (a bug in the caller)
    └── CheckFailed (also AssertionError, so pytest reports a failure, not an error)
        ├── OutputMismatch     outputs disagree with eager PyTorch beyond tolerance
        ├── PartitionMismatch  the CPU fallback set differs from what the case expects
        └── BudgetExceeded     latency or memory over budget
"""

from __future__ import annotations


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


class CacheError(HilError):
    """The artifact store could not be read or written."""


class TargetError(HilError):
    """Something went wrong on or with a target."""


class TargetUnavailable(TargetError):
    """The target cannot run on this machine (missing binary, board, toolchain)."""


class InfrastructureError(TargetError):
    """The target's infrastructure failed (link, emulator, board), not the model under test."""


class TransportError(InfrastructureError):
    """Bytes could not be moved (port closed, connection dropped)."""


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


class TargetCrash(TargetError):
    """The runner crashed, faulted or asserted while working on the model."""

    def __init__(self, message: str, *, fix: str | None = None, log_tail: str = "") -> None:
        super().__init__(message, fix=fix)
        self.log_tail = log_tail

    def __str__(self) -> str:
        text = super().__str__()
        if self.log_tail:
            text += "\n  last log lines:\n" + "\n".join(
                "    " + line for line in self.log_tail.splitlines()
            )
        return text


class RunRefused(TargetCrash):
    """The runtime refused to run the model (a kernel's check failed, execute() returned an
    error) and the runner is still alive. A TargetCrash for the session's bookkeeping (the
    target starts afresh), named apart so a report can tell it from a fault."""


class DeployError(TargetError):
    """The model could not be deployed (too large for the pool, disk full, no permission)."""


class MissingOperator(DeployError):
    """The runner's ExecuTorch build has no kernel for an operator the model calls."""

    def __init__(self, message: str, *, operator: str, fix: str | None = None) -> None:
        super().__init__(message, fix=fix)
        self.operator = operator


class TargetStateError(TargetError):
    """A target method was called in a lifecycle state that does not allow it."""


class CheckFailed(HilError, AssertionError):
    """A verdict failed: the case ran, and its result is not acceptable."""


class OutputMismatch(CheckFailed):
    """Outputs disagree with the eager PyTorch reference beyond the tolerance."""


class PartitionMismatch(CheckFailed):
    """Operators ran on the CPU that the case expects on the accelerator, or the reverse."""


class BudgetExceeded(CheckFailed):
    """Latency or memory exceeded the budget."""


class ReportError(HilError):
    """A results folder or report file cannot be read, is malformed, or fails its schema."""
