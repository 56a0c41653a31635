"""How numbers read in reports: durations, sizes, cycle counts, ratios, and timing labels.

Every place that shows a latency shows how it was obtained, so an estimate or an emulator's time
is never read as a measurement on silicon.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

TIMING_LABELS: Mapping[str, str] = MappingProxyType(
    {"measured": "measured", "estimated": "estimated (Vela)", "emulated": "emulated (QEMU)"}
)
TIMING_NOTES: Mapping[str, str] = MappingProxyType(
    {
        "measured": "wall-clock or cycle-counter time on the target itself",
        "estimated": "the compiler's performance model (Vela), not a measurement",
        "emulated": "time inside an emulator (QEMU), not silicon",
    }
)


def timing_label(timing: str | None) -> str:
    return TIMING_LABELS.get(timing or "measured", timing or "measured")


def timing_suffix(timing: str | None) -> str:
    """'' for measured numbers, ' (est)' / ' (emu)' otherwise: short enough for table cells."""
    if not timing or timing == "measured":
        return ""
    return f" ({timing[:3]})"


def number(value: Any) -> float | None:
    """A float, or None for absent values and the 'inf'/'nan' strings JSON carries."""
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, (int, float)):
        return float(value)
    if value in ("inf", "-inf", "nan"):
        return float(value)
    return None


def duration_us(value: Any) -> str:
    v = number(value)
    if v is None or math.isnan(v):
        return "-"
    if v >= 1e6:
        return f"{v / 1e6:.2f} s"
    if v >= 1e3:
        return f"{v / 1e3:.2f} ms"
    return f"{v:.1f} us"


def size_bytes(value: Any) -> str:
    v = number(value)
    if v is None:
        return "-"
    for unit, scale in (("MiB", 1024**2), ("KiB", 1024.0)):
        if abs(v) >= scale:
            return f"{v / scale:.1f} {unit}"
    return f"{v:.0f} B"


def sci(value: Any, digits: int = 2) -> str:
    v = number(value)
    if v is None:
        return "-"
    if math.isinf(v):
        return "inf" if v > 0 else "-inf"
    return f"{v:.{digits}e}"


def fixed(value: Any, digits: int = 1) -> str:
    v = number(value)
    if v is None:
        return "-"
    if math.isinf(v):
        return "inf" if v > 0 else "-inf"
    return f"{v:.{digits}f}"


def counter(name: str, value: Any) -> str:
    """A device counter in the unit its name implies (..._bytes, ..._hz, ..._us, cycles, ratios)."""
    v = number(value)
    if v is None:
        return "-"
    if name.endswith("_bytes"):
        return size_bytes(v)
    if name.endswith("_hz"):
        return f"{v / 1e6:.0f} MHz"
    if name.endswith("_us"):
        return duration_us(v)
    if "utilization" in name or "fraction" in name or name.endswith("_ratio"):
        return f"{100 * v:.1f} %"
    if float(v).is_integer():
        return f"{int(v):,}"
    return f"{v:.4g}"
