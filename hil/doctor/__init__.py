"""`hil doctor`: for each device file, what this machine has and lacks to run it, with fixes.

Checks are declared per target kind, as data (kind -> "module:function" names, imported only
when a device of that kind is diagnosed), so a new kind plugs its own in beside the others:

    CHECKS["fvp"] = ("hil.doctor.fvp:check_fvp",)

A check takes the DeviceSpec and yields Findings. A finding that carries `blocking` is what
the target's provisioning would raise: the first one becomes the device's verdict, in the
words pytest's skip (or error) gives, so `hil doctor` and `pytest --target=NAME` agree.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType

from hil.devices import DeviceSpec
from hil.errors import HilError, TargetUnavailable

OK, MISSING, NOTE = "ok", "missing", "note"


@dataclass(frozen=True)
class Finding:
    """One thing a target needs, and whether it is here."""

    what: str  # "FVP binary", "toolchain", ...
    status: str  # ok | missing | note (not needed before the first run, or informational)
    detail: str
    fix: str | None = None
    blocking: HilError | None = None  # what provisioning would raise because of this


Check = Callable[[DeviceSpec], Iterable[Finding]]

CHECKS: Mapping[str, tuple[str, ...]] = MappingProxyType(
    {
        "fvp": ("hil.doctor.fvp:check_fvp",),
        "serial": ("hil.doctor.checks:check_serial",),
        "host": ("hil.doctor.checks:check_executorch",),
        "ethos_u_ref": ("hil.doctor.checks:check_executorch", "hil.doctor.checks:check_tosa"),
        "tosa_ref": ("hil.doctor.checks:check_executorch", "hil.doctor.checks:check_tosa"),
        "cortex_m_ref": ("hil.doctor.checks:check_executorch",),
        "vgf_emu": (
            "hil.doctor.checks:check_executorch",
            "hil.doctor.checks:check_tosa",
            "hil.doctor.vgf:check_vgf",
        ),
        "ssh": ("hil.doctor.ssh:check_ssh",),
    }
)


@dataclass(frozen=True)
class Diagnosis:
    spec: DeviceSpec
    findings: tuple[Finding, ...]

    @property
    def blocking(self) -> HilError | None:
        return next((f.blocking for f in self.findings if f.blocking is not None), None)

    @property
    def ready(self) -> bool:
        return self.blocking is None

    def verdict(self) -> str:
        """What a pytest run on this target would do, in the plugin's own words."""
        error = self.blocking
        name = self.spec.name
        if error is None:
            return f"ready: nothing missing on this machine (pytest --target={name} provisions it)"
        if isinstance(error, TargetUnavailable):
            return f"skipped by pytest: target {name} unavailable: {error.message}"
        return f"error in pytest: target {name}: {error.message}"


def _resolve(name: str) -> Check:
    module, function = name.split(":")
    check: Check = getattr(importlib.import_module(module), function)
    return check


def diagnose(spec: DeviceSpec) -> Diagnosis:
    names = CHECKS.get(spec.kind, ())
    findings: list[Finding] = []
    for name in names:
        findings.extend(_resolve(name)(spec))
    if not names:
        findings.append(Finding("checks", NOTE, f"hil doctor has no checks for kind {spec.kind}"))
    return Diagnosis(spec, tuple(findings))


def render(diagnoses: Sequence[Diagnosis]) -> list[str]:
    """The report as text lines: per device, each finding with its fix, then the verdict."""
    lines: list[str] = []
    for d in diagnoses:
        lines.append(f"{d.spec.name} ({d.spec.kind}): {d.spec.description}")
        width = max((len(f.what) for f in d.findings), default=0)
        for f in d.findings:
            lines.append(f"  {f.status:<7}  {f.what:<{width}}  {f.detail}")
            if f.fix and f.status != OK:
                lines.append(f"  {'':<7}  {'':<{width}}  fix: {f.fix}")
        lines.append(f"  => {d.verdict()}")
        lines.append("")
    ready = sum(d.ready for d in diagnoses)
    lines.append(f"{ready} of {len(diagnoses)} targets ready on this machine")
    return lines


def finding_from(what: str, attempt: Callable[[], str], *, blocking: bool = True) -> Finding:
    """Run one probe: its text when it works, the HilError's message and fix when not."""
    try:
        return Finding(what, OK, attempt())
    except HilError as e:
        return Finding(what, MISSING, e.message, e.fix, e if blocking else None)
