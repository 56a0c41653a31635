"""Serial devices that fail as a lab's do, at the operating-system boundary, for the plugin
and report tests: a board that is not plugged in (its port does not exist: TargetUnavailable)
and a link that is down (nothing answers on its socket: an InfrastructureError). No hil code
is replaced."""

from __future__ import annotations

import socket

GHOST_PORT = "/dev/ttyHIL-ghost-not-connected"

BOARD = """
name: {name}
kind: serial
description: {description}
recipes: {recipes}
latency: {{warmup: 1, min_runs: 3, min_time_s: 0.005, max_runs: 20}}
connection: {{port: "{port}", reply_timeout_s: 2}}
"""


def refused_port() -> str:
    """A loopback socket URL nothing listens on (the port was free a moment ago)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"socket://127.0.0.1:{port}"


def board_file(name: str, port: str, recipes: str = "[portable]", description: str = "") -> str:
    """A serial device file on `port`."""
    return BOARD.format(name=name, port=port, recipes=recipes, description=description or name)
