"""`selftest`: bring-up checks of a runner's link, through the real protocol.

    handshake        versions, build id, clock, pools
    chunked transfer a random "model" larger than one frame, hash-checked by the runner;
                     sent again, it must move 0 bytes (the runner says it holds it)
    echo integrity   random payloads of awkward sizes come back byte-exact (ECHO), and, on the
                     echo engine, a tensor set as input comes back as the output of a run
    throughput       bytes per second of model transfer and of echo round trips

Meant for a new board (or QEMU) running the echo engine; on a runner with the ExecuTorch
engine the transfer still runs (the runner verifies the hash, then refuses the bytes as a
program, which is the expected answer) and the engine round trip is skipped.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from hil.errors import DeployError, HilError
from hil.runner import messages as m
from hil.runner.client import RunnerClient


@dataclass(frozen=True)
class Step:
    name: str
    ok: bool
    detail: str
    seconds: float


@dataclass
class SelftestReport:
    runner: str
    steps: list[Step] = field(default_factory=list)
    rates: dict[str, float] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return bool(self.steps) and all(s.ok for s in self.steps)

    def render(self) -> str:
        lines = [f"selftest of {self.runner}"]
        for s in self.steps:
            mark = "ok  " if s.ok else "FAIL"
            lines.append(f"  {mark} {s.name:<18} {s.seconds:7.3f} s  {s.detail}")
        for name, rate in self.rates.items():
            lines.append(f"  {name}: {rate / 1024:.1f} KiB/s")
        lines.append("PASS" if self.ok else "FAIL")
        return "\n".join(lines)


def _step(report: SelftestReport, name: str, check: Callable[[], str]) -> bool:
    started = time.monotonic()
    try:
        detail, ok = check(), True
    except (HilError, AssertionError) as e:
        detail, ok = f"{type(e).__name__}: {e}", False
    report.steps.append(Step(name, ok, detail, time.monotonic() - started))
    return ok


def selftest(client: RunnerClient, *, seed: int = 0, echo_budget: int = 32768) -> SelftestReport:
    """Run the bring-up checks; `echo_budget` caps the bytes echoed (slow emulated UARTs)."""
    rng = random.Random(seed)
    report = SelftestReport(runner=client.name)

    def handshake() -> str:
        info = client.hello()
        report.runner = f"{client.name} ({info.build_id}, {info.platform})"
        pools = ", ".join(f"{k} {v // 1024} KiB" for k, v in info.pools.items())
        return (
            f"protocol {info.protocol[0]}.{info.protocol[1]}, engine {info.engine_name}, "
            f"runtime {info.runtime_version}, clock {info.clock_hz} Hz, max frame "
            f"{info.max_payload} B, pools: {pools}"
        )

    if not _step(report, "handshake", handshake):
        return report
    info = client.info
    assert info is not None

    def transfer() -> str:
        size = int((info.max_payload - 8) * 2.5)  # three chunks, the last one partial
        data = rng.randbytes(size)
        started = time.monotonic()
        note = ""
        try:
            first = client.load(data)
            assert first.bytes_sent == size, f"sent {first.bytes_sent} of {size} bytes"
        except DeployError as e:
            if info.engine != m.ENGINE_EXECUTORCH or "hash" in e.message:
                raise
            note = " (refused as a program after its hash checked out, as expected)"
        report.rates["model transfer"] = size / (time.monotonic() - started)
        if not note:
            again = client.load(data)
            assert again.bytes_sent == 0, f"a held model was sent again ({again.bytes_sent} B)"
            note = "; sent again: 0 bytes"
        return f"{size} bytes in {-(-size // (info.max_payload - 8))} chunks{note}"

    def echo() -> str:
        sizes = [1, 2, 3, 7, 64, 255, 256, 1000, min(info.max_payload, 4096)]
        for size in sizes:
            payload = rng.randbytes(size)
            back = client.echo(payload)
            assert back == payload, f"ECHO of {size} bytes came back different"
        detail = f"{len(sizes)} payloads byte-exact"
        if info.engine == m.ENGINE_ECHO:
            values = [rng.uniform(-1e3, 1e3) for _ in range(97)]
            x = np.array(values, dtype=np.float32).reshape(97, 1)
            spec, data = m.from_numpy(x)
            client.set_input(0, spec, data)
            times = client.run(1, 3, 3, 0.0, 1.0)
            y = client.get_output(0)
            assert np.array_equal(x, y), "the engine's output differs from its input"
            detail += f"; engine round trip exact ({len(times.ticks)} timed runs)"
        return detail

    def throughput() -> str:
        size = min(info.max_payload, 8192)
        rounds = max(1, echo_budget // size)
        payload = rng.randbytes(size)
        started = time.monotonic()
        for _ in range(rounds):
            assert client.echo(payload) == payload, "ECHO corrupted"
        seconds = time.monotonic() - started
        report.rates["echo round trip"] = 2 * size * rounds / seconds
        return f"{rounds} x {size} B echoed; link stats: {client.stats}"

    _step(report, "chunked transfer", transfer)
    _step(report, "echo integrity", echo)
    _step(report, "throughput", throughput)
    return report
