"""A command's first screen is hil's own: the known start-up noise of torchao, torch's pytree and
ExecuTorch's C++ runtime is kept quiet, anything else still shows, and
HIL_SHOW_LIBRARY_NOISE=1 shows it all."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

NOISY = textwrap.dedent(
    """
    import logging, os, warnings
    from hil.quiet import quiet_library_noise, runtime_start_quietly
    logging.basicConfig()
    quiet_library_noise()
    logging.getLogger("torchao").warning(
        "Failed to load /x/torchao/_C_mxfp8.cpython-310-x86_64-linux-gnu.so: no")
    logging.getLogger("torchao").warning("torchao: something else went wrong")
    logging.getLogger("torch.utils._pytree").warning(
        "<enum 'KernelPreference'> is an Enum subclass and is now natively supported by ...")
    warnings.warn("`isinstance(treespec, LeafSpec)` is deprecated, use ...", FutureWarning)
    with runtime_start_quietly():
        os.write(2, b"[cpuinfo_utils.cpp:71] Reading file /sys/devices/soc0/image_version\\n")
        os.write(2, b"[threadpool.cpp:66] Resetting threadpool to 1 threads.\\n")
        os.write(2, b"[method.cpp:1] a real error from the runtime\\n")
    """
)
KNOWN = ("_C_mxfp8", "Enum subclass", "LeafSpec", "cpuinfo_utils", "Resetting threadpool")
OTHERS = ("something else went wrong", "a real error from the runtime")


def _stderr(show: bool) -> str:
    env = {k: v for k, v in os.environ.items() if k != "HIL_SHOW_LIBRARY_NOISE"}
    if show:
        env["HIL_SHOW_LIBRARY_NOISE"] = "1"
    done = subprocess.run(
        [sys.executable, "-c", NOISY], capture_output=True, text=True, env=env, check=True
    )
    return done.stderr


def test_known_noise_is_quiet_and_everything_else_shows() -> None:
    stderr = _stderr(show=False)
    assert not [k for k in KNOWN if k in stderr], stderr
    assert all(o in stderr for o in OTHERS), stderr


def test_the_switch_shows_the_noise_too() -> None:
    stderr = _stderr(show=True)
    assert all(k in stderr for k in (*KNOWN, *OTHERS)), stderr


def test_hil_checks_first_screen_is_its_own(tmp_path: Path) -> None:
    """The real command on the real stack: `hil check` of a small model on host."""
    (tmp_path / "tiny.py").write_text(
        "import torch\n"
        "def make():\n"
        "    torch.manual_seed(0)\n"
        "    return torch.nn.Sequential(torch.nn.Linear(8, 4), torch.nn.ReLU())\n"
    )
    assert_first_screen_is_hils(
        [
            *(sys.executable, "-m", "hil.cli", "check", f"{tmp_path / 'tiny.py'}:make"),
            *("--input-shape", "1x8", "--target", "host", "--recipe", "portable"),
            *("--cache-dir", str(tmp_path / "cache"), "--results-dir", str(tmp_path / "r")),
        ],
        tmp_path,
    )


def test_a_scripts_first_screen_is_hils_too(tmp_path: Path) -> None:
    """A user's own script: `import hil`, then a Session's check on host."""
    script = tmp_path / "mine.py"
    script.write_text(
        textwrap.dedent(
            f"""
            import torch, hil
            torch.manual_seed(0)
            model = torch.nn.Sequential(torch.nn.Linear(8, 4), torch.nn.ReLU())
            case = hil.case_from_module("tiny", model, (torch.randn(1, 8),))
            with hil.Session(results_dir={str(tmp_path / "r")!r},
                             cache_dir={str(tmp_path / "c")!r}) as session:
                print(session.check(case, "host", "portable").verdict)
            """
        )
    )
    assert_first_screen_is_hils([sys.executable, str(script)], tmp_path)


def assert_first_screen_is_hils(argv: list[str], cwd: Path) -> None:
    """The command checks a model on host and passes; none of the known noise shows."""
    env = {k: v for k, v in os.environ.items() if k != "HIL_SHOW_LIBRARY_NOISE"}
    done = subprocess.run(
        argv, cwd=cwd, capture_output=True, text=True, env=env, timeout=600, check=False
    )
    assert done.returncode == 0, done.stdout + done.stderr
    screen = done.stdout + done.stderr
    assert "PASS" in screen
    assert not [k for k in KNOWN if k in screen], screen
