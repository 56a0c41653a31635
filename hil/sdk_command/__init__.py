"""`hil sdk build` and `hil sdk list`: the command line over hil.sdk (above the session, whose
export the suite-collected `--ops-from` uses)."""

from __future__ import annotations

import argparse
import os
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hil.devices import DeviceRegistry, DeviceSpec
from hil.errors import UsageError
from hil.sdk.boards import BOARDS, SdkBoard, board_of_preset
from hil.sdk.store import build_line, default_sdk_dir

if TYPE_CHECKING:
    from hil.sdk.sources import Sources

SUITES = "suites"


def add_parser(commands: Any) -> None:
    sdk = commands.add_parser("sdk", help="ExecuTorch built for a board's CPU (and NPU)")
    sdk_commands = sdk.add_subparsers(dest="sdk_command", required=True)
    build = sdk_commands.add_parser(
        "build",
        help="build ExecuTorch and the Ethos-U driver for a board from your checkouts",
        description="Check the source trees, choose the kernels from the programs the board "
        "runs, and build, install and record an SDK in .hil/sdk/ (HIL_SDK_DIR) that the "
        "board's runner links by itself. Nothing is downloaded.",
    )
    build.add_argument(
        "--executorch",
        type=Path,
        required=True,
        metavar="PATH",
        help="an ExecuTorch checkout with its submodules",
    )
    build.add_argument(
        "--cmsis-nn",
        type=Path,
        metavar="PATH",
        help="a CMSIS-NN checkout (default: the one ExecuTorch's examples/arm/setup.sh checks out)",
    )
    build.add_argument(
        "--ethos-u-driver",
        type=Path,
        metavar="PATH",
        help="ethos-u-core-driver, for a board with an NPU (default: setup.sh's)",
    )
    build.add_argument(
        "--cmsis",
        type=Path,
        metavar="PATH",
        help="CMSIS (5 or 6) for the driver's core headers (default: setup.sh's)",
    )
    build.add_argument(
        "--board",
        default="qemu-m55",
        help=f"{', '.join(BOARDS)} or a device name (default qemu-m55)",
    )
    build.add_argument(
        "--ops-from",
        nargs="+",
        metavar="SUITE_OR_PTE",
        help="the programs whose kernels to register: .pte files, or test "
        "paths collected for the board's device (default: suites)",
    )
    build.add_argument(
        "--full", action="store_true", help="with a suite: its cases tagged full too (--hil-full)"
    )
    build.add_argument(
        "--jobs", type=int, default=None, help="parallel compile jobs (default: every core)"
    )
    build.add_argument("--force", action="store_true", help="build again even if built")
    build.add_argument(
        "--keep-build",
        action="store_true",
        help="keep the CMake build trees inside the SDK (for debugging)",
    )
    build.add_argument(
        "--dry-run", action="store_true", help="check and plan, print the commands, build nothing"
    )
    build.set_defaults(run=run_build)
    listing = sdk_commands.add_parser("list", help="the SDKs built here")
    listing.set_defaults(run=run_list)


def resolve_board(name: str, registry: DeviceRegistry | None) -> tuple[SdkBoard, DeviceSpec | None]:
    """`--board NAME`: a board above, or a device whose runner is built for one (its own NPU
    and its suites then decide the SDK). Unknown names are a UsageError listing both kinds."""
    if name in BOARDS:
        board = BOARDS[name]
        known = registry is not None and board.device in registry
        return board, registry.get(board.device) if known and registry is not None else None
    if registry is None or name not in registry:
        devices = ", ".join(s.name for s in registry) if registry is not None else "none"
        raise UsageError(
            f"--board {name}: neither a board ({', '.join(BOARDS)}) nor a known device ({devices})"
        )
    from hil.sdk.firmware import firmware_config

    spec = registry.get(name)
    preset = firmware_config(spec).preset
    served = board_of_preset(preset, spec.npu)
    if served is None:
        raise UsageError(
            f"--board {name}: that device's runner (preset {preset}) is not a bare-metal "
            f"build; an SDK is for {', '.join(BOARDS)} or a device built for one"
        )
    return replace(served, device=spec.name), spec


def _say(line: str) -> None:
    print(f"hil sdk: {line}", flush=True)


def _jobs(value: int | None) -> int:
    if value is not None and value < 1:
        raise UsageError(f"--jobs {value}: give 1 or more")
    return value or len(os.sched_getaffinity(0))


