"""The session's targets: provisioned on first use, reused, taken out of service, torn down.

A target that failed to provision stays broken and every later request gets the first cause
again, at once (labgrid's never-retry): a lab rack with a dead board reports one cause per
case in milliseconds instead of waiting out a boot timeout each time. What a failed provision
half-started (an emulator, an sshd, a lease) is torn down before the error leaves the pool.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from hil.devices import DeviceRegistry
from hil.errors import HilError
from hil.lab.open_target import open_target
from hil.progress import Progress, heartbeat
from hil.targets import Target

log = logging.getLogger("hil.session.pool")


class TargetPool:
    def __init__(self, devices: Callable[[], DeviceRegistry], progress: Progress) -> None:
        self._devices = devices
        self._progress = progress
        self._ready: dict[str, Target] = {}
        self._broken: dict[str, HilError] = {}

    def get(self, name: str) -> Target:
        """The provisioned target; provisioned on first use, its first failure remembered."""
        if name in self._broken:
            raise self._broken[name]
        if name not in self._ready:
            spec = self._devices().get(name)
            target = open_target(spec)
            try:
                with heartbeat(self._progress, f"provisioning target {name} ({spec.kind})"):
                    target.provision()
            except HilError as e:  # the target released what it had started (Target.provision)
                self._broken[name] = e
                raise
            self._ready[name] = target
        return self._ready[name]

    def mark_broken(self, name: str, cause: HilError) -> None:
        """Take a target out of service for the rest of the session (first cause wins)."""
        self._broken.setdefault(name, cause)
        self.drop(name)

    def broken_cause(self, name: str) -> HilError | None:
        return self._broken.get(name)

    def reinstate(self, name: str) -> None:
        """Lift an out-of-service mark, so the next use provisions the target afresh (a retry)."""
        self._broken.pop(name, None)
        self.drop(name)

    def drop(self, name: str) -> None:
        """Tear the target down; the next use provisions it afresh (after a runner crash)."""
        target = self._ready.pop(name, None)
        if target is not None:
            target.teardown()

    def board_of(self, name: str) -> str | None:
        """Where the target's next check runs (its labgrid place if it has one, else its
        name); None while it is not provisioned."""
        target = self._ready.get(name)
        return target.describe().get("place", name) if target is not None else None

    def close(self) -> None:
        for target in self._ready.values():
            try:
                target.teardown()
            except Exception:
                log.exception("teardown of %s failed", target.spec.name)
        self._ready.clear()
