"""LabTarget: a serial or ssh board found through labgrid, leased for as long as it is in use.

A device file whose connection names a labgrid place or pool (hil/settings/lab.py) becomes a
LabTarget (hil/lab/open_target.py). Provisioning leases a place (reservation, wait, acquire:
hil/lab/lease.py) and provisions the inner target (SerialTarget, SshTarget) on the place's
resources, unchanged; deploy and run go to the inner target, and so does everything else a
target kind can do (its Capabilities, the device's ETDump trace and clock, its program's
reference): a leased board is judged and explained exactly as the same board opened directly.
What the lab adds is what happens when the board fails:

    runner stops answering   power-cycle the place (if it has a power switch), then the
    (InfrastructureError)    handshake again; it answers: InfrastructureRecovered (same
                             board). Otherwise the place is taken out of service (held, so
                             the pool does not hand it back), another place of the pool is
                             leased (waiting up to wait_s): InfrastructureRecovered (another
                             board). No other place: the InfrastructureError, and the session
                             takes the target out of service.
    provisioning fails       the same, before the first case: a board that fails is held
    on a board               and reported, the next one of the pool is tried.
    runner crashed           the place is power-cycled (a faulted board stays halted), the
                             crash goes to the session, which provisions the target afresh.

Release: teardown releases every place held and cancels hil's reservations; so do Ctrl-C
(pytest unwinds to teardown), SIGTERM (the plugin turns it into an exit) and interpreter exit
(atexit). A process killed hard (SIGKILL) cannot release: labgrid keeps the place acquired
by this host/user, with no timeout, until someone releases it (`labgrid-client -p PLACE
release --kick`); hil/lab/stale.py lets a later run on the same host take such places back.
"""

from __future__ import annotations

import atexit
import time
from collections.abc import Callable
from typing import TypeVar

from hil.arrays import Array
from hil.artifacts.store import Artifact
from hil.case import Inputs
from hil.devices import DeviceSpec, TimingPolicy
from hil.errors import (
    HilError,
    InfrastructureError,
    InfrastructureRecovered,
    TargetCrash,
)
from hil.lab.client import LabClient
from hil.lab.lease import Lease, Leaser
from hil.lab.power import LabgridPower, place_power
from hil.lab.resources import inner_spec
from hil.lab.stale import LeaseBook
from hil.runner.driver import DeviceTrace
from hil.settings import LabSettings, lab_settings
from hil.targets.base import Capabilities, Deployment, RunResult, Target

R = TypeVar("R")


