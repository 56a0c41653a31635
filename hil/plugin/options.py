"""Command-line and ini options of the hil plugin, parsed once into a frozen HilOptions."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

# Cases carrying one of these tags run only when the option is given.
OPT_IN_TAGS = {"full": "--hil-full", "large": "--hil-large"}


def add_options(parser: pytest.Parser) -> None:
    group = parser.getgroup("hil", "hardware-in-the-loop (hil)")
    group.addoption(
        "--target",
        action="append",
        dest="hil_targets",
        metavar="NAME",
        help="run hil cases on this target (repeatable; each becomes a parametrize axis). "
        "Default: the hil_targets ini value, else host. `hil targets` lists them.",
    )
    group.addoption(
        "--hil-require",
        action="store_true",
        help="takes no argument: a target that cannot run here fails its cases instead of "
        "skipping them, and a check that could not be judged (NOT JUDGED) fails too (for CI)",
    )
    group.addoption(
        "--hil-full", action="store_true", help="also run cases tagged 'full' (the whole sweep)"
    )
    group.addoption(
        "--hil-large",
        action="store_true",
        help="also run cases tagged 'large' (big models such as OPT-125M)",
    )
    group.addoption(
        "--hil-explain",
        action="store_true",
        help="find the first divergent operator of every check, passing ones too (a failed "
        "output check always gets it); per-node errors go where `hil explore` reads them",
    )
    group.addoption(
        "--hil-no-profile",
        action="store_true",
        help="no per-operator profile from the device's ETDump (runner targets record one per "
        "check, in runs apart from the judged ones: as many as the device file's min_runs, at "
        "most 5; an FVP's runs are slow)",
    )
    group.addoption(
        "--hil-cache-dir",
        type=Path,
        metavar="DIR",
        help="artifact cache (default: $HIL_CACHE_DIR or .hil/cache)",
    )
    group.addoption(
        "--hil-results-dir",
        type=Path,
        metavar="DIR",
        help="arrays of every check, run.json and records.jsonl (default: $HIL_RESULTS_DIR or "
        ".hil/results); one run at a time holds it, and an earlier run there is moved into "
        "DIR/earlier/RUN_ID/",
    )
    group.addoption(
        "--hil-devices",
        action="append",
        type=Path,
        metavar="DIR",
        help="a folder of device files (repeatable), added to the others: searched after the "
        "project's devices/ (in the rootdir) and before $HIL_DEVICES and the bundled files; "
        "its files override those of the same name found later (docs/extending.md)",
    )
    group.addoption(
        "--hil-report",
        type=Path,
        metavar="DIR",
        help="at the end of the run, write the certification report (report.json, report.html) "
        "into DIR; `hil report` writes the same from a results folder later",
    )
    group.addoption(
        "--hil-baseline",
        type=Path,
        metavar="REPORT_JSON",
        help="with --hil-report: show what changed since this earlier report.json",
    )
    group.addoption(
        "--hil-retries",
        type=_retries,
        default=0,
        metavar="N",
        help="run a case that failed on the infrastructure (lost link, dead board, emulator "
        "died) again, up to N times, on another board of a labgrid pool where there is one; "
        "test failures are never retried (default 0)",
    )
    group.addoption(
        "--hil-quarantine",
        type=Path,
        metavar="FILE",
        help="YAML list of known failures (case pattern, reason, issue, expires): matching "
        "failures are reported as quarantined; an expired entry stops the run",
    )
    group.addoption(
        "--hil-export-workers",
        type=_workers,
        default=None,
        metavar="N",
        help="export ahead in N worker processes, so a cold run uses every core (default: one "
        "per core; 0: export each case when its check starts; not under xdist)",
    )
    group.addoption(
        "--hil-pristine-export",
        action="store_true",
        help="export with torch and ExecuTorch as shipped: none of hil's speed-ups installed, "
        "in this process and the export workers (HIL_PRISTINE_EXPORT=1 does the same); "
        "artifacts are keyed apart from the patched ones",
    )
    # No default here: an ini file that names targets is told apart from one that does not
    # by the value alone (read_options falls back to host).
    parser.addini(
        "hil_targets", "targets used when --target is not given (default host)", type="args"
    )


def _whole_number(option: str) -> Callable[[str], int]:
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            value = -1
        if value < 0:
            raise pytest.UsageError(f"{option} takes a whole number >= 0, got {text!r}")
        return value

    return parse


_retries = _whole_number("--hil-retries")
_workers = _whole_number("--hil-export-workers")


@dataclass(frozen=True)
class HilOptions:
    targets: tuple[str, ...]
    require: bool
    opt_in_tags: frozenset[str]
    cache_dir: Path | None
    results_dir: Path | None
    device_dirs: tuple[Path, ...]
    explain: bool = False
    profile: bool = True
    export_workers: int | None = None  # None: one per core
    pristine_export: bool = False


# What each option is when not given: an option given otherwise means hil is in use.
DEFAULTS = {
    "hil_targets": None,
    "hil_require": False,
    "hil_full": False,
    "hil_large": False,
    "hil_explain": False,
    "hil_no_profile": False,
    "hil_cache_dir": None,
    "hil_results_dir": None,
    "hil_devices": None,
    "hil_report": None,
    "hil_baseline": None,
    "hil_retries": 0,
    "hil_quarantine": None,
    "hil_export_workers": None,
    "hil_pristine_export": False,
}


def hil_options_given(config: pytest.Config) -> bool:
    """Whether the command line or the ini file sets a hil option."""
    given = any(config.getoption(dest, default) != default for dest, default in DEFAULTS.items())
    return given or bool(config.getini("hil_targets"))


def read_options(config: pytest.Config) -> HilOptions:
    targets = config.getoption("hil_targets") or config.getini("hil_targets") or ["host"]
    ordered = tuple(dict.fromkeys(t for item in targets for t in item.split(",") if t))
    tags = {
        tag
        for tag, flag in OPT_IN_TAGS.items()
        if config.getoption(flag.lstrip("-").replace("-", "_"))
    }
    return HilOptions(
        targets=ordered,
        require=bool(config.getoption("hil_require")),
        opt_in_tags=frozenset(tags),
        cache_dir=config.getoption("hil_cache_dir"),
        results_dir=config.getoption("hil_results_dir"),
        device_dirs=tuple(config.getoption("hil_devices") or ()),
        explain=bool(config.getoption("hil_explain")),
        profile=not config.getoption("hil_no_profile"),
        export_workers=config.getoption("hil_export_workers"),
        pristine_export=bool(config.getoption("hil_pristine_export")),
    )
