"""Where built runners (and the aarch64 SDK they link) are kept unless told otherwise."""

from __future__ import annotations

import os
from pathlib import Path


def default_firmware_dir() -> Path:
    return Path(os.environ.get("HIL_FIRMWARE_DIR", ".hil/firmware"))
