"""A Link over a remote command's stdin/stdout: the runner's stream through an `ssh` process.

It only moves bytes. End of stream means the remote command ended or the connection went;
which of the two it was is for the target to find out (SshConnection.alive()).
"""

from __future__ import annotations

import logging
import os
import select
import subprocess
import time

from hil.errors import LinkTimeout, TransportError
from hil.processes import stop_process


class ProcessLink:
    """Writes to a process's stdin, reads its stdout; closing ends its input (EOF)."""

    def __init__(
        self, process: subprocess.Popen[bytes], name: str, write_timeout_s: float = 30.0
    ) -> None:
        if process.stdin is None or process.stdout is None:
            raise ValueError("the process needs stdin and stdout pipes")
        self.name = name
        self.process = process
        self.write_timeout_s = write_timeout_s
        self._in = process.stdin.fileno()
        self._out = process.stdout.fileno()
        os.set_blocking(self._in, False)
        self.log = logging.getLogger(f"hil.transport.ProcessLink({name})")

    def write(self, data: bytes) -> None:
        view = memoryview(data)
        deadline = time.monotonic() + self.write_timeout_s
        while view:
            try:
                written = os.write(self._in, view)
            except BlockingIOError:
                written = 0
            except (BrokenPipeError, OSError) as e:
                raise TransportError(f"{self.name}: the stream closed while writing: {e}") from e
            view = view[written:]
            if view:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise LinkTimeout(
                        f"{self.name}: the remote side stopped reading; {len(view)} bytes could "
                        f"not be written within {self.write_timeout_s:.0f} s",
                        fix="the runner is stuck or the connection stalled",
                    )
                select.select([], [self._in], [], min(remaining, 0.5))

    def read(self, max_bytes: int, timeout: float) -> bytes:
        ready, _, _ = select.select([self._out], [], [], max(0.0, timeout))
        if not ready:
            return b""
        try:
            data = os.read(self._out, max_bytes)
        except OSError as e:
            raise TransportError(f"{self.name}: read failed: {e}") from e
        if not data:
            raise TransportError(
                f"{self.name}: the stream ended (the remote command exited or "
                "the connection was lost)"
            )
        return data

    def close(self) -> None:
        """End the remote command's input and wait briefly for it to finish; then stop it."""
        process = self.process
        if process.stdin is not None and not process.stdin.closed:
            try:
                process.stdin.close()
            except OSError:
                self.log.debug("closing stdin failed", exc_info=True)
        stop_process(process, grace_s=3, ask=False)  # closing stdin asked it to end
        if process.stdout is not None:
            process.stdout.close()
