"""The `connection` of a host device: how the in-process runtime is set up."""

from __future__ import annotations

from dataclasses import dataclass

from hil.settings.reader import Section


@dataclass(frozen=True)
class HostSettings:
    threads: int = 1  # XNNPACK's thread pool; eager PyTorch is timed on one thread too

    @classmethod
    def parse(cls, section: Section) -> HostSettings:
        section.reject_unknown(("threads",))
        return cls(threads=int(section.positive("threads", 1, integer=True)))


@dataclass(frozen=True)
class ReferenceSettings:
    """The stand-ins (ethos_u_ref, tosa_ref, cortex_m_ref, vgf_emu) run in this process (or a
    worker of theirs) and take no keys."""

    @classmethod
    def parse(cls, section: Section) -> ReferenceSettings:
        section.reject_unknown(())
        return cls()
