"""LOAD_FILE (protocol 1.1): make a runner hold a model that is already on its own disk.

A Linux board's runner reads the file into its model pool and checks its size and sha256
before it takes it; the bytes travel by whatever copied the file there (SFTP for the Pi), and
a model already on the disk moves none. A runner that holds the model answers at once.
"""

from __future__ import annotations

import struct

from hil.errors import DeployError, ProtocolError
from hil.runner import messages as m
from hil.runner.client import LoadOutcome, RunnerClient


class StaleModelFile(DeployError):
    """The file is missing, or is not the announced model (other size or sha256): copy it."""


def load_file(client: RunnerClient, path: str, sha256: str, size: int) -> LoadOutcome:
    """Ask the runner to load `path` (on its file system), expected to be `size` bytes of
    `sha256`. Refusals come back as the channel's errors (DeployError for a missing, short or
    damaged file)."""
    info = client.info
    if info is None or not info.file_load:
        raise ProtocolError(
            f"{client.name}: the runner cannot load files (protocol "
            f"{info.protocol if info else '?'}, no LOAD_FILE)",
            fix="rebuild the runner for a posix platform (hil firmware build --target NAME)",
        )
    encoded = path.encode()
    request = bytes.fromhex(sha256) + struct.pack("<QH", size, len(encoded)) + encoded
    # The runner sends PROGRESS while it reads; `running` waits on them, not on one deadline.
    try:
        payload = client.request(m.LOAD_FILE, request, reply_size=size // 20, running=True)
    except DeployError as e:
        # load_file.c's words for a file that is not there, or not the announced model
        if "cannot open" in e.message or "announced" in e.message:
            raise StaleModelFile(e.message, fix="copy the file (again)") from e
        raise
    reply = m.Reader(payload, "LOAD_FILE")
    reply.u8()  # 1 when it was held already; nothing moved over the link either way
    return LoadOutcome(0, m.MethodInfo.parse(reply.rest()))
