"""Model Explorer's page in headless Chromium, over the DevTools pipe of tests/report's driver.

The page keeps an event stream open (`/apistream/server_director`), so `chromium --screenshot`
never finishes; the DevTools protocol works. The page draws with WebGL: SwiftShader stands in
for a GPU. Nothing outside 127.0.0.1 resolves, so the page cannot fetch anything from outside.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "report"))

from headless_chromium import Chromium, ChromiumError

FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--enable-unsafe-swiftshader",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1",
    "--window-size=1600,1000",
    "--remote-debugging-pipe",
)


class Page:
    """One tab of a Chromium process showing a URL."""

    def __init__(self, browser: Chromium, url: str) -> None:
        self.browser = browser
        target = browser.call("Target.createTarget", {"url": url})["targetId"]
        self.session = browser.call("Target.attachToTarget", {"targetId": target, "flatten": True})[
            "sessionId"
        ]

    def evaluate(self, expression: str) -> Any:
        """JavaScript in the page; retried while the page is between documents."""
        for _ in range(100):
            try:
                return self.browser.evaluate(self.session, expression)
            except ChromiumError as e:
                if "context" not in str(e):
                    raise
                time.sleep(0.1)
        raise ChromiumError(f"no page to evaluate {expression!r} in")

    def text(self) -> str:
        return str(self.evaluate("document.body ? document.body.innerText : ''"))

    def wait_for_text(self, *needles: str, timeout: float = 60.0) -> str:
        deadline = time.monotonic() + timeout
        while True:
            text = self.text()
            if all(n in text for n in needles):
                return text
            if time.monotonic() > deadline:
                missing = [n for n in needles if n not in text]
                raise AssertionError(f"the page never showed {missing}; it shows:\n{text[:2000]}")
            time.sleep(0.5)

    def screenshot(self, path: Path) -> Path:
        return self.browser.screenshot(self.session, path)


class ExplorerBrowser(Chromium):
    """Chromium with the flags the Model Explorer page needs."""

    def __enter__(self) -> ExplorerBrowser:
        import headless_chromium

        saved = headless_chromium.FLAGS
        headless_chromium.FLAGS = FLAGS
        try:
            super().__enter__()
        finally:
            headless_chromium.FLAGS = saved
        return self

    def page(self, url: str) -> Page:
        return Page(self, url)
