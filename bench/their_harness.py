"""ExecuTorch's own harness over their Arm operator (or model) tests, in parts, each run kept.

Their whole folder (156 files, about 12,000 cases) takes hours in their harness on two cores,
so it runs in parts of a few files, each part one pytest process whose junit file and wall
time are kept under `.hil/bench/theirs/` (`part-<first file>.xml`; each run's own
`parts-<pid>.json`). A later run does only the files no kept part covers, so the side can
be built up over several runs and reused by `bench/executorch_ops_all.py`.

    .venv/bin/python bench/their_harness.py                  # every file not kept yet
    .venv/bin/python bench/their_harness.py --files test_add test_sub --again
    .venv/bin/python bench/their_harness.py --folder models --files test_resnet8

Their model tests (`--folder models`) are kept apart, under `.hil/bench/theirs-models/`; the
files LEFT_OUT (they need a download, or a package not installed here) are not run.

Their harness runs as installed: without an FVP its Ethos-U cases compile through Vela and
fail for want of the FVP (their expected failure); with the ML SDK's model-converter on PATH
(hil's `make` installs it) their VGF cases lower and convert, and the ones that would run on
their Vulkan executor_runner fail for want of it (their expected failure too). Their Ethos-U
cases can never pass here, so by default they are left out (`-k`, SELECTION): an hour or more of
their harness that decides no agreement (hil judges those cases on u55-ref and u85-ref all the
same). Parts kept with another selection say so in their record.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from npu_vs_executorch import REPO, junit_outcomes, pytest_run, their_folder

KEPT = REPO / ".hil" / "bench" / "theirs"  # the ops folder's; another folder's beside it
FOLDERS = ("ops", "models")

_TORCHVISION = "torchvision not installed; and its pretrained {} weights are a download"
_TORCHAUDIO = "torchaudio not installed (its {} is built from a config, no download)"
_DIFFUSERS = "diffusers not installed (its {} is built from a config, no download)"
_LLAMA = (
    "a Llama checkpoint (.pt) and params.json, given by --llama_inputs, not shipped (their "
    "harness skips it: Missing model and/or input files)"
)
# What of a folder is not run here, and why, read from their files (what they import, what they
# load), since nothing may download here: by file ("test_resnet18", given to neither harness) or
# by test ("test_llama::test_llama_tosa_FP", every row: hil deselects it, their harness skips it
# itself, and executorch_ops_all.py counts it on neither side).
LEFT_OUT: dict[str, dict[str, str]] = {
    "models": {
        "test_T5ForConditionalGeneration_arm": "HuggingFace's google-t5/t5-small tokenizer and "
        "weights (from_pretrained: a download)",
        "test_nss": "ng_model_gym not installed; and its weights are a HuggingFace file "
        "(hf_hub_download: a download)",
        "test_deit_tiny_arm": "timm and torchvision not installed; and timm's pretrained "
        "deit_tiny_patch16_224 weights are a download",
        "test_dl3_arm": _TORCHVISION.format("DeepLabV3 (examples' deeplab_v3)"),
        "test_inception_v3_arm": _TORCHVISION.format("Inception_V3"),
        "test_mobilenet_v2_arm": _TORCHVISION.format("MobileNet_V2"),
        "test_mobilenet_v3_arm": _TORCHVISION.format("MobileNet_V3_Small"),
        "test_resnet18": _TORCHVISION.format("ResNet18"),
        "test_conformer": _TORCHAUDIO.format("Conformer"),
        "test_w2l_arm": _TORCHAUDIO.format("Wav2Letter"),
        "stable_diffusion/test_SD3Transformer2DModel": _DIFFUSERS.format("SD3Transformer2DModel"),
        "stable_diffusion/test_vae_AutoencoderKL": _DIFFUSERS.format("AutoencoderKL"),
        # its test_llama_tosa_INT_static row builds a tiny Llama from a config: it runs
        "test_llama::test_llama_tosa_FP": _LLAMA,
        "test_llama::test_llama_tosa_INT": _LLAMA,
        "test_llama::test_llama_tosa_INT_FP_partial_quant": _LLAMA,
        "test_llama::test_llama_vgf_no_quant": _LLAMA,
        "test_llama::test_llama_vgf_quant": _LLAMA,
        "test_llama::test_llama_vgf_quant_partial_quant": _LLAMA,
    },
}
SELECTION = "not u55 and not u85 and not u65"  # their Ethos-U cases: an FVP's, never passed here
# Without their VGF rows too, for runs whose hil side leaves out vgf-emu (those rows are judged
# only there): about half of their time on the other cases (2026-12-05: 353 VGF rows of 748,
# 567 s of 1,130 s, on every eighth file), and 111 of their 3,784 pass in their install.
WITHOUT_VGF = f"{SELECTION} and not vgf"


@dataclass(frozen=True)
class Part:
    """One kept run of their harness."""

    files: list[str]  # under their folder, no suffix: "test_add", "mxfp/test_mxfp_linear"
    junit: str  # file name under its folder's kept_dir
    seconds: float  # the whole run
    start_up: float  # pytest's start-up on the same files with nothing selected
    day: str
    selection: str = ""  # their -k expression ("": every case of the files)


def kept_dir(folder: str = "ops") -> Path:
    """Where `folder`'s parts are kept: a folder's own, since a part names its files relative
    to its folder (the ops folder keeps the place its parts were kept in before)."""
    return KEPT if folder == "ops" else KEPT.with_name(f"theirs-{folder}")


def runnable(files: list[str], folder: str) -> list[str]:
    """`files` without those LEFT_OUT whole (a download, or a package not installed)."""
    return [f for f in files if f not in LEFT_OUT.get(folder, {})]


def all_files(folder: str = "ops") -> list[str]:
    """Their test files as paths under `folder` without ".py" ("test_add",
    "mxfp/test_mxfp_linear")."""
    root = their_folder(folder)
    return sorted(str(p.relative_to(root).with_suffix("")) for p in root.rglob("test_*.py"))


def add_file_options(parser: argparse.ArgumentParser, default: str) -> None:
    """--files, or --files-from a list kept in the repository (bench/ops_sample_1_4.txt)."""
    files = parser.add_mutually_exclusive_group()
    files.add_argument("--files", nargs="+", help=f"their file stems (default: {default})")
    files.add_argument(
        "--files-from",
        type=Path,
        metavar="LIST",
        help="their file stems, one a line ('#' starts a comment)",
    )


def wanted_files(args: argparse.Namespace, folder: str) -> list[str]:
    """The files the options name, or every file of the folder."""
    if args.files_from is not None:
        lines = (line.split("#")[0].strip() for line in args.files_from.read_text().splitlines())
        return [line for line in lines if line]
    return list(args.files or all_files(folder))


def kept_parts(folder: str = "ops") -> list[Part]:
    """Every kept part: the manifest's, and any a run wrote under a name of its own."""
    found: dict[str, Part] = {}
    for manifest in sorted(kept_dir(folder).glob("parts*.json")):
        for entry in json.loads(manifest.read_text()):
            found[entry["junit"]] = Part(**entry)
    return list(found.values())


