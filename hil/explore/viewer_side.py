"""Runs inside the viewer's tool venv (not hil's): converts a .pte to Model Explorer graph JSON.

    <tool venv>/bin/python viewer_side.py convert --pte M.pte --label L --out G.json
                                          [--delegate-file F]...

Only the standard library and the viewer's packages are importable here. The PTE adapter
(pte-adapter-model-explorer) builds the graphs, expanding each Ethos-U delegate from the TOSA
files given as `delegate_file_paths`, in the order hil worked out (hil.explore.delegates).
The result is written as one graph collection, `{"label": L, "graphs": [...]}`, which the
viewer's built-in JSON loader opens and node data can target by that label. A summary line
of JSON on stdout names each graph and its node count.
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib
import json
import sys
from pathlib import Path
from typing import Any

PTE_ADAPTER = "pte_adapter_model_explorer.main"


def convert(pte: Path, delegate_files: list[str], label: str, out: Path) -> dict[str, Any]:
    adapter = importlib.import_module(PTE_ADAPTER).PTEAdapter()
    settings: dict[str, Any] = {"delegate_file_paths": delegate_files}
    result = adapter.convert(str(pte), settings)
    graphs = [dataclasses.asdict(g) for c in result["graphCollections"] for g in c.graphs]
    out.write_text(json.dumps({"label": label, "graphs": graphs}))
    return {"graphs": {g["id"]: len(g["nodes"]) for g in graphs}}


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="viewer_side")
    commands = parser.add_subparsers(dest="command", required=True)
    conv = commands.add_parser("convert")
    conv.add_argument("--pte", required=True, type=Path)
    conv.add_argument("--label", required=True)
    conv.add_argument("--out", required=True, type=Path)
    conv.add_argument("--delegate-file", action="append", default=[])
    args = parser.parse_args(argv)
    summary = convert(args.pte, args.delegate_file, args.label, args.out)
    print(json.dumps(summary))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
