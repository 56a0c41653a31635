"""Leasing a board: labgrid's reservation, wait and acquire, and the release that ends it.

    own reservation  hil reserves the pool's filter (tags, or name=PLACE) at the device's
                     priority, polls until the coordinator allocates a place, acquires it,
                     and cancels the reservation when it releases the place. The coordinator
                     allocates only places nobody holds or has reserved, by priority and age,
                     so two jobs (or two xdist workers) never get the same board, and a
                     waiting job is served in turn.
    CI token         `token:` names reservations a CI job made before the run
                     (`labgrid-client reserve --wait --shell board=vboard`): hil acquires an
                     allocated place of one of them that nobody holds; the job cancels them.

A place this process holds stays out of every allocation, a broken one included: the target
keeps a board that failed until it ends, so the pool does not hand it straight back.
Acquiring makes the exporter start ser2net for the place's serial ports; the lease is ready
once every resource of the place is available with its network port known.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from dataclasses import dataclass

from hil.errors import InfrastructureError
from hil.lab.client import LabClient, PlaceView, ResourceView
from hil.lab.errors import LabError, NoFreeBoard
from hil.settings import LabSettings

POLL_S = 0.2
RESOURCES_READY_S = 15.0
NO_RESOURCES_S = 3.0


class BoardNotReady(InfrastructureError):
    """An acquired place whose exporter does not offer its resources."""


@dataclass(frozen=True)
class Lease:
    """An acquired place and its resources as they were when it became ready."""

    place: str
    resources: tuple[ResourceView, ...]
    token: str | None  # hil's own reservation, cancelled on release; None for a CI token


def matches(place: PlaceView, filters: Mapping[str, str]) -> bool:
    """Whether the coordinator's scheduler would consider `place` for the filter."""
    tags = {**place.tags, "name": place.name}
    return all(tags.get(k) == v for k, v in filters.items())


class Leaser:
    def __init__(self, client: LabClient, settings: LabSettings, name: str) -> None:
        self.client = client
        self.settings = settings
        self.log = logging.getLogger(f"hil.lab.Leaser({name})")

    def lease(self, deadline: float, held: set[str]) -> Lease:
        """A place of the pool, acquired (see `ready`); `held` are places this target already
        holds (broken ones) and must not count as candidates."""
        if self.settings.tokens:
            return self._from_tokens(deadline, held)
        return self._reserve(deadline, held)

    def _check_pool(self, held: set[str]) -> dict[str, PlaceView]:
        places = self.client.places()
        pool = {n: p for n, p in places.items() if matches(p, self.settings.filters)}
        if not pool:
            raise NoFreeBoard(
                f"no place of the coordinator at {self.client.address} matches "
                f"{self.settings.pool} (places: {', '.join(sorted(places)) or 'none'})",
                fix="check connection.labgrid in the device file, or create and tag the "
                "places (labgrid-client -p NAME create / add-match / set-tags)",
            )
        if set(pool) <= held:
            raise NoFreeBoard(
                f"every place matching {self.settings.pool} ({', '.join(sorted(pool))}) "
                "failed in this run",
                fix="see each board's first failure above; repair or power the boards",
            )
        return pool

    def _reserve(self, deadline: float, held: set[str]) -> Lease:
        self._check_pool(held)
        token = self.client.reserve(self.settings.filters, self.settings.prio)
        self.log.info("reservation %s for %s", token, self.settings.pool)
        try:
            while True:
                state = self.client.poll(token)
                if state.state in ("allocated", "acquired") and state.places:
                    place = state.places[0]
                    self.client.acquire(place)
                    return Lease(place, (), token)
                if state.state not in ("waiting",):
                    raise LabError(f"reservation {token} for {self.settings.pool} is {state.state}")
                if time.monotonic() >= deadline:
                    raise self._timed_out(held)
                time.sleep(POLL_S)
        except BaseException:
            self._cancel(token)
            raise

    def _from_tokens(self, deadline: float, held: set[str]) -> Lease:
        while True:
            for token in self.settings.tokens:
                state = self.client.poll(token)
                if state.state in ("expired", "invalid"):
                    raise LabError(
                        f"reservation {token} is {state.state}",
                        fix="reserve again (labgrid-client reserve --wait --shell ...) and "
                        "pass the new LG_TOKEN",
                    )
                places = self.client.places()
                for name in state.places:
                    place = places.get(name)
                    if place is None or place.acquired or name in held:
                        continue
                    try:
                        self.client.acquire(name)
                    except LabError as e:  # taken between look and grab: try the next
                        self.log.info("could not acquire %s: %s", name, e.message)
                        continue
                    return Lease(name, (), None)
            if time.monotonic() >= deadline:
                raise self._timed_out(held)
            time.sleep(POLL_S)

    def ready(self, lease: Lease, wait_s: float = RESOURCES_READY_S) -> Lease:
        """The lease with its resources, once the exporters report every one of them up
        (ser2net started, its port known); BoardNotReady otherwise (the place stays held)."""
        started = time.monotonic()
        while True:
            view = self.client.places().get(lease.place)
            resources = self.client.resources(view) if view else ()
            waiting = [
                r.name
                for r in resources
                if not r.avail or (r.cls == "NetworkSerialPort" and not r.params.get("port"))
            ]
            if view and resources and not waiting:
                self.log.info(
                    "acquired %s (%s)",
                    lease.place,
                    ", ".join(f"{r.cls} {r.name}" for r in resources),
                )
                return Lease(lease.place, resources, lease.token)
            # a place with no resources at all has no exporter behind it: do not wait long
            limit = wait_s if resources else min(wait_s, NO_RESOURCES_S)
            if time.monotonic() - started >= limit:
                what = ", ".join(waiting) if resources else "no resources at all"
                raise BoardNotReady(
                    f"place {lease.place} was acquired but its resources are not up ({what})",
                    fix="check the place's exporter (is it running? its log) and its matches",
                )
            time.sleep(POLL_S)

    def _timed_out(self, held: set[str]) -> NoFreeBoard:
        places = self._check_pool(held)
        busy = ", ".join(f"{n} ({_state(n, p, held)})" for n, p in sorted(places.items()))
        return NoFreeBoard(
            f"no place matching {self.settings.pool} became free within "
            f"{self.settings.wait_s:.0f} s: {busy}",
            fix="wait for the holders, release stale places (labgrid-client -p NAME release "
            "--kick), or raise connection.labgrid.wait_s",
        )

    def release(self, lease: Lease) -> None:
        """Give the place back and cancel hil's own reservation; never raises."""
        try:
            self.client.release(lease.place)
            self.log.info("released %s", lease.place)
        except LabError as e:
            self.log.warning("could not release %s: %s", lease.place, e.message)
        if lease.token is not None:
            self._cancel(lease.token)

    def _cancel(self, token: str) -> None:
        try:
            self.client.cancel(token)
        except LabError as e:
            self.log.debug("could not cancel reservation %s: %s", token, e.message)


def _state(name: str, place: PlaceView, held: set[str]) -> str:
    if name in held:
        return "failed in this run"
    if place.acquired:
        return f"held by {place.acquired}"
    return f"reserved ({place.reservation})" if place.reservation else "free"
