"""LabClient: this process's connection to a labgrid coordinator, through labgrid's ClientSession.

Why labgrid's Python client and not the `labgrid-client` command: one gRPC stream serves the
whole run instead of a Python start-up (about 0.8 s) per command, errors arrive as gRPC status
codes rather than text to parse, and the session keeps a live copy of the places and resources
the coordinator pushes, which is what waiting for an exporter to start ser2net needs. The
session's own methods are written for the command line (they read argparse arguments and
print), so this class calls the coordinator's RPCs on the session's stub and reads the
session's place and resource tables; everything else (stream, keep-alive, updates) is labgrid's.

The session's event loop runs in a daemon thread of its own: the stream stays serviced while
the test process blocks in a model run, and every call is handed to that loop. Everything
returned is a frozen snapshot, never a live labgrid object.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import importlib.util
import logging
import threading
from collections.abc import Callable, Coroutine, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, TypeVar

from hil.errors import TargetUnavailable
from hil.lab.errors import LabError

T = TypeVar("T")
CALL_TIMEOUT_S = 30.0
CHANNEL_OPTIONS = [
    ("grpc.use_local_subchannel_pool", 1),
    ("grpc.keepalive_time_ms", 7500),
    ("grpc.keepalive_timeout_ms", 10000),
    ("grpc.http2.ping_timeout_ms", 10000),
    ("grpc.http2.max_pings_without_data", 0),
]
CONNECT_TIMEOUT_S = 15.0


@dataclass(frozen=True)
class PlaceView:
    name: str
    tags: Mapping[str, str]
    acquired: str | None  # "host/user" of the holder
    reservation: str | None  # the token the place is allocated to
    acquired_resources: tuple[tuple[str, str, str, str], ...]  # (exporter, group, cls, name)


@dataclass(frozen=True)
class ResourceView:
    path: tuple[str, str, str, str]  # (exporter, group, cls, name)
    cls: str
    params: Mapping[str, Any]  # construction arguments, without labgrid's "extra"
    avail: bool

    @property
    def name(self) -> str:
        return self.path[3]


@dataclass(frozen=True)
class ReservationView:
    token: str
    state: str  # waiting, allocated, acquired, expired, invalid
    places: tuple[str, ...]  # allocated places


class LabClient:
    """Connects on `connect()`, never in the constructor; `close()` is safe to call twice."""

    def __init__(self, address: str) -> None:
        self.address = address
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._session: Any = None
        self.log = logging.getLogger(f"hil.lab.LabClient({address})")

    # -- lifecycle -----------------------------------------------------------------------

    def connect(self) -> LabClient:
        if importlib.util.find_spec("labgrid") is None:
            raise TargetUnavailable(
                f"this device is a labgrid place ({self.address}), but labgrid is not installed",
                fix="pip install 'hil[lab]' (make setup does)",
            )
        loop = asyncio.new_event_loop()
        thread = threading.Thread(target=loop.run_forever, name="hil-labgrid", daemon=True)
        thread.start()
        self._loop, self._thread = loop, thread
        try:
            self._session = self._run(self._start(), CONNECT_TIMEOUT_S, "connecting")
        except (LabError, concurrent.futures.TimeoutError) as e:
            self.close()
            raise TargetUnavailable(
                f"the labgrid coordinator at {self.address} does not answer ({e})",
                fix="start it (labgrid-coordinator -l HOST:PORT) or point connection.labgrid."
                "coordinator or $LG_COORDINATOR at the lab's coordinator",
            ) from e
        self.log.info("connected as %s", self.identity)
        return self

    async def _start(self) -> Any:
        import grpc  # type: ignore[import-untyped]
        from labgrid.remote.client import ClientSession, ServerError
        from labgrid.remote.generated.labgrid_coordinator_pb2_grpc import CoordinatorStub

        assert self._loop is not None
        session = ClientSession(self.address, self._loop)
        # A channel of its own: gRPC lets a process's channels to one address share a TCP
        # connection, and the coordinator tells clients apart by connection (a second stream
        # on one is refused), so two clients in one process (two lab targets, a test looking
        # at the lab) each need their own. Keep-alive as labgrid's session sets it.
        shared, session.channel = (
            session.channel,
            grpc.aio.insecure_channel(self.address, options=CHANNEL_OPTIONS),
        )
        session.stub = CoordinatorStub(session.channel)
        await shared.close()
        try:
            await session.start()
        except ServerError as e:
            raise LabError(str(e)) from e
        return session

    def close(self) -> None:
        loop, self._loop = self._loop, None
        session, self._session = self._session, None
        if loop is None:
            return
        if session is not None:
            try:
                asyncio.run_coroutine_threadsafe(self._stop(session), loop).result(5.0)
            except Exception:  # closing a session whose coordinator vanished may fail
                self.log.debug("closing the session failed", exc_info=True)
        loop.call_soon_threadsafe(loop.stop)
        if self._thread is not None:
            self._thread.join(5.0)
            self._thread = None
        if not loop.is_running():
            loop.close()

    @staticmethod
    async def _stop(session: Any) -> None:
        await session.stop()
        await session.close()

    # -- plumbing --------------------------------------------------------------------------

    def _run(self, coro: Coroutine[Any, Any, T], timeout: float, doing: str) -> T:
        if self._loop is None:
            coro.close()
            raise LabError(f"not connected to the coordinator at {self.address}")
        future = asyncio.run_coroutine_threadsafe(coro, self._loop)
        try:
            return future.result(timeout)
        except concurrent.futures.TimeoutError as e:
            future.cancel()
            raise LabError(
                f"the coordinator at {self.address} did not answer within {timeout:.0f} s "
                f"while {doing}"
            ) from e

    def _rpc(self, doing: str, call: Callable[[Any, Any], Any], request: Any) -> Any:
        """One coordinator RPC on the session's stub, then a sync so the pushed updates it
        caused (place acquired, resources started) are in the session's tables."""
        import grpc

        session = self._session

        async def go() -> Any:
            try:
                response = await call(session.stub, request)
            except grpc.aio.AioRpcError as e:
                raise LabError(
                    f"the coordinator at {self.address} refused {doing}: {e.details()}",
                    code=e.code().name,
                ) from e
            await session.sync_with_coordinator()
            return response

        return self._run(go(), CALL_TIMEOUT_S, doing)

    def _read(self, fn: Callable[[Any], T]) -> T:
        """Read the session's tables on its own loop, where they are updated."""
        session = self._session

        async def go() -> T:
            return fn(session)

        return self._run(go(), CALL_TIMEOUT_S, "reading places")

    @property
    def identity(self) -> str:
        """The "host/user" name the coordinator knows this client by (LG_HOSTNAME, LG_USERNAME)."""
        return self._read(lambda s: f"{s.gethostname()}/{s.getuser()}")

    # -- reading ---------------------------------------------------------------------------

    def sync(self) -> None:
        self._run(self._session.sync_with_coordinator(), CALL_TIMEOUT_S, "syncing")

    def places(self) -> dict[str, PlaceView]:
        return self._read(lambda s: {name: _place(p) for name, p in s.places.items()})

    def exported(self) -> tuple[ResourceView, ...]:
        """Every resource the exporters offer, acquired or not."""

        def collect(s: Any) -> tuple[ResourceView, ...]:
            return tuple(
                ResourceView(
                    (exporter, group, entry.cls, name),
                    entry.cls,
                    MappingProxyType(dict(entry.args)),
                    bool(entry.avail),
                )
                for exporter, groups in s.resources.items()
                for group, entries in groups.items()
                for name, entry in entries.items()
                if "cls" in entry.data  # a deleted resource leaves an empty entry
            )

        return self._read(collect)

    def resources(self, place: PlaceView) -> tuple[ResourceView, ...]:
        """The resources the place acquired, as the exporters describe them now."""

        def collect(s: Any) -> tuple[ResourceView, ...]:
            found = []
            for path in place.acquired_resources:
                exporter, group, cls, name = path
                entry = s.resources.get(exporter, {}).get(group, {}).get(name)
                if entry is not None and entry.data.get("cls") == cls:
                    found.append(
                        ResourceView(
                            path, cls, MappingProxyType(dict(entry.args)), bool(entry.avail)
                        )
                    )
            return tuple(found)

        return self._read(collect)

    # -- places and reservations -----------------------------------------------------------

    def acquire(self, place: str) -> None:
        from labgrid.remote.generated import labgrid_coordinator_pb2 as pb

        self._rpc(
            f"acquiring place {place}",
            lambda stub, r: stub.AcquirePlace(r),
            pb.AcquirePlaceRequest(placename=place),
        )

    def release(self, place: str) -> None:
        from labgrid.remote.generated import labgrid_coordinator_pb2 as pb

        self._rpc(
            f"releasing place {place}",
            lambda stub, r: stub.ReleasePlace(r),
            pb.ReleasePlaceRequest(placename=place),
        )

    def reserve(self, filters: Mapping[str, str], prio: float = 0.0) -> str:
        from labgrid.remote.generated import labgrid_coordinator_pb2 as pb

        request = pb.CreateReservationRequest(
            filters={"main": pb.Reservation.Filter(filter=dict(filters))}, prio=prio
        )
        response = self._rpc(
            f"reserving {_tags(filters)}", lambda stub, r: stub.CreateReservation(r), request
        )
        return str(response.reservation.token)

    def poll(self, token: str) -> ReservationView:
        """The reservation's state; polling also keeps a waiting reservation from expiring."""
        from labgrid.remote.common import Reservation
        from labgrid.remote.generated import labgrid_coordinator_pb2 as pb

        response = self._rpc(
            f"polling reservation {token}",
            lambda stub, r: stub.PollReservation(r),
            pb.PollReservationRequest(token=token),
        )
        return _reservation(Reservation.from_pb2(response.reservation))

    def reservations(self) -> tuple[ReservationView, ...]:
        from labgrid.remote.common import Reservation
        from labgrid.remote.generated import labgrid_coordinator_pb2 as pb

        response = self._rpc(
            "listing reservations",
            lambda stub, r: stub.GetReservations(r),
            pb.GetReservationsRequest(),
        )
        return tuple(_reservation(Reservation.from_pb2(r)) for r in response.reservations)

    def cancel(self, token: str) -> None:
        from labgrid.remote.generated import labgrid_coordinator_pb2 as pb

        self._rpc(
            f"cancelling reservation {token}",
            lambda stub, r: stub.CancelReservation(r),
            pb.CancelReservationRequest(token=token),
        )

    # -- setting up places (a lab's administration; the virtual rack uses it) --------------

    def add_place(self, name: str) -> None:
        from labgrid.remote.generated import labgrid_coordinator_pb2 as pb

        self._rpc(
            f"adding place {name}", lambda stub, r: stub.AddPlace(r), pb.AddPlaceRequest(name=name)
        )

    def add_match(self, place: str, pattern: str) -> None:
        from labgrid.remote.generated import labgrid_coordinator_pb2 as pb

        self._rpc(
            f"adding match {pattern} to {place}",
            lambda stub, r: stub.AddPlaceMatch(r),
            pb.AddPlaceMatchRequest(placename=place, pattern=pattern),
        )

    def set_tags(self, place: str, tags: Mapping[str, str]) -> None:
        from labgrid.remote.generated import labgrid_coordinator_pb2 as pb

        self._rpc(
            f"tagging {place}",
            lambda stub, r: stub.SetPlaceTags(r),
            pb.SetPlaceTagsRequest(placename=place, tags=dict(tags)),
        )


def _place(place: Any) -> PlaceView:
    return PlaceView(
        name=str(place.name),
        tags=MappingProxyType(dict(place.tags)),
        acquired=place.acquired or None,
        reservation=place.reservation or None,
        acquired_resources=tuple(tuple(p) for p in place.acquired_resources),
    )


def _reservation(res: Any) -> ReservationView:
    places = tuple(name for group in res.allocations.values() for name in group)
    return ReservationView(str(res.token), res.state.name, places)


def _tags(filters: Mapping[str, str]) -> str:
    return " ".join(f"{k}={v}" for k, v in sorted(filters.items()))
