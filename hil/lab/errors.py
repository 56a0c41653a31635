"""Errors of the lab layer: all infrastructure (the lab failed, not the model under test)."""

from __future__ import annotations

from hil.errors import InfrastructureError


class LabError(InfrastructureError):
    """The coordinator refused a request or did not answer; `code` is its gRPC status name."""

    def __init__(self, message: str, *, fix: str | None = None, code: str = "") -> None:
        super().__init__(message, fix=fix)
        self.code = code


class NoFreeBoard(InfrastructureError):
    """No place of the pool could be had in time (all held, broken, or none matches)."""


class PowerError(InfrastructureError):
    """The place's power switch could not be switched."""
