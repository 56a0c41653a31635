"""Where built runners (and the aarch64 SDK they link) are kept unless told otherwise."""

from __future__ import annotations

from pathlib import Path

from hil import environment


def default_firmware_dir() -> Path:
    return environment.FIRMWARE_DIR.path()