def save(part: Part, folder: str = "ops") -> None:
    """Add `part` to this run's own manifest (parts-<pid>.json: several runs may share the
    folder, each writing only its own file)."""
    kept_dir(folder).mkdir(parents=True, exist_ok=True)
    own = kept_dir(folder) / f"parts-{os.getpid()}.json"
    parts = json.loads(own.read_text()) if own.exists() else []
    own.write_text(json.dumps([*parts, asdict(part)], indent=1) + "\n")


def covers(part: Part, selection: str) -> bool:
    """Whether a kept part ran every case `selection` asks for (a run with every case, or with
    the default selection, covers one without the VGF rows; not the reverse)."""
    broader = {WITHOUT_VGF: (SELECTION, ""), SELECTION: ("",)}
    return part.selection == selection or part.selection in broader.get(selection, ())


def claim(files: list[str], selection: str = SELECTION, folder: str = "ops") -> list[str]:
    """The files of `files` this run takes: each file is claimed once per selection, by
    whichever run of several sharing the folder gets to it first."""
    claims = kept_dir(folder) / "claims"
    claims.mkdir(parents=True, exist_ok=True)
    tag = "" if selection == SELECTION else f"{hashlib.sha256(selection.encode()).hexdigest()[:8]}-"
    mine = []
    for name in files:
        try:
            (claims / (tag + name.replace("/", "-"))).open("x").close()
        except FileExistsError:
            continue
        mine.append(name)
    return mine


def run_part(
    files: list[str],
    work: Path,
    env: dict[str, str],
    selection: str = SELECTION,
    folder: str = "ops",
) -> Part:
    paths = [str(their_folder(folder) / f"{f}.py") for f in files]
    start = pytest_run(
        f"start-up {files[0].replace('/', '-')}", [*paths, "-k", "no_test_has_this_name"], work, env
    ).seconds
    label = f"part-{files[0].replace('/', '-')}"
    run = pytest_run(label, [*paths, *(["-k", selection] if selection else [])], work, env)
    kept_dir(folder).mkdir(parents=True, exist_ok=True)
    junit = kept_dir(folder) / f"{label}.xml"
    (work / f"{label}.xml").replace(junit)
    return Part(files, junit.name, run.seconds, start, time.strftime("%Y-%m-%d"), selection)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_file_options(parser, "every file")
    parser.add_argument("--part-size", type=int, default=12, help="files a pytest run")
    parser.add_argument("--again", action="store_true", help="rerun files already kept")
    parser.add_argument(
        "-k",
        dest="selection",
        default=SELECTION,
        help=f"their cases to run (default {SELECTION!r}; '' for all)",
    )
    parser.add_argument(
        "--from-end",
        action="store_true",
        help="take parts from the end of the list (a second run beside a first "
        "shares the work: each part is claimed by one run)",
    )
    parser.add_argument("--folder", choices=FOLDERS, default="ops", help="their test folder")
    args = parser.parse_args()
    folder = args.folder
    wanted = runnable(wanted_files(args, folder), folder)
    if args.again:
        shutil.rmtree(kept_dir(folder) / "claims", ignore_errors=True)
    kept = [p for p in kept_parts(folder) if covers(p, args.selection)]
    done = set() if args.again else {f for p in kept for f in p.files}
    todo = [f for f in wanted if f not in done]
    print(f"their harness: {len(wanted)} files, {len(wanted) - len(todo)} kept, {len(todo)} to run")
    work = Path(tempfile.mkdtemp(prefix="hil-theirs-"))
    env = {
        **os.environ,
        "PATH": os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")]),
    }
    chunks = [todo[i : i + args.part_size] for i in range(0, len(todo), args.part_size)]
    for chunk in reversed(chunks) if args.from_end else chunks:
        mine = claim(chunk, args.selection, folder)
        if mine:
            save(run_part(mine, work, env, args.selection, folder), folder)  # kept as it goes
    parts = kept_parts(folder)
    total = sum(len(junit_outcomes(kept_dir(folder) / p.junit)) for p in parts)
    print(f"kept: {len(parts)} parts, {total} cases, under {kept_dir(folder)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
