"""The FVP command line for one runner: parameters per platform, and the semihosting limit.

The runner's link is UART0, reached through the FVP's telnet terminal 0 in raw mode (bytes
pass unchanged; telnet mode would insert negotiation bytes and quit on a client that does not
answer them) on a TCP port the FVP announces. UART0 never ends the simulation on an EOT byte
(the link is binary), semihosting serves the runner's log console and command line, and the
NPU gets the device's MAC count. `--timelimit` makes a forgotten FVP stop itself.

The semihosting command line (the runner's argv) is checked against the FVP's limit when the
device file is read (hil.fvp.config), before anything starts.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

from hil.fvp.config import SEMIHOSTING_CMDLINE_MAX, FvpConfig, semihosting_cmd_line

__all__ = ["SEMIHOSTING_CMDLINE_MAX", "FvpCommand", "build_command", "semihosting_cmd_line"]


@dataclass(frozen=True)
class FvpCommand:
    argv: tuple[str, ...]
    cmd_line: str
    port: int  # the telnet terminal's start port (the FVP may take the next free one)

    def render(self) -> str:
        return " ".join(_quote(a) for a in self.argv)


def build_command(
    config: FvpConfig, binary: Path, application: Path, workdir: Path, port: int
) -> FvpCommand:
    """The argv that starts `binary` on `application` with `workdir` as semihosting folder."""
    p = config.platform
    cmd_line = semihosting_cmd_line(config)
    params: list[tuple[str, str]] = [
        (p.num_macs_param, str(config.num_macs)),
        *p.quiet_params,
        (f"{p.terminal(0)}.start_telnet", "0"),
        (f"{p.terminal(0)}.mode", "raw"),
        (f"{p.terminal(0)}.start_port", str(port)),
        (f"{p.uart(0)}.shutdown_on_eot", "0"),
        (p.semihosting("enable"), "1"),
        (p.semihosting("cwd"), str(workdir)),
        (p.semihosting("cmd_line"), cmd_line),
    ]
    if config.fast:
        params.append((p.npu_args_param, "--fast"))
    params += [(k, v) for k, v in config.params.items() if k != p.num_macs_param]
    argv = [str(binary)]
    for name, value in params:
        argv += ["-C", f"{name}={value}"]
    argv += ["-a", str(application), "--timelimit", str(math.ceil(config.time_limit_s))]
    if config.stat:
        argv.append("--stat")
    return FvpCommand(tuple(argv), cmd_line, port)


def _quote(arg: str) -> str:
    if arg and all(c.isalnum() or c in "-_./=:,+@" for c in arg):
        return arg
    return "'" + arg.replace("'", "'\\''") + "'"
