"""hil's side of the Vulkan worker (hil.vgf.worker): requests with deadlines, typed failures.

    worker hangs (no answer by the deadline)   LinkTimeout: killed, its log's tail quoted
    worker dies (a crash in the Vulkan stack)  TargetCrash: exit status and its log's tail
    the runner refuses a request               RunRefused: the runner's own words
    the validation layer reports an error      TargetCrash quoting the message (invalid Vulkan
                                               use can make any result wrong)

The validation layer writes its reports to a file of the stack's (hil.vgf.environment); after
each request the client reads what was added. One report is known and allowed, with its
reason in KNOWN_REPORTS: it comes from the emulation layer's own compute shaders, whatever the
program, so it says nothing of the program or its lowering.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import select
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from hil.errors import LinkTimeout, RunRefused, TargetCrash, with_log_tail
from hil.processes import stop_process
from hil.vgf.environment import Stack
from hil.vgf.worker import read_frame, write_frame

LOAD_TIMEOUT_S = 300.0  # building a scenario's pipeline: about a second on lavapipe, minutes
RUN_TIMEOUT_S = 120.0  # for a large graph under load; a run: milliseconds
# Validation reports that are the emulation layer's and not the program's, by VUID.
KNOWN_REPORTS = {
    "VUID-VkComputePipelineCreateInfo-layout-00703": (
        "the ML emulation layer 0.11.0's own compute pipelines declare push constants beyond "
        "their pipeline layout's range (reported at scenario load for convolution, add and "
        "sigmoid graphs alike, under Debian 12's validation layer 1.3.239); the emulation "
        "layer's doing, not the program's"
    ),
}
REPORT_START = re.compile(r"^(VUID-\S+|UNASSIGNED-\S+)\(ERROR")


@dataclass
class ValidationReports:
    """What the validation layer wrote since the last look, split into known and new."""

    log: Path
    offset: int = 0
    allowed: dict[str, int] = field(default_factory=dict)

    def new(self) -> list[str]:
        """The reports added since the last call that KNOWN_REPORTS does not allow."""
        try:
            with self.log.open("rb") as file:
                file.seek(self.offset)
                text = file.read().decode(errors="replace")
                self.offset = file.tell()
        except FileNotFoundError:
            return []
        found = []
        for report in _reports(text):
            vuid = report.split("(", 1)[0]
            if vuid in KNOWN_REPORTS:
                self.allowed[vuid] = self.allowed.get(vuid, 0) + 1
            else:
                found.append(report)
        return found


def _reports(text: str) -> list[str]:
    """Each report: its first line and the lines up to the next report."""
    reports: list[list[str]] = []
    for line in text.splitlines():
        if REPORT_START.match(line):
            reports.append([line])
        elif reports and line.strip():
            reports[-1].append(line.strip())
    return ["\n".join(r) for r in reports]


class VgfWorker:
    """One worker process; `request` answers or raises a typed HilError."""

    def __init__(self, stack: Stack, log_path: Path) -> None:
        self.stack = stack
        self.log_path = log_path
        self.reports = ValidationReports(stack.validation_log)
        self.logger = logging.getLogger("hil.vgf.client")
        self._process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        with self.log_path.open("ab") as log:
            self._process = subprocess.Popen(
                [sys.executable, "-m", "hil.vgf.worker"],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=log,
                env={**os.environ, **self.stack.env},
            )

    @property
    def alive(self) -> bool:
        return self._process is not None and self._process.poll() is None

    def request(self, what: str, verb: str, *args: Any, timeout_s: float = RUN_TIMEOUT_S) -> Any:
        """Send one request; `what` names it in errors ("running delegate_0")."""
        process = self._process
        if process is None or process.stdin is None or process.stdout is None:
            raise TargetCrash(f"{what}: the Vulkan worker is not running")
        try:
            write_frame(process.stdin, (verb, *args))
        except (BrokenPipeError, OSError) as e:
            raise self._died(what) from e
        answer = self._answer(process.stdout, what, timeout_s)
        self._check_validation(what)
        status, value = answer
        if status == "error":
            raise RunRefused(
                f"{what}: the scenario runner refused it: {value}",
                fix="the ML emulation layer cannot run this graph as converted; the worker's "
                f"log says more ({self.log_path})",
                log_tail=self.log_tail(),
            )
        return value

    def _answer(self, stream: IO[bytes], what: str, timeout_s: float) -> tuple[str, Any]:
        ready, _, _ = select.select([stream], [], [], timeout_s)
        if not ready:
            tail = self.log_tail()
            self.stop()
            raise LinkTimeout(
                with_log_tail(
                    f"{what}: the scenario runner did not answer in {timeout_s:g} s "
                    "(a hung Vulkan device or emulation layer); the worker was killed",
                    tail,
                ),
                fix=f"see the worker's log ({self.log_path}); the next case starts a new worker",
            )
        answer = read_frame(stream)
        if answer is None:
            raise self._died(what)
        return answer  # type: ignore[no-any-return]

    def _died(self, what: str) -> TargetCrash:
        process = self._process
        code = process.wait(timeout=5) if process is not None else None
        signal = f"signal {-code}" if code is not None and code < 0 else f"exit {code}"
        return TargetCrash(
            f"{what}: the Vulkan worker died ({signal}): a crash in the scenario runner, the "
            "emulation layer or the Vulkan driver",
            fix=f"see the worker's log ({self.log_path}); the next case starts a new worker",
            log_tail=self.log_tail(),
        )

    def _check_validation(self, what: str) -> None:
        reports = self.reports.new()
        if reports:
            more = f" (and {len(reports) - 1} more)" if len(reports) > 1 else ""
            raise TargetCrash(
                f"{what}: the Vulkan validation layer reported an error{more}: {reports[0][:1500]}",
                fix="invalid Vulkan use can make any result wrong: the scenario runner, the ML "
                f"emulation layer or the driver misused the API; all reports: {self.reports.log}",
            )

    def log_tail(self, lines: int = 12) -> str:
        try:
            text = self.log_path.read_text(errors="replace")
        except OSError:
            return ""
        kept = [line for line in text.splitlines() if line.strip()]
        return "\n".join(kept[-lines:])

    def stop(self) -> None:
        process, self._process = self._process, None
        if process is None:
            return
        if process.stdin is not None:
            with contextlib.suppress(OSError):
                process.stdin.close()
        stop_process(process, grace_s=5.0, ask=False)
        if process.stdout is not None:
            process.stdout.close()
