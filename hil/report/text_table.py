"""Plain aligned text tables and the number formats the terminal sections share."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any


def table(
    headers: Sequence[str], rows: Iterable[Sequence[str]], right: Iterable[int] = ()
) -> list[str]:
    """A plain aligned text table; columns in `right` are right-aligned (numbers)."""
    body = [list(map(str, row)) for row in rows]
    widths = [max([len(h)] + [len(r[i]) for r in body]) for i, h in enumerate(headers)]
    right_set = set(right)

    def line(cells: Sequence[str]) -> str:
        parts = [
            c.rjust(w) if i in right_set else c.ljust(w)
            for i, (c, w) in enumerate(zip(cells, widths, strict=True))
        ]
        return "  ".join(parts).rstrip()

    return [line(headers), line(["-" * w for w in widths]), *(line(r) for r in body)]


def fmt_number(value: Any, spec: str) -> str:
    if value is None:
        return "-"
    if value == "inf" or (isinstance(value, float) and value == float("inf")):
        return "inf"
    return format(float(value), spec)


def fmt_us(value: float | None) -> str:
    """A duration in microseconds, in the unit that reads best."""
    if value is None:
        return "-"
    if value >= 1e6:
        return f"{value / 1e6:.2f} s"
    if value >= 1e3:
        return f"{value / 1e3:.2f} ms"
    return f"{value:.1f} us"
