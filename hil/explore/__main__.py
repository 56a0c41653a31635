"""`python -m hil.explore install-viewer [--venv DIR]`: install the viewer ahead of time."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from hil.errors import HilError
from hil.explore.viewer import Viewer, default_venv


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m hil.explore")
    commands = parser.add_subparsers(dest="command", required=True)
    install = commands.add_parser("install-viewer", help="install Model Explorer's tool venv")
    install.add_argument("--venv", type=Path, help="default $HIL_EXPLORER_VENV or .venv-explorer")
    args = parser.parse_args(argv)
    viewer = Viewer(args.venv or default_venv())
    try:
        viewer.ensure(lambda message: print(message, file=sys.stderr, flush=True))
    except HilError as e:
        print(f"hil: error: {e}", file=sys.stderr)
        return 2
    print(viewer.venv)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
