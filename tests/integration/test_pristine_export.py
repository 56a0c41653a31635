"""hil's speed-ups to torch and ExecuTorch change no program: one small model per recipe exported
with them and pristine (HIL_PRISTINE_EXPORT=1), each in a process of its own, gives the same
.pte and the same side files; a pristine process replaces nothing; a part whose shipped code
changed stays out and the export is still right."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
# every recipe on one target that runs it: (target, recipe)
RECIPES = [
    ("host", "portable"),
    ("host", "xnnpack-fp32"),
    ("host", "xnnpack-int8"),
    ("u55-ref", "ethos-u"),
    ("u85-ref", "ethos-u"),
    ("cortex-m55-ref", "cortex-m"),
    ("tosa-fp-ref", "tosa-fp"),
    ("vgf-emu", "vgf"),
    ("vgf-emu", "vgf-fp"),
]
# side files whose bytes are the program's (logs, timings and the record itself are not)
PROGRAM_FILES = ("model.pte", "delegates/*/out.tosa", "delegates/*/out.vgf", "host_program.json")

EXPORT = """
import json, sys, torch
from torch import nn
import hil
from hil.devices import DeviceRegistry
from hil.speedups import switch as speedups

class Small(nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.conv = nn.Conv2d(3, 4, 3)
        self.fc = nn.Linear(4 * 6 * 6, 5)

    def forward(self, x):
        return self.fc(torch.relu(self.conv(x)).flatten(1))

from pathlib import Path
registry = DeviceRegistry.from_dirs([Path(sys.argv[1])])
with hil.Session(devices=registry, cache_dir=sys.argv[2], results_dir=sys.argv[3]) as s:
    case = hil.Case("pristine_small", Small, hil.seeded((1, 3, 8, 8)))
    folders = {f"{t}/{r}": str(s.export(case, t, r).folder) for t, r in json.loads(sys.argv[4])}
print(json.dumps({"folders": folders, "installed": speedups.install()}))
"""


def export_all(tmp: Path, pristine: bool) -> dict[str, object]:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    env.pop("HIL_PRISTINE_EXPORT", None)
    if pristine:
        env["HIL_PRISTINE_EXPORT"] = "1"
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            EXPORT,
            str(REPO / "devices"),
            str(tmp / ("cache-pristine" if pristine else "cache-patched")),  # no store shared
            str(tmp / ("pristine" if pristine else "patched")),
            json.dumps(RECIPES),
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=1800,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    answer: dict[str, object] = json.loads(done.stdout.strip().splitlines()[-1])
    return answer


def program_bytes(folder: Path) -> dict[str, str]:
    return {
        str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
        for pattern in PROGRAM_FILES
        for p in sorted(folder.glob(pattern))
    }


@pytest.fixture(scope="module")
def both(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, object], dict[str, object]]:
    tmp = tmp_path_factory.mktemp("pristine")
    return export_all(tmp, pristine=False), export_all(tmp, pristine=True)


def test_every_recipe_gives_the_same_program_with_and_without_the_speedups(
    both: tuple[dict[str, object], dict[str, object]],
) -> None:
    patched, pristine = both
    assert patched["installed"] and pristine["installed"] == {}
    for key in patched["folders"]:  # type: ignore[attr-defined]
        a = Path(patched["folders"][key])  # type: ignore[index]
        b = Path(pristine["folders"][key])  # type: ignore[index]
        assert a != b, f"{key}: a pristine run reused the patched export"
        assert program_bytes(a) == program_bytes(b), key
        assert "model.pte" in program_bytes(a)
        made = json.loads((a / "artifact.json").read_text())
        assert made["details"]["speedups"] == patched["installed"]
        assert json.loads((b / "artifact.json").read_text())["details"]["speedups"] == {}


def test_the_quantized_store_keys_the_declared_speedups_too(
    both: tuple[dict[str, object], dict[str, object]],
) -> None:
    """histogram_search replaces calibration's search: its entries must not serve a pristine run
    (each mode has a cache of its own here, so the keys are compared, not the reuse)."""
    patched, pristine = both
    a = Path(next(iter(patched["folders"].values()))).parents[1]  # type: ignore[attr-defined]
    b = Path(next(iter(pristine["folders"].values()))).parents[1]  # type: ignore[attr-defined]
    stores = [
        sorted(p.name for p in (c / "shared" / "quantized").iterdir() if p.name != "locks")
        for c in (a, b)
    ]
    assert stores[0] and stores[1] and not set(stores[0]) & set(stores[1]), stores


CHECK_ORIGINALS = """
import json, torch
from torch._export import utils
from torch._export.serde import serialize
from torch._ops import OperatorBase
from torch.export import exported_program
from torch.fx import graph_module, traceback
import typing, copy
from hil.speedups import switch as speedups
from hil.speedups import cia_override
speedups.install()
import executorch.exir.pass_base as pass_base
replaced = {
    "collect": hasattr(utils._collect_all_valid_cia_ops, "__wrapped__"),
    "preserve": hasattr(utils._check_valid_to_preserve, "__wrapped__"),
    "py_impl": hasattr(OperatorBase.py_impl, "__wrapped__"),
    # torch's own is a contextmanager (it has a __wrapped__): told apart by identity
    "override": exported_program._override_composite_implicit_decomp
                is cia_override.override_composite_implicit_decomp,
    "fx": hasattr(graph_module._exec_with_source, "__wrapped__"),
    "provenance": traceback.copy is not copy,
    "pass": hasattr(pass_base._ExportPassBase.__init__, "__wrapped__"),
    "typing": vars(serialize)["typing"] is not typing,
}
print(json.dumps(replaced))
"""


@pytest.mark.parametrize("pristine", [True, False])
def test_a_pristine_process_runs_torch_and_executorch_as_shipped(pristine: bool) -> None:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    env["HIL_PRISTINE_EXPORT"] = "1" if pristine else ""
    done = subprocess.run(
        [sys.executable, "-c", CHECK_ORIGINALS],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
        check=True,
    )
    replaced = json.loads(done.stdout.strip().splitlines()[-1])
    if pristine:
        assert not any(replaced.values()), replaced
    else:
        assert all(replaced.values()), replaced


CHANGED_TORCH = """
import json, torch
from torch._export import utils
shipped = utils._check_valid_to_preserve

def _check_valid_to_preserve(op):  # a torch patch release's version: other code, same answers
    answer = shipped(op)
    return bool(answer)

utils._check_valid_to_preserve = _check_valid_to_preserve
import hil
from hil.speedups import switch as speedups
installed = speedups.install()
x = torch.randn(1, 8)
result = hil.check(torch.nn.Sequential(torch.nn.Linear(8, 4), torch.nn.ReLU()), (x,),
                   target="host", recipe="xnnpack-fp32")
print(json.dumps({"installed": sorted(installed), "verdict": result.verdict,
                  "shipped_kept": utils._check_valid_to_preserve is _check_valid_to_preserve}))
"""


def test_a_part_whose_shipped_code_changed_stays_out_and_the_export_is_right(
    tmp_path: Path,
) -> None:
    env = {
        **os.environ,
        "PYTHONPATH": str(REPO),
        "HIL_CACHE_DIR": str(tmp_path / "cache"),
        "HIL_RESULTS_DIR": str(tmp_path / "results"),
        "HIL_DEVICES": str(REPO / "devices"),
    }
    env.pop("HIL_PRISTINE_EXPORT", None)
    done = subprocess.run(
        [sys.executable, "-c", CHANGED_TORCH],
        capture_output=True,
        text=True,
        env=env,
        timeout=900,
        check=False,
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    answer = json.loads(done.stdout.strip().splitlines()[-1])
    assert "preserve-check-once" not in answer["installed"]
    assert "cia-override" in answer["installed"]  # the others, whose code is as shipped
    assert answer["shipped_kept"] and answer["verdict"] == "PASS"
    assert "export speed-up preserve-check-once left out" in done.stderr
