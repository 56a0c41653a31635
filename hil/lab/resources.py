"""From a leased place's resources to the device spec of the target that uses them.

Resources hold data only; this module reads them and writes the inner kind's connection keys,
so SerialTarget and SshTarget run unchanged on a board found through labgrid:

    NetworkSerialPort  (an exported RawSerialPort / USBSerialPort, served by ser2net)
                       -> serial `port: telnet://HOST:PORT` (hil's fast telnet link)
    NetworkService     (an SSH service)  -> ssh `host`, `port`, `user`
    power resources    -> hil.lab.power (used by the lab target, not by the inner kind)
"""

from __future__ import annotations

import dataclasses
from types import MappingProxyType
from typing import Any

from hil.devices import DeviceSpec
from hil.errors import DeviceSpecError
from hil.lab.client import ResourceView
from hil.lab.lease import BoardNotReady, Lease
from hil.lab.settings import LabSettings
from hil.transports.telnet_link import telnet_url

LAB_KINDS = ("serial", "ssh")


def _one(lease: Lease, cls: str, name: str | None) -> ResourceView:
    found = [r for r in lease.resources if r.cls == cls and (name is None or r.name == name)]
    if len(found) != 1:
        names = ", ".join(r.name for r in lease.resources if r.cls == cls) or "none"
        which = f" named {name}" if name else ""
        raise BoardNotReady(
            f"place {lease.place} has {len(found)} {cls} resources{which} (it has: {names}); "
            "exactly one is needed",
            fix="add the resource to the place's exporter, or name one with "
            "connection.labgrid.serial",
        )
    return found[0]


def serial_url(lease: Lease, name: str | None = None) -> str:
    resource = _one(lease, "NetworkSerialPort", name)
    return telnet_url(str(resource.params["host"]), int(resource.params["port"]))


def ssh_keys(lease: Lease) -> dict[str, Any]:
    service = _one(lease, "NetworkService", None).params
    return {"host": str(service["address"]), "port": int(service.get("port", 22)),
            "user": str(service["username"])}


def inner_spec(spec: DeviceSpec, settings: LabSettings, lease: Lease) -> DeviceSpec:
    """The device spec of the board behind the lease, as its own kind reads it."""
    connection = dict(settings.inner)
    if spec.kind == "serial":
        connection["port"] = serial_url(lease, settings.serial)
    elif spec.kind == "ssh":
        connection.update(ssh_keys(lease))
    else:
        raise DeviceSpecError(
            f"{spec.source}: kind {spec.kind!r} cannot be reached through labgrid; "
            "connection.labgrid works with kinds " + ", ".join(LAB_KINDS)
        )
    return dataclasses.replace(spec, connection=MappingProxyType(connection))
