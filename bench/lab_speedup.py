"""Speed-up of the operator suite on two virtual boards over one, through a real labgrid lab.

A virtual rack on loopback (labgrid coordinator, one exporter per board, ser2net, the host
runner on ptys) with two boards; one device file leases boards from it by tag. The same
command runs the default operator selection with one xdist worker (one board) and with two
(two boards), alternately, after a warm-up run that fills the artifact cache. Two racks:

    memory speed   the tests' boards: the host runner on a pty, bytes at memory speed. The
                   81 cases take about 5 s of board time in all, against some 10 s per
                   process of start-up (torch import, collection, lease): start-up bound,
                   and a second worker adds a start-up of its own.
    115200 baud    the same boards with their console UART at the speed the exporter
                   declares (8N1, 11.5 KB/s each way), as a Cortex-M board's: the suite's
                   1.4 MB of models, inputs and outputs make it board bound, as on a rack.

Printed: each run's wall time and pytest's session time, the best of each, the ratios (goal:
at least 1.6x on two cores, for the board-bound rack), and the machine's load beside them: on
a shared machine the ratio moves with what else runs.

What the pacing makes certain, and what is measured: on the 115200-baud rack the UARTs are
paced, so the bytes a run moves over them (models, inputs, outputs: from the run's records and
arrays) take a known time, X s, which two boards split by construction. The bench prints X, the
speed-up that splitting X alone would give, and the rest of each run (wall minus its share of
X: host work, start-up, leases, scheduling), which nothing guarantees, with its own ratio.

Run: .venv/bin/python bench/lab_speedup.py [--repeats 1] [-k EXPR] [--only fast|uart] [--record]
(`--record` writes the figures the docs quote to bench/figures.json).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))

from figures import record

from hil.lab.virtual_rack import VirtualRack
from hil.sdk import firmware

REPO = Path(__file__).resolve().parents[1]
GOAL = 1.6
UART_BAUD = 115200
# name, the boards' baud rate (None: memory speed), link keys for the device file
RACKS: dict[str, tuple[int | None, dict[str, Any]]] = {
    "fast": (None, {}),
    "uart": (UART_BAUD, {"bytes_per_s": 10000, "reply_timeout_s": 5.0}),
}
TITLES = {"fast": "memory-speed boards", "uart": f"{UART_BAUD}-baud boards"}


def rack_device(folder: Path, coordinator: str, link: dict[str, Any]) -> None:
    """devices/vboard.yaml (recipes, latency, link), its boards leased from the rack."""
    spec = yaml.safe_load((REPO / "devices" / "vboard.yaml").read_text())
    connection = {
        k: v for k, v in spec["connection"].items() if k not in ("virtual", "runner_args")
    }
    connection.update(link)
    connection["labgrid"] = {"coordinator": coordinator, "tags": {"board": "vboard"}, "wait_s": 300}
    spec.update(
        name="rack",
        connection=connection,
        description="vboard's runner on boards of a virtual labgrid rack",
    )
    (folder / "rack.yaml").write_text(yaml.safe_dump(spec))


def run_suite(workers: int, devices: Path, results: Path, select: list[str]) -> tuple[float, float]:
    """(wall seconds, pytest's session seconds) of one run; exits if the run fails."""
    command = [
        sys.executable,
        "-m",
        "pytest",
        "suites/operators",
        "--target=rack",
        "-n",
        str(workers),
        "-q",
        "-p",
        "no:cacheprovider",
        "-p",
        "no:labgrid",
        "-W",
        "ignore",
        f"--hil-devices={REPO / 'devices'}",
        f"--hil-devices={devices}",
        f"--hil-results-dir={results}",
        *select,
    ]
    started = time.monotonic()
    done = subprocess.run(command, cwd=REPO, capture_output=True, text=True)
    wall = time.monotonic() - started
    summary = done.stdout.strip().splitlines()[-1] if done.stdout.strip() else ""
    if done.returncode != 0:
        sys.exit(
            f"the run with {workers} worker(s) failed:\n{done.stdout[-3000:]}{done.stderr[-2000:]}"
        )
    found = re.search(r" in ([0-9.]+)s", summary)
    return wall, float(found.group(1)) if found else wall


def paced_bytes(results: Path) -> int:
    """Bytes a run moved over the boards' lines: each deployed model, and each check's inputs
    and outputs (framing, a few percent, is left out: the figure is a lower bound)."""
    moved = 0
    for line in (results / "records.jsonl").read_text().splitlines():
        if line.strip():
            moved += int(json.loads(line).get("deploy_bytes") or 0)
    for arrays in (results / "arrays").glob("*.npz"):
        with np.load(arrays) as saved:
            moved += sum(saved[k].nbytes for k in saved.files if k.startswith(("input", "output")))
    return moved


def report_pacing(baud: int, results: Path, one: float, two: float) -> tuple[float, float]:
    """What the pacing decides (the UART time, split by two boards) and what it does not; returns
    the speed-up of the pacing alone and the rest's, as printed."""
    moved = paced_bytes(results)
    uart_s = moved / (baud / 10)  # 8N1: ten bits a byte
    print(
        f"    paced by construction: {moved / 1e6:.2f} MB over the UARTs = {uart_s:.1f} s at "
        f"{baud / 10 / 1000:.1f} KB/s; two boards split it, so that part alone gives "
        f"{one / (one - uart_s / 2):.2f}x"
    )
    rest_one, rest_two = one - uart_s, two - uart_s / 2
    print(
        f"    measured beyond the pacing: the rest of each run (host work, start-up, leases) "
        f"{rest_one:.1f} s on one board, {rest_two:.1f} s on two ({rest_one / rest_two:.2f}x)"
    )
    return round(one / (one - uart_s / 2), 2), round(rest_one / rest_two, 2)


def measure(
    name: str, runner: Path, folder: Path, repeats: int, warm_up: bool, select: list[str]
) -> tuple[float, tuple[float, float] | None]:
    """Times of 1 and 2 boards on one rack; returns the wall-time ratio of the best runs, and on
    a paced rack the pacing's and the rest's ratios (report_pacing)."""
    baud, link = RACKS[name]
    devices = folder / name / "devices"
    devices.mkdir(parents=True)
    print(f"  {TITLES[name]}:")
    with VirtualRack(
        folder / name, runner, ["vb1", "vb2"], {"board": "vboard"}, baud=baud
    ).start() as rack:
        rack_device(devices, rack.coordinator, link)
        if warm_up:
            wall, session = run_suite(2, devices, folder / f"{name}-warm", select)
            print(
                f"    warm-up, 2 boards (fills the cache) {wall:7.1f} s wall {session:7.1f} s "
                "in pytest"
            )
        times: dict[int, list[tuple[float, float]]] = {1: [], 2: []}
        for repeat in range(repeats):
            for workers in (1, 2):
                load = os.getloadavg()[0]
                wall, session = run_suite(
                    workers, devices, folder / f"{name}-{repeat}-{workers}", select
                )
                times[workers].append((wall, session))
                print(
                    f"    {workers} board{'s' if workers > 1 else ' '}, {workers} xdist "
                    f"worker{'s' if workers > 1 else ' '}      {wall:7.1f} s wall "
                    f"{session:7.1f} s in pytest   load {load:.1f}"
                )
    one = min(t[0] for t in times[1]), min(t[1] for t in times[1])
    two = min(t[0] for t in times[2]), min(t[1] for t in times[2])
    ratio = one[0] / two[0]
    print(
        f"    speed-up on two boards: {ratio:.2f}x wall, {one[1] / two[1]:.2f}x in pytest "
        f"(best of {repeats})"
    )
    paced = None
    if baud is not None:
        paced = report_pacing(baud, folder / f"{name}-0-1", one[0], two[0])
    return ratio, paced


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=1, help="timed runs per board count")
    parser.add_argument("-k", dest="select", help="a pytest -k selection of the suite")
    parser.add_argument("--only", choices=sorted(RACKS), help="one of the two racks")
    parser.add_argument("--record", action="store_true", help="write bench/figures.json")
    args = parser.parse_args()
    select = ["-k", args.select] if args.select else []
    os.environ.setdefault("HIL_FIRMWARE_DIR", str(REPO / ".hil" / "firmware"))
    runner = firmware.build(firmware.FirmwareConfig("host")).binary
    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True, text=True
    ).stdout.strip()
    print(
        f"operator suite on a virtual labgrid rack, 1 board vs 2 (commit {commit}, "
        f"{platform.machine()}, {os.cpu_count()} cores, runner {runner.parent.parent.name[:12]})"
    )
    ratios: dict[str, float] = {}
    paced: dict[str, tuple[float, float] | None] = {}
    with tempfile.TemporaryDirectory(prefix="hil-lab-bench-") as tmp:
        for index, name in enumerate([args.only] if args.only else list(RACKS)):
            ratios[name], paced[name] = measure(
                name, runner, Path(tmp), args.repeats, index == 0, select
            )
    if "uart" in ratios:
        verdict = "ok" if ratios["uart"] >= GOAL else "BELOW GOAL"
        print(
            f"  board-bound speed-up ({TITLES['uart']}): {ratios['uart']:.2f}x "
            f"(goal: at least {GOAL}x) {verdict}"
        )
    if "fast" in ratios:
        print(
            f"  start-up-bound speed-up ({TITLES['fast']}): {ratios['fast']:.2f}x (no goal: "
            "each worker's start-up outweighs the suite's board time)"
        )
    if args.record:
        record_figures(ratios, paced, " ".join(["bench/lab_speedup.py", *sys.argv[1:]]))


def record_figures(
    ratios: dict[str, float], paced: dict[str, tuple[float, float] | None], command: str
) -> None:
    """The speed-ups (two boards over one) the docs quote, of the racks this run measured."""
    figures: list[tuple[str, float, str]] = []
    pacing = paced.get("uart")
    if "uart" in ratios and pacing is not None:
        uart = TITLES["uart"]
        figures += [
            ("uart_speedup", ratios["uart"], f"operator suite on {uart}"),
            ("uart_pacing_speedup", pacing[0], f"{uart}: splitting the paced UART time alone"),
            ("uart_rest_speedup", pacing[1], f"{uart}: the rest of a run (host, start-up, leases)"),
        ]
    if "fast" in ratios:
        figures.append(("fast_speedup", ratios["fast"], f"operator suite on {TITLES['fast']}"))
    for name, value, what in figures:
        record(f"lab_speedup.{name}", round(value, 2), "x", f"two boards over one, {what}", command)


if __name__ == "__main__":
    main()
