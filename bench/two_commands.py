"""The README's two commands from a fresh clone: how long each takes and what each runs.

    .venv/bin/python bench/two_commands.py            # make test, then make suites (cold)
    .venv/bin/python bench/two_commands.py --ci       # .ci/run (make test + make compat) instead

Clones this checkout's HEAD into a new folder (nothing of this checkout's venv or cache is
shared), runs `make test` there (its installs included, as on a fresh machine that has the
Debian packages) or the whole `.ci/run`, then `make suites` on its cold cache, and prints each
command's wall time and pytest's counts. With `--record` the figures the getting-started page
quotes go to bench/figures.json. Run it with nothing else on the machine: the times are the
figures.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from figures import record

REPO = Path(__file__).resolve().parent.parent
_SUMMARY = re.compile(r"=+ (?P<counts>[^=]*?) in (?P<seconds>[\d.]+)s(?: \([^)]*\))? =+\s*$")


@dataclass(frozen=True)
class Command:
    name: str
    seconds: float
    status: int
    counts: dict[str, int]  # pytest's closing line, every run of the command summed

    def __str__(self) -> str:
        counts = ", ".join(f"{n} {what}" for what, n in self.counts.items())
        return f"{self.name}: exit {self.status}, {self.seconds:.0f} s, {counts}"


def counts_of(log: str) -> dict[str, int]:
    """pytest's closing lines ("=== 563 passed, 86 skipped in 1050.3s ===") summed over every
    pytest run in the log (.ci/run runs two)."""
    total: dict[str, int] = {}
    for line in log.splitlines():
        found = _SUMMARY.search(line)
        if not found:
            continue
        for part in found["counts"].split(","):
            number, _, what = part.strip().partition(" ")
            if number.isdigit():
                total[what] = total.get(what, 0) + int(number)
    return total


def run(name: str, command: list[str], clone: Path, log: Path) -> Command:
    start = time.monotonic()
    with log.open("w") as out:
        status = subprocess.run(command, cwd=clone, stdout=out, stderr=subprocess.STDOUT).returncode
    seconds = time.monotonic() - start
    return Command(name, seconds, status, counts_of(log.read_text(errors="replace")))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ci", action="store_true", help="run .ci/run instead of make test")
    parser.add_argument("--record", action="store_true", help="write bench/figures.json")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="hil-two-commands-"))
    clone = work / "hil"
    subprocess.run(["git", "clone", "-q", str(REPO), str(clone)], check=True)
    head = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], cwd=clone, capture_output=True, text=True
    ).stdout.strip()
    print(f"a fresh clone of {head} in {clone}")
    first = (
        run(".ci/run", [".ci/run"], clone, work / "ci.log")
        if args.ci
        else run("make test", ["make", "test"], clone, work / "test.log")
    )
    print(first)
    suites = run("make suites", ["make", "suites"], clone, work / "suites.log")
    print(suites)
    print(f"logs: {work}")
    if args.record:
        command = "bench/two_commands.py" + (" --ci" if args.ci else "")
        key = "ci" if args.ci else "make_test"
        record(
            f"two_commands.{key}_min",
            round(first.seconds / 60),
            "min",
            f"{first.name}, fresh clone, installs included",
            command,
        )
        for what, number in first.counts.items():
            record(f"two_commands.{key}_{what}", number, "tests", f"{first.name}: {what}", command)
        record(
            "two_commands.suites_min",
            round(suites.seconds / 60),
            "min",
            "make suites, fresh clone (venv made by the first command), cold cache",
            command,
        )
        for what, number in suites.counts.items():
            record(f"two_commands.suites_{what}", number, "checks", f"make suites: {what}", command)
    return first.status or suites.status


if __name__ == "__main__":
    sys.exit(main())
