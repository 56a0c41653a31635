"""What an FVP prints on its standard output, read as facts (pure functions: text -> data).

The lines this module knows, as Arm's FVPs print them (seen in Arm's documentation and in
published FVP logs; the fake FVP in tests/fakes/fvp prints the same, see its CONTRACT.md):

    Fast Models [11.27.19 (Jun 10 2024)]                  banner, and all `--version` prints
    telnetterminal0: Listening for serial connection on port 5000
    Info: Simulation is stopping. Reason: CPU time has been exceeded.      (--timelimit)
    Info: Simulation is stopping. Reason: Cycle limit has been exceeded.   (--cyclelimit)
    Info: Simulation is stopping. Reason: Simulated time has been exceeded. (--simlimit)
    Info: /OSCI/SystemC: Simulation stopped by user.       the simulation ended
    --- <model> statistics: ------------------------      the --stat block, ended by dashes
    Simulated time                          : 0.066055s
    cpu0                                    :   7.08 MIPS (     1171181 Inst)

Licence failures are recognised by the words licensing systems use (FlexNet's "Licensing
error", "license checkout", ARMLMD_LICENSE_FILE, user-based licensing) rather than by one
exact sentence: Arm's wording differs between FVP releases and licence back-ends.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

BANNER = re.compile(r"^Fast Models \[([^\]]+)\]", re.MULTILINE)
TERMINAL = re.compile(r"^(\S+): Listening for serial connection on port (\d+)", re.MULTILINE)
STOPPING = re.compile(r"^Info: Simulation is stopping\. Reason: (.+?)\.?\s*$", re.MULTILINE)
STOPPED = re.compile(r"^Info: /OSCI/SystemC: Simulation stopped by user", re.MULTILINE)
STAT_HEAD = re.compile(r"^--- (.+?) statistics: -+\s*$", re.MULTILINE)
STAT_LINE = re.compile(r"^(.+?)\s+:\s+(.+?)\s*$")
MIPS = re.compile(r"([\d.]+) MIPS \(\s*(\d+) Inst\)")
SECONDS = re.compile(r"^([\d.]+)s$")
LICENCE = re.compile(
    r"licen[cs]e (check ?out|checkout|server|file)|licensing error|no (valid )?licen[cs]e|"
    r"ARMLMD_LICENSE_FILE|user[- ]based licen[cs]ing|licen[cs]e (has )?(expired|denied)",
    re.IGNORECASE,
)
TIME_LIMIT_REASON = "CPU time has been exceeded"


def version(text: str) -> str | None:
    """ "11.27.19 (Jun 10 2024)" from a banner, or None."""
    found = BANNER.search(text)
    return found.group(1) if found else None


def terminal_port(text: str, terminal: str = "telnetterminal0") -> int | None:
    """The TCP port the FVP offers for `terminal` (it moves up from start_port when taken)."""
    for name, port in TERMINAL.findall(text):
        if name == terminal:
            return int(port)
    return None


def stop_reason(text: str) -> str | None:
    """Why the FVP stopped the simulation by itself ("CPU time has been exceeded"), if it did."""
    found = STOPPING.search(text)
    return found.group(1) if found else None


def hit_time_limit(text: str) -> bool:
    return stop_reason(text) == TIME_LIMIT_REASON


def simulation_ended(text: str) -> bool:
    return STOPPED.search(text) is not None


def licence_problem(text: str) -> str | None:
    """The lines that speak of a licence failure, joined; None when there are none."""
    lines = [line.strip() for line in text.splitlines() if LICENCE.search(line)]
    return "\n".join(lines) if lines else None


@dataclass(frozen=True)
class FvpStats:
    """The --stat block the FVP prints when it exits."""

    model: str
    simulated_s: float | None = None
    wall_s: float | None = None
    user_s: float | None = None
    system_s: float | None = None
    instructions: dict[str, int] = field(default_factory=dict)  # per CPU
    mips: dict[str, float] = field(default_factory=dict)

    def describe(self) -> str:
        parts = [f"{self.model}:"]
        if self.simulated_s is not None:
            parts.append(f"simulated {self.simulated_s:.6f} s")
        if self.wall_s is not None:
            parts.append(f"in {self.wall_s:.2f} s wall")
        parts += [f"{cpu} {count} instructions" for cpu, count in self.instructions.items()]
        return " ".join(parts)


def stats(text: str) -> FvpStats | None:
    """The last --stat block in `text`, or None."""
    heads = list(STAT_HEAD.finditer(text))
    if not heads:
        return None
    head = heads[-1]
    times: dict[str, float] = {}
    instructions: dict[str, int] = {}
    mips: dict[str, float] = {}
    for line in text[head.end() :].splitlines():
        if line.startswith("---"):
            break
        found = STAT_LINE.match(line.strip())
        if not found:
            continue
        key, value = found.group(1).strip(), found.group(2)
        seconds = SECONDS.match(value)
        rate = MIPS.search(value)
        if seconds:
            times[key] = float(seconds.group(1))
        elif rate and key != "Total":
            mips[key] = float(rate.group(1))
            instructions[key] = int(rate.group(2))
    return FvpStats(
        model=head.group(1),
        simulated_s=times.get("Simulated time"),
        wall_s=times.get("Wall time"),
        user_s=times.get("User time"),
        system_s=times.get("System time"),
        instructions=instructions,
        mips=mips,
    )
