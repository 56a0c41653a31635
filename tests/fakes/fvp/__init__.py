"""Install the fake FVP under the real binaries' names in a folder a test puts first on PATH.

Each name is a two-line shell script that runs fake_fvp.py with this interpreter (which has
hil importable, for the runner protocol's framing) and tells it which FVP it stands in for.
"""

from __future__ import annotations

import shlex
import sys
from pathlib import Path

FAKE = Path(__file__).resolve().parent / "fake_fvp.py"
NAMES = ("FVP_Corstone_SSE-300_Ethos-U55", "FVP_Corstone_SSE-320")
LICENCE_ENV = "HIL_FAKE_FVP_LICENCE"  # set: the fake refuses to run for want of a licence
ARTIFACTS_ENV = "HIL_FAKE_FVP_ARTIFACTS"  # artifact caches holding Vela estimates (PMU stand-in)


def install(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for name in NAMES:
        script = folder / name
        script.write_text(
            "#!/bin/sh\n"
            f"HIL_FAKE_FVP_NAME={name} exec {shlex.quote(sys.executable)} "
            f'{shlex.quote(str(FAKE))} "$@"\n'
        )
        script.chmod(0o755)
    return folder
