"""Where the `hil explore` tests find things."""

from __future__ import annotations

import os
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
# Screenshots are kept for people (CI uploads this folder); override with HIL_TEST_ARTIFACTS.
ARTIFACTS = Path(os.environ.get("HIL_TEST_ARTIFACTS", REPO / ".hil" / "test-artifacts"))
