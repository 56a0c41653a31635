"""An FVP as a runner site: the running FvpProcess, and what only it can tell when a link breaks
(its time limit, a licence refused, the simulation ended)."""

from __future__ import annotations

from pathlib import Path

from hil.errors import HilError, InfrastructureError
from hil.fvp import locate, output
from hil.fvp.errors import FvpExited, FvpLicenceError, FvpTimeLimit
from hil.fvp.process import FvpProcess
from hil.settings.fvp import FvpSettings


class FvpSite:
    restart_note = "the next case boots a fresh FVP"
    log_label = "FVP log"

    def __init__(self, process: FvpProcess, settings: FvpSettings) -> None:
        self.process = process
        self.settings = settings
        self.name = settings.device

    @property
    def log_path(self) -> Path | None:
        return self.process.log_path

    def log_tail(self, lines: int = 30) -> str:
        return self.process.tail(lines)

    def _ended(self) -> bool:
        return self.process.wait_exit(3.0)  # a link that broke because the FVP ended: let it

    def gone(self) -> str | None:
        if not self._ended():
            return None
        if output.simulation_ended(self.process.text()) and self.process.returncode == 0:
            return "it ended the simulation (semihosting exit: an abort, an assert or exit)"
        return f"the FVP {self.process.exit_description()}"

    def explain(self, doing: str, error: InfrastructureError) -> HilError | None:
        process, where = self.process, f"FVP log: {self.process.log_path}"
        if not self._ended():  # the FVP runs on: the runner is silent or the link is broken
            return type(error)(
                f"{error.message} (while {doing}; the FVP still runs; {where})", fix=error.fix
            )
        text = process.text()
        if output.hit_time_limit(text):
            return FvpTimeLimit(
                f"{self.name}: the FVP stopped at its --timelimit of "
                f"{self.settings.time_limit_s:.0f} s while {doing}; {where}",
                fix="raise connection.time_limit_s, or find what hangs (the runner's last log "
                "lines are in the FVP log)",
            )
        problem = output.licence_problem(text)
        if problem:
            return FvpLicenceError(
                f"{self.name}: the FVP lost its licence: {problem}", fix=locate.LICENCE_FIX
            )
        if output.simulation_ended(text) and process.returncode == 0:
            return None  # the runner ended it: a crash (gone() says how)
        return FvpExited(
            f"{self.name}: the FVP {process.exit_description()} while {doing}; {where}\n"
            + process.tail(8),
            fix="run the command at the top of the FVP log by hand to see why",
        )