def run_build(args: argparse.Namespace) -> int:
    from hil.device_search import find_devices
    from hil.sdk import build, requests, sources

    found = find_devices(given=getattr(args, "devices", None) or (), say=_say)
    registry, dirs = found.registry, list(found.folders)
    board, spec = resolve_board(args.board, registry)
    trees = sources.resolve(board, args.executorch, args.cmsis_nn, args.ethos_u_driver, args.cmsis)
    # The trees and tools first: a missing piece must not wait behind minutes of export.
    _, cmake_version = sources.cmake_binary()
    sources.check(trees, board, cmake_version)
    device = board.device if spec is None else spec.name
    request = _request_key(args, board, device, trees, dirs)
    if not (args.force or args.dry_run) and (
        sdk := requests.remembered(default_sdk_dir(), request)
    ):
        _say("already built for this very request (sources, suites, hil and tools unchanged)")
        _say(f"next: pytest suites --target={board.device}   (the runner finds this SDK itself)")
        print(sdk.prefix)
        return 0
    programs = _programs(args, device)
    plan = build.plan_sdk(board, trees, programs, jobs=_jobs(args.jobs))
    selection = plan.selection
    _say(
        f"{board.describe()}: {len(selection.portable)} portable operators from "
        f"{len(programs)} programs, {selection.max_kernel_num} kernels in the registry"
    )
    if selection.unavailable:
        _say(
            f"no kernel in this ExecuTorch for {', '.join(selection.unavailable)}: programs "
            "calling them get MISSING KERNEL on the board"
        )
    if args.dry_run:
        for step in plan.steps:
            print(f"# {step.stage}\n{' '.join(step.command)}")
        print(f"# SDK: {plan.prefix}")
        return 0
    done = build.build_sdk(
        plan, _say, device=board.device, force=args.force, keep_build=args.keep_build
    )
    if not done.built_now:
        _say(f"already built: {done.sdk.prefix}")
    _say(
        f"registers {', '.join(selection.portable)} (portable), the quantized, cortex_m and "
        f"prim kernels: {len(selection.registered)} operators"
    )
    requests.remember(default_sdk_dir(), request, done.sdk)
    _say(f"next: pytest suites --target={board.device}   (the runner finds this SDK itself)")
    print(done.sdk.prefix)
    return 0


def _request_key(
    args: argparse.Namespace, board: SdkBoard, device: str, trees: Sources, dirs: list[Path]
) -> str:
    from hil.sdk import build, requests
    from hil.sdk.identity import tree_digest

    memo = default_sdk_dir().resolve() / "trees.json"
    digests = {name: tree_digest(path, memo) for name, path in trees.trees().items()}
    tools = build.tools_for(board)
    return requests.request_key(board, device, digests, tools, _ops_from(args), dirs, args.full)


def _ops_from(args: argparse.Namespace) -> list[str]:
    """What the kernels are chosen from: --ops-from, else ./suites when it is here."""
    return list(args.ops_from or ([SUITES] if Path(SUITES).is_dir() else []))


def _programs(args: argparse.Namespace, device: str) -> list[Path]:
    """The .pte files given, and those of the suites given (default: ./suites)."""
    items = _ops_from(args)
    if not items:
        raise UsageError(
            "no programs to choose kernels from: ./suites is not here",
            fix="pass --ops-from with .pte files or a test folder",
        )
    ptes = [Path(i) for i in items if i.endswith(".pte")]
    for pte in ptes:
        if not pte.is_file():
            raise UsageError(f"--ops-from {pte}: no such file")
    suites = [i for i in items if not i.endswith(".pte")]
    if not suites:
        return ptes
    from hil.sdk_command.suite_programs import suite_programs

    found = suite_programs(suites, device, _say, ["--hil-full"] if args.full else [])
    for check, why in found.failed:
        _say(f"not counted (its export failed, the run will say so): {check}: {why}")
    if found.failed and not found.programs:
        raise UsageError(
            f"none of the {found.checks} programs of {' '.join(suites)} for {device} exported "
            f"(first: {found.failed[0][1]}): an SDK chosen from them would lack their kernels",
            fix="fix the export (the line above) and run the same command again",
        )
    return [*ptes, *found.programs]


def run_list(args: argparse.Namespace) -> int:
    from hil.sdk.store import list_sdks

    sdks = list_sdks()
    if not sdks:
        print(f"no SDK in {default_sdk_dir()}; build one: {build_line(BOARDS['qemu-m55'])}")
        return 0
    for sdk in sdks:
        print(f"{sdk.board:<14} {sdk.device or '-':<12} {sdk.describe()}")
    return 0
