"""The Target contract: provision once, deploy many models, run many inputs, tear down.

Lifecycle states are enforced: calling `run` before `provision`, or anything after `teardown`,
is a TargetStateError naming the method and the state, never a confusing failure deeper down.
A Target composes transports (which only move bytes) with the knowledge of one kind of device.
"""

from __future__ import annotations

import enum
import functools
import logging
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, ClassVar, Concatenate, ParamSpec, TypeVar

from hil.arrays import Array
from hil.artifacts.store import Artifact
from hil.case import Inputs
from hil.devices import DeviceAllowance, DeviceSpec, TimingPolicy
from hil.errors import TargetStateError, TraceUnavailable
from hil.runner.driver import DeviceTrace
from hil.verdict.device import EXACT


class State(enum.Enum):
    NEW = "new"
    READY = "ready"  # provisioned
    CLOSED = "closed"  # torn down


P = ParamSpec("P")
R = TypeVar("R")
T = TypeVar("T", bound="Target")


def requires(
    state: State,
) -> Callable[[Callable[Concatenate[T, P], R]], Callable[Concatenate[T, P], R]]:
    """Allow a Target method only in `state`."""

    def decorate(method: Callable[Concatenate[T, P], R]) -> Callable[Concatenate[T, P], R]:
        @functools.wraps(method)
        def guarded(self: T, /, *args: P.args, **kwargs: P.kwargs) -> R:
            if self.state is not state:
                raise TargetStateError(
                    f"{type(self).__name__}({self.spec.name}).{method.__name__}() needs state "
                    f"{state.value!r}, but the target is {self.state.value!r}"
                )
            return method(self, *args, **kwargs)

        return guarded

    return decorate


@dataclass(frozen=True)
class Deployment:
    """A model as the target holds it; `bytes_sent`: what crossed a link to put it there (0 when
    the target already had it, and always for targets in this process)."""

    sha256: str
    handle: Any = None
    bytes_sent: int = 0


@dataclass(frozen=True)
class RunResult:
    """What one run of a model on a target produced.

    `timings_us` holds one entry per timed run; `timing` says whether they were measured on
    the device, estimated (Vela) or emulated (QEMU), so no report mistakes one for another.
    `counters` carries device facts such as cycle counts and memory high-water marks.
    `not_the_model` says why the outputs are not the model's (a runner with the echo engine
    returns its inputs), so they are never judged as model outputs.
    """

    outputs: tuple[Array, ...]
    timings_us: tuple[float, ...] = ()
    timing: str = "measured"
    counters: Mapping[str, float] = field(default_factory=lambda: MappingProxyType({}))
    log: str = ""
    not_the_model: str = ""


@dataclass(frozen=True)
class Capabilities:
    """What a target kind can do beyond deploy and run, in one record: a wrapper (a board
    leased through the lab) forwards it whole, so nothing a kind adds is lost on the way."""

    # False for stand-ins that run a program's CPU part on PyTorch's kernels rather than
    # ExecuTorch's (the reference-model targets): whether the device's runtime has a kernel for
    # every CPU operator is then judged from the artifact's partition report.
    runs_device_kernels: bool = True
    # True for targets whose device runtime can record ExecuTorch's ETDump (the runner's):
    # each check then gets a profile from the device, and a wrong output its first divergent
    # operator from the device's own intermediates
    records_etdump: bool = False
    # True for stand-ins whose outputs are their program's lowered reference (its TOSA graphs
    # in Arm's reference model): the device question holds there by construction
    is_lowered_reference: bool = False
    # how far the device may be from its program's lowered reference (hil.verdict.device);
    # a device file's `device_allowance` replaces it
    device_allowance: DeviceAllowance = EXACT
    # True where the outputs come from an ExecuTorch runtime of the device's own (a runner),
    # not this process's: this process's runtime is then a reference for its CPU programs
    own_runtime: bool = False


class Target(ABC):
    """Base of every target kind."""

    CAPABILITIES: ClassVar[Capabilities] = Capabilities()

    def __init__(self, spec: DeviceSpec) -> None:
        self.spec = spec
        self.state = State.NEW
        self.log = logging.getLogger(f"hil.target.{type(self).__name__}({spec.name})")

    def provision(self) -> None:
        """Make the target ready (start emulator, connect, flash); may raise TargetUnavailable."""
        if self.state is not State.NEW:
            raise TargetStateError(
                f"{type(self).__name__}({self.spec.name}) is {self.state.value!r}; provision once"
            )
        try:
            self._provision()
        except BaseException:
            self._release_half_provisioned()
            raise
        self.state = State.READY

    def _release_half_provisioned(self) -> None:
        """What a failed `_provision` started (an emulator, an sshd, a lease) is released
        before the error leaves: `_teardown` must cope with any part never having started."""
        try:
            self._teardown()
        except Exception:
            self.log.exception("releasing what the failed provision started failed")
        finally:
            self.state = State.CLOSED

    def teardown(self) -> None:
        """Release everything; safe to call in any state, and more than once."""
        if self.state is State.READY:
            try:
                self._teardown()
            finally:
                self.state = State.CLOSED
        else:
            self.state = State.CLOSED

    @requires(State.READY)
    def deploy(self, artifact: Artifact) -> Deployment:
        return self._deploy(artifact)

    @requires(State.READY)
    def run(self, deployment: Deployment, inputs: Inputs, policy: TimingPolicy) -> RunResult:
        return self._run(deployment, inputs, policy)

    @requires(State.READY)
    def trace(
        self, deployment: Deployment, inputs: Inputs, debug_bytes: int = 0, runs: int = 1
    ) -> DeviceTrace:
        """`runs` runs on the device with ExecuTorch's ETDump (and their intermediate outputs,
        for `debug_bytes` > 0), apart from the judged runs."""
        return self._trace(deployment, inputs, debug_bytes, runs)

    @requires(State.READY)
    def lowered_reference(self, deployment: Deployment, inputs: Inputs) -> tuple[Array, ...] | None:
        """The program's lowered reference on `inputs`, where this target holds the program in a
        form that runs it (None: whoever needs it builds it from the artifact)."""
        return self._lowered_reference(deployment, inputs)

    def _lowered_reference(
        self, deployment: Deployment, inputs: Inputs
    ) -> tuple[Array, ...] | None:
        return None

    def _trace(
        self, deployment: Deployment, inputs: Inputs, debug_bytes: int, runs: int
    ) -> DeviceTrace:
        raise TraceUnavailable(
            f"{self.spec.name}: {self.spec.kind} targets have no device runtime of their own "
            "to record an ETDump from"
        )

    def clock_of(self, trace: DeviceTrace) -> tuple[str, float]:
        """What a trace's ticks count on this target, and how many of that unit a tick is."""
        emulated = " (emulated)" if self.spec.latency.timing == "emulated" else ""
        return trace.clock + emulated, 1.0

    @property
    def capabilities(self) -> Capabilities:
        return self.CAPABILITIES

    def describe(self) -> Mapping[str, str]:
        """Identity facts for reports (runner build id, CPU model, versions)."""
        return {"name": self.spec.name, "kind": self.spec.kind}

    @abstractmethod
    def _provision(self) -> None: ...

    @abstractmethod
    def _deploy(self, artifact: Artifact) -> Deployment: ...

    @abstractmethod
    def _run(self, deployment: Deployment, inputs: Inputs, policy: TimingPolicy) -> RunResult: ...

    def _teardown(self) -> None:  # noqa: B027 - optional hook: not every target holds resources
        """Override to release resources."""
