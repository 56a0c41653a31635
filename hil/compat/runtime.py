"""What an installed ExecuTorch wheel offers a program built outside Python: the posix runner
links the wheel's runtime libraries through its CMake package. ExecuTorch 1.5.1's wheel ships
both (lib/*.so and lib/cmake/executorch); 1.4.1's has only the Python extension, which cannot be
linked into a standalone program, so there the posix runner's targets are unavailable, said so
by version rather than by a failed CMake configure."""

from __future__ import annotations

from pathlib import Path

from hil.compat.versions import installed
from hil.errors import TargetUnavailable

CMAKE_PACKAGE = Path("lib/cmake/executorch/executorch-config.cmake")


def require_runtime_package(root: Path) -> Path:
    """The CMake package of the ExecuTorch wheel at `root`; TargetUnavailable naming the
    version and the missing file when the wheel has none."""
    package = root / CMAKE_PACKAGE
    if package.is_file():
        return package
    raise TargetUnavailable(
        f"{installed().describe()}: the wheel at {root} has no runtime for a program built "
        f"outside Python ({CMAKE_PACKAGE} is missing; ExecuTorch 1.5.1's wheel has it), so the "
        "posix runner cannot be built against it",
        fix="use ExecuTorch 1.5 or later for the runner's targets (vboard, pi5-emu, a Pi), or "
        "pass -DEXECUTORCH_ROOT= a wheel folder that has the package in connection.firmware",
    )
