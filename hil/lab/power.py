"""Power: a tiny protocol (on, off, cycle), served by labgrid's own power drivers.

A place's power resource holds data only (a PDU's model, address and outlet); labgrid pairs it
with the driver that has the behaviour (NetworkPowerDriver speaks to the PDU). `LabgridPower`
builds that pair as labgrid would for the place: a labgrid Target holding the resource made
from the coordinator's description, and the driver labgrid binds to it. Nothing here talks to
a PDU itself.
"""

from __future__ import annotations

import logging
from typing import Any, Protocol

from hil.lab.client import ResourceView
from hil.lab.errors import PowerError

# power resource class (as the coordinator names it) -> the labgrid driver bound to it
POWER_DRIVERS = {
    "NetworkPowerPort": "NetworkPowerDriver",
    "PDUDaemonPort": "PDUDaemonDriver",
    "NetworkYKUSHPowerPort": "YKUSHPowerDriver",
    "NetworkUSBPowerPort": "USBPowerDriver",
    "NetworkSiSPMPowerPort": "SiSPMPowerDriver",
}


class Power(Protocol):
    def on(self) -> None: ...

    def off(self) -> None: ...

    def cycle(self) -> None: ...

    def describe(self) -> str: ...


class LabgridPower:
    """The place's power switch through labgrid's driver; built on first use."""

    def __init__(self, place: str, resource: ResourceView, delay_s: float = 1.0) -> None:
        if resource.cls not in POWER_DRIVERS:
            raise ValueError(f"{resource.cls} is not a power resource")
        self.place = place
        self.resource = resource
        self.delay_s = delay_s
        self._driver: Any = None
        self.log = logging.getLogger(f"hil.lab.LabgridPower({place})")

    def describe(self) -> str:
        return f"{POWER_DRIVERS[self.resource.cls]} on {self.resource.cls} {self.resource.name}"

    def _get_driver(self) -> Any:
        if self._driver is None:
            from labgrid import Target
            from labgrid.factory import target_factory

            try:
                target = Target(f"hil-{self.place}")
                target_factory.make_resource(
                    target, self.resource.cls, self.resource.name, dict(self.resource.params)
                )
                driver = target_factory.make_driver(
                    target, POWER_DRIVERS[self.resource.cls], None, {"delay": self.delay_s}
                )
                target.activate(driver)
            except Exception as e:  # labgrid raises its own types from configuration checks
                raise PowerError(
                    f"{self.place}: labgrid cannot drive its power switch ({self.describe()}): "
                    f"{type(e).__name__}: {e}",
                    fix="check the place's power resource in its exporter configuration",
                ) from e
            self._driver = driver
        return self._driver

    def _switch(self, action: str) -> None:
        driver = self._get_driver()
        self.log.info("power %s (%s)", action, self.describe())
        try:
            getattr(driver, action)()
        except Exception as e:  # requests, socket and labgrid errors alike
            raise PowerError(
                f"{self.place}: power {action} failed ({self.describe()}): "
                f"{type(e).__name__}: {str(e)[:160]}",
                fix="check that the PDU is reachable and the outlet is right",
            ) from e

    def on(self) -> None:
        self._switch("on")

    def off(self) -> None:
        self._switch("off")

    def cycle(self) -> None:
        self._switch("cycle")


def place_power(
    place: str, resources: tuple[ResourceView, ...], delay_s: float
) -> LabgridPower | None:
    """The place's power switch, if it has one."""
    for resource in resources:
        if resource.cls in POWER_DRIVERS:
            return LabgridPower(place, resource, delay_s)
    return None
