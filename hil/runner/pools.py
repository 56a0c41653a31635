"""How big the runner's memory pools must be for a model, and whether a runner's are.

The runner carves five pools (firmware/src/platform/platform.h): `model` (the .pte bytes),
`method` (the runtime's method allocator), `planned` (memory-planned activations), `temp`
(kernel and delegate scratch) and `io` (inputs as sent). Three of them follow from the .pte
alone (hil.runner.pte_plan): the model's size, its planned buffers and its input tensors, each
carved at the runner's 64-byte alignment. The method allocator's and the scratch's use are
known only from a run: the runner reports each pool's high-water mark (MEM_STATS, in a
RunResult's counters as `<pool>_pool_peak_bytes`).

Used before a deploy (a model that cannot fit is refused with the sizes, instead of failing
inside the runner) and by `hil firmware pools`, which prints the smallest pools a model needs
as the defines a device file takes (`connection.firmware.defines`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from hil.errors import PoolsTooSmall
from hil.runner.messages import PoolStat
from hil.runner.pte_plan import method_plan

ALIGNMENT = 64  # the runner's carving (executorch_engine.cpp: take())
POOLS = ("model", "method", "planned", "temp", "io")
PEAK_SUFFIX = "_pool_peak_bytes"
SIZE_SUFFIX = "_pool_size_bytes"


def carve(sizes: Iterable[int], alignment: int = ALIGNMENT) -> int:
    """Bytes a pool must have to hand out `sizes` one after another, each aligned."""
    used = 0
    for size in sizes:
        used = -(-used // alignment) * alignment + size
    return used


@dataclass(frozen=True)
class PoolNeeds:
    """The smallest pool sizes one model needs; None where only a run can tell."""

    model: int
    planned: int
    io: int
    method: int | None = None
    temp: int | None = None

    def as_dict(self) -> dict[str, int | None]:
        return {pool: getattr(self, pool) for pool in POOLS}

    def defines(self, headroom: float = 0.0, granule: int = 4096) -> dict[str, str]:
        """`connection.firmware.defines` for a bare-metal runner with exactly these pools
        (rounded up to `granule`, plus `headroom` as a fraction); unknown pools are left out."""
        out = {}
        for pool, need in self.as_dict().items():
            if need is not None:
                size = -(-int(need * (1.0 + headroom)) // granule) * granule
                out[f"HIL_POOL_{pool.upper()}_SIZE"] = hex(max(size, granule))
        return out


def needs_of(pte: bytes, measured: Mapping[str, float] | None = None) -> PoolNeeds:
    """What the .pte needs; `measured` peaks (pool name -> bytes, or RunResult counters) add
    the method and temp pools."""
    plan = method_plan(pte)
    peaks = measured_peaks(measured or {})
    inputs = [t.nbytes for t in plan.inputs if t is not None]
    return PoolNeeds(
        model=len(pte),
        planned=carve(plan.planned_buffers),
        io=carve(inputs),
        method=peaks.get("method"),
        temp=peaks.get("temp"),
    )


RAM_POOLS = ("method", "planned", "temp", "io")  # what a run needs beside the program's bytes


def pool_counters(pools: Iterable[PoolStat]) -> dict[str, float]:
    """A run's memory facts as counters: each pool's peak and size, and `ram_peak_bytes`, the
    working memory the run needed beside the program (the method, planned, temp and io pools'
    peaks), which a device file's memory.ram_max_bytes is judged against."""
    counters: dict[str, float] = {}
    for pool in pools:
        counters[f"{pool.name}{PEAK_SUFFIX}"] = float(pool.peak)
        counters[f"{pool.name}{SIZE_SUFFIX}"] = float(pool.size)
    peaks = [counters.get(f"{name}{PEAK_SUFFIX}") for name in RAM_POOLS]
    if all(p is not None for p in peaks):
        counters["ram_peak_bytes"] = float(sum(p for p in peaks if p is not None))
    return counters


def measured_peaks(values: Mapping[str, float]) -> dict[str, int]:
    """Pool name -> peak bytes, from a plain mapping or from a RunResult's counters."""
    out = {}
    for key, value in values.items():
        pool = key.removesuffix(PEAK_SUFFIX)
        if pool in POOLS:
            out[pool] = int(value)
    return out


@dataclass(frozen=True)
class Shortfall:
    pool: str
    needed: int
    available: int

    def describe(self) -> str:
        return f"{self.pool} pool: needs {self.needed} bytes, has {self.available}"


def shortfalls(needs: PoolNeeds, pools: Mapping[str, int]) -> list[Shortfall]:
    """The pools of a runner (name -> size, as its handshake reports them) too small for
    `needs`; a pool the runner does not report is not judged."""
    return [
        Shortfall(pool, need, pools[pool])
        for pool, need in needs.as_dict().items()
        if need is not None and pool in pools and need > pools[pool]
    ]


def check_fits(target: str, pte: bytes, pools: Mapping[str, int]) -> PoolNeeds:
    """Refuse, with the sizes, a model the runner's pools cannot hold; else its needs."""
    needs = needs_of(pte)
    short = shortfalls(needs, pools)
    if short:
        defines = needs.defines(headroom=0.25)
        wanted = ", ".join(
            f"{k}: {v}"
            for k, v in defines.items()
            if any(k == f"HIL_POOL_{s.pool.upper()}_SIZE" for s in short)
        )
        raise PoolsTooSmall(
            f"{target}: the model does not fit the runner's memory: "
            + "; ".join(s.describe() for s in short),
            fix="give the runner bigger pools (a bare-metal device file's "
            f"connection.firmware.defines, e.g. {{{wanted}}}; on a host runner "
            "connection.runner_args [--pool, NAME=SIZE]), or make the model smaller",
            shortfalls=tuple(short),
        )
    return needs


def render(needs: PoolNeeds, pools: Mapping[str, int] | None = None) -> str:
    """A small table: each pool's need (and the runner's size, when given)."""
    rows = [f"{'pool':8} {'needs (bytes)':>14}" + (f" {'runner has':>12}" if pools else "")]
    for pool, need in needs.as_dict().items():
        shown = "from a run" if need is None else str(need)
        row = f"{pool:8} {shown:>14}"
        if pools:
            row += f" {pools.get(pool, 0):>12}"
        rows.append(row)
    return "\n".join(rows)
