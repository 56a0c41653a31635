"""From a leased place's resources to the device spec of the target that uses them.

Resources hold data only; this module reads them and fills in the inner kind's settings, so
SerialTarget and SshTarget run unchanged on a board found through labgrid:

    NetworkSerialPort  (an exported RawSerialPort / USBSerialPort, served by ser2net)
                       -> serial `port: telnet://HOST:PORT` (hil's fast telnet link)
    NetworkService     (an SSH service)  -> ssh `host`, `port`, `user`
    power resources    -> hil.lab.power (used by the lab target, not by the inner kind)
"""

from __future__ import annotations

import dataclasses

from hil.devices import DeviceSpec
from hil.errors import DeviceSpecError
from hil.lab.client import ResourceView
from hil.lab.lease import BoardNotReady, Lease
from hil.settings import SerialSettings, SshSettings
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


def ssh_login(lease: Lease) -> tuple[str, int, str]:
    """(host, port, user) of the place's SSH service."""
    service = _one(lease, "NetworkService", None).params
    return str(service["address"]), int(service.get("port", 22)), str(service["username"])


def inner_spec(spec: DeviceSpec, lease: Lease) -> DeviceSpec:
    """The device spec of the board behind the lease, as its own kind reads it."""
    settings = spec.settings
    if isinstance(settings, SerialSettings):
        port = serial_url(lease, settings.labgrid.serial if settings.labgrid else None)
        inner: SerialSettings | SshSettings = dataclasses.replace(settings, port=port, labgrid=None)
    elif isinstance(settings, SshSettings):
        host, port_number, user = ssh_login(lease)
        inner = dataclasses.replace(settings, host=host, port=port_number, user=user, labgrid=None)
    else:
        raise DeviceSpecError(
            f"{spec.source}: kind {spec.kind!r} cannot be reached through labgrid; "
            "connection.labgrid works with kinds " + ", ".join(LAB_KINDS)
        )
    return dataclasses.replace(spec, settings=inner)
