"""What the environment said before the tests hid it (tests/conftest.py imports this first,
so it is read before any fixture changes the environment)."""

from __future__ import annotations

import os
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
# The SDKs `hil sdk build` made for this checkout; the test run itself sees none by default.
OUTER_SDK_DIR = Path(os.environ.get("HIL_SDK_DIR", str(REPO / ".hil" / "sdk"))).resolve()
