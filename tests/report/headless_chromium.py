"""Debian's chromium, headless, driven over the DevTools protocol on a pipe (no websocket, no
driver download): Chromium reads JSON commands from fd 3 and writes replies to fd 4, each
message ended by a NUL byte.
"""

from __future__ import annotations

import base64
import json
import os
import select
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--host-resolver-rules=MAP * ~NOTFOUND",  # nothing resolves: a report must need no network
    "--window-size=1400,1000",
    "--remote-debugging-pipe",
)


def executable() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


class ChromiumError(RuntimeError):
    pass


class Chromium:
    """One browser process; `open` a page, `evaluate` JavaScript in it, `screenshot` it."""

    def __init__(self, binary: str, profile: Path) -> None:
        self.binary = binary
        self.profile = profile
        self._proc: subprocess.Popen[bytes] | None = None
        self._to_browser = -1
        self._from_browser = -1
        self._buffer = b""
        self._next_id = 0

    def __enter__(self) -> Chromium:
        to_read, to_write = os.pipe()  # commands: we write, chromium reads fd 3
        from_read, from_write = os.pipe()  # replies: chromium writes fd 4, we read

        def child_fds() -> None:
            a, b = os.dup(to_read), os.dup(from_write)  # dup first: targets may be 3/4 already
            os.dup2(a, 3)
            os.dup2(b, 4)

        self._proc = subprocess.Popen(
            [self.binary, *FLAGS, f"--user-data-dir={self.profile}", "about:blank"],
            preexec_fn=child_fds,
            close_fds=False,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        os.close(to_read)
        os.close(from_write)
        self._to_browser, self._from_browser = to_write, from_read
        return self

    def __exit__(self, *exc: object) -> None:
        try:
            if self._proc is not None and self._proc.poll() is None:
                self.call("Browser.close", timeout=10)
                self._proc.wait(timeout=10)
        except (ChromiumError, subprocess.TimeoutExpired, OSError):
            if self._proc is not None:
                self._proc.kill()
                self._proc.wait()
        finally:
            for fd in (self._to_browser, self._from_browser):
                if fd >= 0:
                    os.close(fd)

    def call(
        self,
        method: str,
        params: dict[str, Any] | None = None,
        session: str | None = None,
        timeout: float = 30.0,
    ) -> dict[str, Any]:
        self._next_id += 1
        message: dict[str, Any] = {"id": self._next_id, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = session
        os.write(self._to_browser, json.dumps(message).encode() + b"\0")
        deadline = time.monotonic() + timeout
        while True:
            while b"\0" in self._buffer:
                raw, self._buffer = self._buffer.split(b"\0", 1)
                reply = json.loads(raw)
                if reply.get("id") == self._next_id:
                    if "error" in reply:
                        raise ChromiumError(f"{method}: {reply['error']}")
                    result: dict[str, Any] = reply.get("result", {})
                    return result
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self._from_browser], [], [], left)[0]:
                raise ChromiumError(f"{method}: no answer in {timeout} s")
            chunk = os.read(self._from_browser, 1 << 20)
            if not chunk:
                raise ChromiumError(f"{method}: chromium closed the pipe")
            self._buffer += chunk

    def open(self, url: str, timeout: float = 30.0) -> str:
        """A new page at `url`, once it and its images have loaded; returns its session id."""
        target = self.call("Target.createTarget", {"url": url})["targetId"]
        session = self.call("Target.attachToTarget", {"targetId": target, "flatten": True})[
            "sessionId"
        ]
        deadline = time.monotonic() + timeout
        ready = (  # the new tab starts on about:blank, which is "complete" at once
            f"location.href === {json.dumps(url)} && document.readyState === 'complete'"
            " && [...document.images].every(i => i.complete)"
        )
        while not self.evaluate(session, ready):
            if time.monotonic() > deadline:
                raise ChromiumError(f"{url} did not finish loading in {timeout} s")
            time.sleep(0.1)
        return str(session)

    def evaluate(self, session: str, expression: str) -> Any:
        reply = self.call(
            "Runtime.evaluate", {"expression": expression, "returnByValue": True}, session
        )
        if "exceptionDetails" in reply:
            raise ChromiumError(f"{expression}: {reply['exceptionDetails']}")
        return reply["result"].get("value")

    def screenshot(self, session: str, path: Path) -> Path:
        """The whole page, not just the window."""
        size = self.call("Page.getLayoutMetrics", session=session)["cssContentSize"]
        clip = {"x": 0, "y": 0, "width": size["width"], "height": size["height"], "scale": 1}
        shot = self.call(
            "Page.captureScreenshot",
            {"format": "png", "captureBeyondViewport": True, "clip": clip},
            session,
            timeout=60,
        )
        path.write_bytes(base64.b64decode(shot["data"]))
        return path
