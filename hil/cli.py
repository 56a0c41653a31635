"""The `hil` command: inspect targets and the cache, build firmware, write reports.

Each subcommand lives in a small function; heavy modules are imported only by the subcommand
that needs them, so `hil targets` answers at once.
"""

from __future__ import annotations

import argparse
import shutil
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from hil import check_command, sdk_command
from hil.device_search import find_devices
from hil.devices import DeviceRegistry
from hil.errors import HilError
from hil.explore import command as explore_command
from hil.quiet import quiet_library_noise
from hil.report import command as report_command

Command = Callable[[argparse.Namespace], int]


def _registry(args: argparse.Namespace) -> DeviceRegistry:
    return find_devices(given=args.devices or (), say=say_on_stderr).registry


def say_on_stderr(line: str) -> None:
    """A `hil` command's one-line notice (an ignored devices/ folder), on stderr."""
    print(f"hil: {line}", file=sys.stderr)


def cmd_targets(args: argparse.Namespace) -> int:
    """List the device specs and their recipes."""
    registry = _registry(args)
    width = max((len(s.name) for s in registry), default=4)
    for spec in registry:
        recipes = ", ".join(spec.recipe_names)
        print(f"{spec.name:<{width}}  {spec.kind:<12} {recipes:<40} {spec.description}")
    return 0


def cmd_cache(args: argparse.Namespace) -> int:
    """Show (or clear) the artifact cache."""
    from hil.session import default_cache_dir

    root = Path(args.cache_dir) if args.cache_dir else default_cache_dir()
    entries = list((root / "artifacts").glob("*/model.pte")) if root.exists() else []
    size = sum(p.stat().st_size for p in entries)
    print(f"{root}: {len(entries)} artifacts, {size / 1e6:.1f} MB")
    if args.clear and root.exists():
        shutil.rmtree(root)
        print(f"removed {root}")
    return 0


def cmd_firmware_build(args: argparse.Namespace) -> int:
    """Build (or reuse) the runner for a target; prints the path of the built runner."""
    from hil.sdk.firmware import build_firmware

    registry = _registry(args)
    result = build_firmware(registry.get(args.target), force=args.force)
    print(result)
    return 0


def cmd_firmware_pools(args: argparse.Namespace) -> int:
    """The smallest runner pools a .pte needs, as a device file's connection.firmware.defines."""
    from hil.runner.pools import needs_of, render

    measured: dict[str, float] = {}
    for item in args.measured or ():
        pool, _, value = item.partition("=")
        measured[pool.strip()] = float(int(value, 0))
    needs = needs_of(Path(args.pte).read_bytes(), measured)
    print(render(needs))
    print("\nconnection:\n  firmware:\n    defines:")
    for key, value in needs.defines(headroom=args.headroom).items():
        print(f'      {key}: "{value}"')
    if needs.method is None or needs.temp is None:
        print(
            "# method and temp: the high-water marks of a run (records.jsonl counters "
            "method_pool_peak_bytes, temp_pool_peak_bytes); give them with --measured"
        )
    return 0


def cmd_selftest(args: argparse.Namespace) -> int:
    """Bring-up checks of a serial target's runner: handshake, transfer, echo, throughput."""
    from hil.runner.selftest import selftest
    from hil.targets.serial import runner_client

    spec = _registry(args).get(args.target)
    with runner_client(spec) as client:
        report = selftest(client)
    print(report.render())
    return 0 if report.ok else 1


def cmd_doctor(args: argparse.Namespace) -> int:
    """What each target needs on this machine, what is missing, and how to fix it."""
    from hil.compat.versions import installed
    from hil.doctor import diagnose, render

    registry = _registry(args)
    specs = [registry.get(name) for name in args.target] if args.target else list(registry)
    diagnoses = [diagnose(spec) for spec in specs]
    found = installed()
    print(f"{found.sentence()}\n")
    print("\n".join(render(diagnoses)))
    ready = all(d.ready for d in diagnoses) and found.supported
    return 1 if args.strict and not ready else 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="hil", description=__doc__)
    parser.add_argument(
        "--devices",
        action="append",
        metavar="DIR",
        help="a folder of device files (repeatable), added to the others: searched after the "
        "project's devices/ and before $HIL_DEVICES and the bundled files; its files override "
        "those of the same name found later (docs/extending.md)",
    )
    commands = parser.add_subparsers(dest="command", required=True)

    targets = commands.add_parser("targets", help="list the targets and their recipes")
    targets.set_defaults(run=cmd_targets)

    cache = commands.add_parser("cache", help="show the artifact cache")
    cache.add_argument("--cache-dir", help="cache folder (default: $HIL_CACHE_DIR or .hil/cache)")
    cache.add_argument("--clear", action="store_true", help="delete every cached artifact")
    cache.set_defaults(run=cmd_cache)

    firmware = commands.add_parser("firmware", help="the ExecuTorch runner in firmware/")
    firmware_commands = firmware.add_subparsers(dest="firmware_command", required=True)
    build = firmware_commands.add_parser("build", help="build the runner for a target")
    build.add_argument("--target", required=True, help="device name, e.g. vboard or pi5")
    build.add_argument("--force", action="store_true", help="rebuild even if cached")
    build.set_defaults(run=cmd_firmware_build)
    pools = firmware_commands.add_parser(
        "pools", help="the smallest runner pools a .pte needs (bare-metal defines)"
    )
    pools.add_argument("pte", help="the model (.pte)")
    pools.add_argument(
        "--measured",
        action="append",
        metavar="POOL=BYTES",
        help="a pool's high-water mark from a run (method, temp)",
    )
    pools.add_argument(
        "--headroom",
        type=float,
        default=0.0,
        help="extra fraction on every pool (default 0: exactly the need)",
    )
    pools.set_defaults(run=cmd_firmware_pools)

    check = commands.add_parser("selftest", help="bring-up checks of a serial target's runner")
    check.add_argument("--target", required=True, help="device name, e.g. qemu-m55 or vboard")
    check.set_defaults(run=cmd_selftest)

    doctor = commands.add_parser("doctor", help="what each target needs here, and the fixes")
    doctor.add_argument("--target", action="append", help="only this target (repeatable)")
    doctor.add_argument(
        "--strict", action="store_true", help="exit 1 when a target is not ready (for CI)"
    )
    doctor.set_defaults(run=cmd_doctor)

    report_command.add_parser(commands)
    sdk_command.add_parser(commands)
    check_command.add_parser(commands)
    explore_command.add_parser(commands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    quiet_library_noise()
    run: Command = args.run
    try:
        return run(args)
    except HilError as e:
        print(f"hil: error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
