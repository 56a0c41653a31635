"""The measured figures the docs quote: one file, written by the bench scripts, read by the docs.

A bench script that measures a figure a page quotes records it with `record(...)`: its value,
what it is, and how it was measured (the date, the machine's cores, hil's and ExecuTorch's
versions, the command). The pages take it through the `figure` macro (mkdocs-macros loads this
module, mkdocs.yml), so two pages cannot quote one figure two ways, and a figure nobody measured
again keeps the date it was measured on. `tests/docs/test_figures.py` fails on a page that types
a benchmark figure by hand.

    from figures import record
    record("suites.cold_s", 1050, "s", "make suites, cold cache, every target that runs here",
           "make suites")
"""

# No `from __future__ import annotations` here: mkdocs-macros loads this file by path, without
# a sys.modules entry, and dataclasses read string annotations through that entry.
import json
import os
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
FIGURES = BENCH / "figures.json"


def differences_file(prefix: str = "ops") -> Path:
    """The list of differences kept beside the figures named `prefix`, as executorch_ops_all.py
    wrote it: the operator-tests page lists ops_differences.json (the whole op folder), the
    versions page an older release's (ops_differences_1_4.json)."""
    return BENCH / f"{prefix.replace('ops', 'ops_differences', 1)}.json"


@dataclass(frozen=True)
class Figure:
    value: int | float | str
    unit: str  # "s", "%", "x", "cases", ... ("" for a plain ratio)
    what: str  # one line: what was measured, as a reader of the table needs it
    measured: str  # the day (YYYY-MM-DD)
    cores: int
    hil: str
    executorch: str
    command: str

    def shown(self) -> str:
        """The value as a page prints it: thousands apart, the unit after."""
        value = f"{self.value:,}" if isinstance(self.value, int) else str(self.value)
        if not self.unit:
            return value
        return f"{value}{self.unit}" if self.unit in ("x", "%") else f"{value} {self.unit}"


def _versions() -> tuple[str, str]:
    import hil

    try:
        from importlib.metadata import version

        executorch = version("executorch")
    except Exception:  # a figure of a run without ExecuTorch names none
        executorch = "none"
    return hil.__version__, executorch


def load(path: Path = FIGURES) -> dict[str, Figure]:
    if not path.exists():
        return {}
    return {name: Figure(**fields) for name, fields in json.loads(path.read_text()).items()}


def record(
    name: str, value: int | float | str, unit: str, what: str, command: str, path: Path = FIGURES
) -> Figure:
    """Write one measured figure (replacing the one of that name), measured today on this
    machine with the installed hil and ExecuTorch."""
    hil_version, executorch = _versions()
    figure = Figure(
        value=value,
        unit=unit,
        what=what,
        measured=time.strftime("%Y-%m-%d"),
        cores=os.cpu_count() or 1,
        hil=hil_version,
        executorch=executorch,
        command=command,
    )
    figures = load(path)
    figures[name] = figure
    ordered = {key: asdict(figures[key]) for key in sorted(figures)}
    path.write_text(json.dumps(ordered, indent=1) + "\n")
    return figure


def record_differences(rows: list[dict[str, Any]], path: Path) -> None:
    """Keep the op folder's differences with their harness for the operator-tests page."""
    path.write_text(json.dumps(rows, indent=1) + "\n")


# ---- the docs' side: mkdocs-macros calls define_env with the site's environment ----


def _table(figures: dict[str, Figure], prefix: str) -> str:
    rows = [
        "| what | value | measured | command |",
        "| --- | --- | --- | --- |",
    ]
    for name, figure in figures.items():
        if name.startswith(prefix):
            how = f"{figure.measured}, {figure.cores} cores, ExecuTorch {figure.executorch}"
            rows.append(f"| {figure.what} | **{figure.shown()}** | {how} | `{figure.command}` |")
    if len(rows) == 2:
        raise KeyError(f"no figure in {FIGURES.name} starts with {prefix!r}")
    return "\n".join(rows)


def _differences(prefix: str = "ops") -> str:
    rows = json.loads(differences_file(prefix).read_text())
    by_cause: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        by_cause.setdefault(f"{row['hil']}: {row['cause']}", []).append(row)
    lines = []
    for cause, found in sorted(by_cause.items(), key=lambda item: (-len(item[1]), item[0])):
        lines.append(f"* **{cause}** ({len(found)}):")
        for row in sorted(found, key=lambda r: r["case"]):
            lines.append(f"    * `{row['case']}` on {row['target']}: {row['figures']}")
    return "\n".join(lines)


def define_env(env: Any) -> None:
    """The macros the pages use: `figure`, `measured`, `figures_table`, `ops_differences`."""
    figures = load()

    def figure(name: str) -> str:
        return figures[name].shown()

    def measured(name: str) -> str:
        found = figures[name]
        return f"measured {found.measured} on {found.cores} cores, ExecuTorch {found.executorch}"

    macros: dict[str, Callable[..., str]] = {
        "figure": figure,
        "measured": measured,
        "figures_table": lambda prefix="": _table(figures, prefix),
        "ops_differences": _differences,
    }
    for name, macro in macros.items():
        env.macro(macro, name)
