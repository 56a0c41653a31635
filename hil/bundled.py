"""The device files and the runner's sources that ship with hil (in a wheel as package data).

In this checkout they are the top-level devices/ and firmware/ folders; pyproject.toml maps
them to the packages hil._devices and hil._firmware, so an installed wheel carries them too.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

from hil.errors import UsageError

CHECKOUT = Path(__file__).resolve().parent.parent  # an editable install or a source tree


def bundled_dir(package: str, checkout_folder: str) -> Path:
    """The folder of a data package (hil._devices, hil._firmware) in an installed wheel, or
    the checkout's own folder when hil runs from its source tree (an editable install)."""
    spec = importlib.util.find_spec(package)
    locations = list(spec.submodule_search_locations or []) if spec else []
    if not locations and (CHECKOUT / checkout_folder).is_dir():
        return CHECKOUT / checkout_folder
    if not locations:
        raise UsageError(
            f"this installation of hil lacks {package} (its device files or firmware sources)",
            fix="reinstall hil from a wheel built by this checkout (pip install .), or run "
            "from the checkout",
        )
    return Path(locations[0]).resolve()


def devices_dir() -> Path:
    return bundled_dir("hil._devices", "devices")


def firmware_dir() -> Path:
    return bundled_dir("hil._firmware", "firmware")