class LabTarget(Target):
    def __init__(self, spec: DeviceSpec, make_inner: Callable[[DeviceSpec], Target]) -> None:
        """`make_inner` builds the target of a leased board (hil.targets.make_target)."""
        super().__init__(spec)
        settings = lab_settings(spec.settings)
        assert settings is not None, "open_target builds a LabTarget only for labgrid devices"
        self._settings: LabSettings = settings
        self._make_inner = make_inner
        # reached at provisioning; a failed provision releases only what it reached
        self._client: LabClient | None = None
        self._leaser: LabLeases | None = None
        self._inner: Target | None = None

    # -- lifecycle -------------------------------------------------------------------------

    def _provision(self) -> None:
        self._client = LabClient(self._settings.coordinator).connect()
        self._leaser = LabLeases(self._client, self._settings, self.spec.name)
        atexit.register(self._leaser.release_all)
        self._inner = self._take_board()

    def _take_board(self) -> Target:
        """The inner target provisioned on a place of the pool; places whose board fails are
        held and the next is tried, until the pool has none left or wait_s runs out."""
        deadline = time.monotonic() + self._settings.wait_s
        while True:
            lease = self.leases.lease(deadline)  # NoFreeBoard when none is left
            try:
                return self._start_inner(lease, power_cycle_on_failure=True)
            except InfrastructureError as e:
                self.leases.retire(lease.place, e)
                self.log.warning("%s failed, taking another board: %s", lease.place, e.message)

    def _start_inner(self, lease: Lease, *, power_cycle_on_failure: bool) -> Target:
        lease = self.leases.ready(lease)
        inner = _provisioned(self._make_inner(inner_spec(self.spec, lease)))
        if isinstance(inner, InfrastructureError) and power_cycle_on_failure:
            power = self._power()
            if power is None:
                raise inner
            self.log.warning(
                "%s does not answer (%s); power-cycling it", lease.place, inner.message
            )
            power.cycle()
            inner = _provisioned(self._make_inner(inner_spec(self.spec, lease)))
        if isinstance(inner, InfrastructureError):
            raise inner
        self.log.info("on %s", lease.place)
        return inner

    def _close(self) -> None:
        """Release what is held; after a failed provision, only what it reached."""
        if self._inner is not None:
            self._inner.teardown()
        if self._leaser is not None:
            self._leaser.release_all()
            atexit.unregister(self._leaser.release_all)
        if self._client is not None:
            self._client.close()

    def _teardown(self) -> None:
        self._close()

    @property
    def place(self) -> str | None:
        current = self._leaser.current if self._leaser is not None else None
        return current.place if current is not None else None

    @property
    def failed_boards(self) -> dict[str, HilError]:
        """Places that failed in this target's life (held until it ends), with their causes."""
        return dict(self.leases.failed)

    @property
    def inner(self) -> Target:
        """The target on the current board (SerialTarget, SshTarget)."""
        if self._inner is None:
            raise InfrastructureError(f"{self.spec.name}: no board of the lab is in use")
        return self._inner

    @property
    def leases(self) -> LabLeases:
        if self._leaser is None:
            raise InfrastructureError(f"{self.spec.name}: not connected to the lab")
        return self._leaser

    def describe(self) -> dict[str, str]:
        facts = dict(self._inner.describe()) if self._inner is not None else {}
        facts.update(super().describe())
        if self._leaser is not None and self._leaser.current is not None:
            facts.update(place=self._leaser.current.place, coordinator=self._settings.coordinator)
        return facts

    # -- failures --------------------------------------------------------------------------

    def _power(self) -> LabgridPower | None:
        lease = self.leases.current
        if lease is None or not self._settings.power:
            return None
        return place_power(lease.place, lease.resources, self._settings.power_delay_s)

    def _guarded(self, doing: str, fn: Callable[[Target], R]) -> R:
        try:
            return fn(self.inner)
        except InfrastructureRecovered:
            raise
        except TargetCrash:
            self._restart_after_crash()
            raise
        except InfrastructureError as e:
            raise self._recover(doing, e) from e

    def _restart_after_crash(self) -> None:
        power = self._power()
        if power is None:
            return
        try:
            power.cycle()
        except HilError as e:
            self.log.warning("power cycle after the crash failed: %s", e.message)

    def _recover(self, doing: str, error: InfrastructureError) -> InfrastructureError:
        """Bring the target back after `error`: the same board power-cycled, else another."""
        lease = self.leases.current
        assert lease is not None
        self.inner.teardown()
        power = self._power()
        tried = "no power switch to cycle"
        if power is not None:
            try:
                power.cycle()
            except HilError as e:
                tried = f"the power cycle failed: {e.message}"
            else:
                try:
                    self._inner = self._start_inner(lease, power_cycle_on_failure=False)
                except HilError as e:
                    tried = f"power-cycled, still no runner: {e.message}"
                else:
                    return InfrastructureRecovered(
                        f"{error.message} [{doing} on {lease.place}]; power-cycled "
                        f"{lease.place}, its runner answers again",
                        fix=error.fix,
                        recovery=f"power-cycled {lease.place}",
                    )
        self.leases.retire(lease.place, error)
        try:
            self._inner = self._take_board()
        except HilError as e:
            return InfrastructureError(
                f"{error.message} [{doing} on {lease.place}; {tried}]; {lease.place} is "
                f"out of service and no other board of {self._settings.pool} could be had: "
                f"{e.message}",
                fix=e.fix or error.fix,
            )
        new = self.leases.current
        return InfrastructureRecovered(
            f"{error.message} [{doing} on {lease.place}; {tried}]; {lease.place} is out "
            f"of service, continuing on {new.place if new else '?'}",
            fix=error.fix,
            recovery=f"{lease.place} out of service; moved to {new.place if new else '?'}",
        )

    # -- deploy and run --------------------------------------------------------------------

    def _deploy(self, artifact: Artifact) -> Deployment:
        return self._guarded(f"deploying {artifact.pte_path.name}", lambda t: t.deploy(artifact))

    def _run(self, deployment: Deployment, inputs: Inputs, policy: TimingPolicy) -> RunResult:
        return self._guarded("running the model", lambda t: t.run(deployment, inputs, policy))

    # -- what the board's kind can do, forwarded whole ----------------------------------------

    @property
    def capabilities(self) -> Capabilities:
        return self.inner.capabilities

    def _trace(
        self, deployment: Deployment, inputs: Inputs, debug_bytes: int, runs: int
    ) -> DeviceTrace:
        return self._guarded(
            "tracing the model", lambda t: t.trace(deployment, inputs, debug_bytes, runs)
        )

    def clock_of(self, trace: DeviceTrace) -> tuple[str, float]:
        return self.inner.clock_of(trace)

    def _lowered_reference(
        self, deployment: Deployment, inputs: Inputs
    ) -> tuple[Array, ...] | None:
        return self.inner.lowered_reference(deployment, inputs)


def _provisioned(target: Target) -> Target | InfrastructureError:
    """The inner target, provisioned; or the infrastructure error that stopped it (a failed
    provision releases what it started: Target.provision)."""
    try:
        target.provision()
    except InfrastructureError as e:
        return e
    return target


class LabLeases:
    """The places one target holds: the current board, and the ones that failed (held until
    the end so the pool does not hand them back). Every lease is noted in the LeaseBook, so a
    later run can take back what a hard-killed process left acquired."""

    def __init__(self, client: LabClient, settings: LabSettings, name: str) -> None:
        self._leaser = Leaser(client, settings, name)
        self._book = LeaseBook.for_coordinator(settings.coordinator)
        self._client = client
        self._settings = settings
        self.current: Lease | None = None
        self.failed: dict[str, HilError] = {}
        self._held: list[Lease] = []

    def lease(self, deadline: float) -> Lease:
        self._book.reclaim(self._client, self._settings.filters)
        lease = self._leaser.lease(deadline, set(self.failed))
        self._book.note(lease)
        self._held.append(lease)
        self.current = lease
        return lease

    def ready(self, lease: Lease) -> Lease:
        ready = self._leaser.ready(lease)
        self._held = [ready if h.place == lease.place else h for h in self._held]
        if self.current is not None and self.current.place == lease.place:
            self.current = ready
        return ready

    def retire(self, place: str, cause: HilError) -> None:
        self.failed.setdefault(place, cause)
        if self.current is not None and self.current.place == place:
            self.current = None

    def release_all(self) -> None:
        held, self._held = self._held, []
        for lease in held:
            self._leaser.release(lease)
            self._book.forget(lease)
        self.current = None
