"""Protocol throughput over a pty, as a ratio of the pty's raw throughput, and the bytes a
redeploy of an unchanged model moves. One run prints both; goals: ratio >= 0.9, redeploy 0.

    raw       the same bytes through a pty with no protocol at all, in one process: pyserial
              writes them into the pty (1 MiB writes, as the client does) from one thread, the
              other end is drained in 1 MiB reads by another. No framing, no CRC, no acks, no
              second process: an upper bound the protocol cannot beat.
    protocol  the same pyserial link, the firmware runner on the other side (host build,
              echo engine: the transfer path without the program parse): LOAD_BEGIN, N bytes
              in CRC-checked chunks with their acks, LOAD_END with the runner's sha256 check.
              One runner for all runs; a first transfer warms its model pool.
    redeploy  SerialTarget on the vboard device deploys a small exported model twice; the
              second deploy must move nothing, as the runner counts it (LINK_STATS: model
              bytes that reached its pool from the link or a file, and models loaded).

Run: .venv/bin/python bench/protocol_throughput.py [--mib 64] [--repeats 5] [--record]
(`--record` writes the figures the docs quote to bench/figures.json).
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import os
import statistics
import sys
import threading
import time
import tty
from dataclasses import astuple
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))

from figures import record

from hil.case import case_from_module
from hil.device_search import find_devices
from hil.recipes import make_recipe
from hil.resources.virtual_boards import HostRunnerBoard
from hil.runner.client import LinkPolicy, RunnerClient
from hil.runner.messages import LinkStats
from hil.sdk import firmware
from hil.session import Session
from hil.targets.serial import SerialTarget
from hil.transports.serial_link import SerialLink

BLOCK = 1 << 20


def own_cpu() -> float:
    times = os.times()
    return times.user + times.system


def process_cpu(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def raw_run(data: bytes) -> tuple[float, float]:
    """Seconds, and CPU seconds of this process (writer and reader threads; the kernel's pty
    work is not counted), for `data` through a pty with nothing else on it."""
    master, slave = os.openpty()
    tty.setraw(slave)
    link = SerialLink(os.ttyname(slave)).open()
    received = 0

    def drain() -> None:
        nonlocal received
        while received < len(data):
            received += len(os.read(master, BLOCK))

    reader = threading.Thread(target=drain, name="raw-reader")
    try:
        cpu = own_cpu()
        started = time.perf_counter()
        reader.start()
        for offset in range(0, len(data), BLOCK):
            link.write(data[offset : offset + BLOCK])
        reader.join(timeout=120)
        seconds = time.perf_counter() - started
        assert received == len(data), f"the reader got {received} of {len(data)} bytes"
        return seconds, own_cpu() - cpu
    finally:
        link.close()
        os.close(slave)
        os.close(master)


class ProtocolLink:
    """One runner on a pty and a client on it; the first transfer warms the runner's model
    pool (its pages are touched once), then transfers are timed."""

    def __init__(self, runner: Path, warmup: bytes) -> None:
        self.board = HostRunnerBoard("bench", runner, ["--engine", "echo", "--quiet"])
        self.link = SerialLink(self.board.start()).open()
        self.client = RunnerClient(self.link, name="bench", policy=LinkPolicy(bytes_per_s=5e6))
        self.client.hello()
        self.client.load(warmup)

    def run(self, data: bytes) -> tuple[float, float]:
        """Seconds, and CPU seconds of client and runner (as raw_run counts them)."""
        digest = hashlib.sha256(data).hexdigest()
        retransmits = self.client.stats.retransmits
        pid = self.board.pid
        assert pid is not None
        cpu = own_cpu() + process_cpu(pid)
        started = time.perf_counter()
        outcome = self.client.load(data, sha256=digest)
        seconds = time.perf_counter() - started
        assert outcome.bytes_sent == len(data)
        assert self.client.stats.retransmits == retransmits
        return seconds, own_cpu() + process_cpu(pid) - cpu

    def close(self) -> None:
        self.link.close()
        self.board.stop()


def redeploy_bytes() -> tuple[int, LinkStats, LinkStats]:
    """(the model's size, and what reached the runner during the first deploy and during the
    redeploy, as the runner counted it)."""

    class Tiny(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.fc = torch.nn.Linear(64, 16)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return torch.relu(self.fc(x))

    torch.manual_seed(0)
    devices = find_devices().registry
    with Session(devices=devices) as session:
        case = case_from_module("bench-redeploy", Tiny(), torch.randn(1, 64))
        artifact = session.artifact(session.built(case), make_recipe("portable"))
        target = session.target("vboard")
        assert isinstance(target, SerialTarget)
        client = target.client
        before = client.link_stats()
        target.deploy(artifact)
        loaded = client.link_stats()
        target.deploy(artifact)
        again = client.link_stats()
        return artifact.size, _delta(loaded, before), _delta(again, loaded)


def _delta(after: LinkStats, before: LinkStats) -> LinkStats:
    return LinkStats(*(a - b for a, b in zip(astuple(after), astuple(before), strict=True)))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mib", type=int, default=64)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--record", action="store_true", help="write bench/figures.json")
    args = parser.parse_args()
    with contextlib.suppress(OSError):  # where allowed, other work on the machine yields to us
        os.nice(-10)
    runner = firmware.build(firmware.FirmwareConfig("host")).binary
    data = os.urandom(args.mib << 20)
    raw: list[tuple[float, float]] = []
    proto: list[tuple[float, float]] = []
    protocol = ProtocolLink(runner, os.urandom(len(data)))
    try:
        for i in range(args.repeats):  # interleaved, so a busy moment hits both alike
            raw.append(raw_run(data))
            proto.append(protocol.run(data[i:] + data[:i]))  # a new model each time
    finally:
        protocol.close()
    mib = len(data) / (1 << 20)
    raw_rate = len(data) / statistics.median(t for t, _ in raw) / 1e6
    proto_rate = len(data) / statistics.median(t for t, _ in proto) / 1e6
    pairs = [r / p for (r, _), (p, _) in zip(raw, proto, strict=True)]  # back to back
    raw_cpu = statistics.median(c for _, c in raw) / mib * 1e3
    proto_cpu = statistics.median(c for _, c in proto) / mib * 1e3
    size, first, again = redeploy_bytes()
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    print(
        f"payload: {args.mib} MiB, median of {args.repeats} interleaved runs each "
        f"(machine load average {load}; other work on the CPUs skews both)"
    )
    print("raw runs (MB/s):         " + " ".join(f"{len(data) / t / 1e6:.0f}" for t, _ in raw))
    print("protocol runs (MB/s):    " + " ".join(f"{len(data) / t / 1e6:.0f}" for t, _ in proto))
    print(f"raw pty throughput:      {raw_rate:8.1f} MB/s")
    print(f"protocol throughput:     {proto_rate:8.1f} MB/s")
    print("pair ratios:             " + " ".join(f"{x:.2f}" for x in pairs))
    print(
        f"protocol / raw:          {statistics.median(pairs):8.3f}   (median of pairs; goal >= 0.9)"
    )
    print(f"cpu per MiB, raw:        {raw_cpu:8.2f} ms   (writer + reader threads)")
    print(
        f"cpu per MiB, protocol:   {proto_cpu:8.2f} ms   (client + runner: CRC both ends, "
        "runner's sha256, copies)"
    )
    print(
        f"first deploy:            {first.model_bytes + first.file_bytes:8d} model bytes reached "
        f"the runner (the .pte is {size}), {first.loads} load, {first.frames_in} frames "
        "(counted by the runner)"
    )
    moved = again.model_bytes + again.file_bytes
    print(
        f"redeploy, unchanged:     {moved:8d} model bytes reached the runner, {again.loads} "
        f"loads, {again.frames_in} frames of {again.bytes_in} bytes (the hash check)"
        "   (goal 0 model bytes, counted by the runner)"
    )
    if args.record:
        command = " ".join(["bench/protocol_throughput.py", *sys.argv[1:]])
        ratio = round(statistics.median(pairs), 3)
        what = "runner protocol's throughput over the raw pty's (median of pairs)"
        record("protocol_throughput.ratio", ratio, "", what, command)
        what = "model bytes a redeploy of an unchanged model moves"
        record("protocol_throughput.redeploy_bytes", moved, "B", what, command)
    return 0


if __name__ == "__main__":
    sys.exit(main())
