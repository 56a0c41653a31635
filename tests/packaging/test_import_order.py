"""Modules a user may import first do import first, in a fresh interpreter: no import cycle
hides behind the order the rest of hil happens to import things in. (A sweep of every hil
module, one interpreter each, took 2.6 min and found only hil.ethos_u.tosa_delegate, which
cycled through hil.recipes; these are that module and the doors users name.)"""

from __future__ import annotations

import subprocess
import sys

import pytest

FIRST_IMPORTS = (
    "hil.ethos_u.tosa_delegate",
    "hil.targets.ethos_u_ref",
    "hil.recipes.host_program",
    "hil.session",
    "hil.explain.tosa",
)


@pytest.mark.parametrize("module", FIRST_IMPORTS)
def test_module_imports_first_in_a_fresh_interpreter(module: str) -> None:
    done = subprocess.run(
        [sys.executable, "-c", f"import {module}"], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr.strip().splitlines()[-1:]
