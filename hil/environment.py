"""Every environment variable of hil's own, in one place: its name, its default and what it
sets. Each is read when it is needed, not at import: a parent process sets some just before
(the pytest plugin exports the options its export and xdist workers must see through these
names, hil.plugin.active), and so do tests. docs/options.md lists them (a docs test checks)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Variable:
    name: str
    default: str
    means: str

    def text(self) -> str:
        return os.environ.get(self.name, self.default)

    def path(self) -> Path:
        return Path(self.text()).expanduser()

    def is_set(self) -> bool:
        return bool(os.environ.get(self.name))

    def on(self) -> bool:
        """A switch: set to anything but empty or 0."""
        return self.text() not in ("", "0")


CACHE_DIR = Variable("HIL_CACHE_DIR", ".hil/cache", "the artifact cache (--hil-cache-dir)")
RESULTS_DIR = Variable(
    "HIL_RESULTS_DIR", ".hil/results", "arrays, run.json, records.jsonl (--hil-results-dir)"
)
DEVICES = Variable(
    "HIL_DEVICES",
    "",
    "more folders of device files, separated by ':', added after --hil-devices and before the "
    "bundled files (hil.device_search)",
)
FIRMWARE_DIR = Variable("HIL_FIRMWARE_DIR", ".hil/firmware", "the runner builds")
SDK_DIR = Variable("HIL_SDK_DIR", ".hil/sdk", "the ExecuTorch SDKs `hil sdk build` makes")
EMU_DIR = Variable("HIL_EMU_DIR", ".hil/emu", "the emulated Pi's disk, sshd and keys")
EXPLORE_DIR = Variable("HIL_EXPLORE_DIR", ".hil/explore", "what `hil explore` serves")
EXPLORER_VENV = Variable(
    "HIL_EXPLORER_VENV", ".venv-explorer", "the venv holding Google's Model Explorer"
)
FVP_DIR = Variable("HIL_FVP_DIR", "", "a folder holding the Corstone FVP binaries")
PRISTINE_EXPORT = Variable(
    "HIL_PRISTINE_EXPORT", "", "1: none of hil's speed-ups installed (--hil-pristine-export)"
)
SPEEDUPS_OFF = Variable(
    "HIL_SPEEDUPS_OFF", "", "speed-up parts to leave out, comma-separated (bench)"
)
UNTESTED_EXECUTORCH = Variable(
    "HIL_UNTESTED_EXECUTORCH", "", "1: run beside an ExecuTorch outside the supported range"
)
SHOW_LIBRARY_NOISE = Variable(
    "HIL_SHOW_LIBRARY_NOISE",
    "",
    "1: show the other libraries' start-up warnings hil's commands keep quiet (hil.quiet)",
)

SIGNING_KEY_PASSWORD = Variable(
    "HIL_SIGNING_KEY_PASSWORD",
    "",
    "the passphrase of an encrypted PEM key given to `hil report --sign` (hil.signing)",
)

VARIABLES = (
    CACHE_DIR,
    RESULTS_DIR,
    DEVICES,
    FIRMWARE_DIR,
    SDK_DIR,
    EMU_DIR,
    EXPLORE_DIR,
    EXPLORER_VENV,
    FVP_DIR,
    PRISTINE_EXPORT,
    SPEEDUPS_OFF,
    UNTESTED_EXECUTORCH,
    SHOW_LIBRARY_NOISE,
    SIGNING_KEY_PASSWORD,
)
