"""`hil sdk build`: check the trees, plan, run the plan, and leave a finished SDK or nothing.

One call from the user's checkouts to an SDK the runner links: the trees are checked first
(every missing piece at once), the kernels chosen from the programs, the plan's commands run
with a progress line per stage (and the build's own [n/m] count while it compiles), all their
output kept in the SDK's `build.log`. The Ethos-U driver's library and headers are put into
the install (its own install rule names a header it no longer has), the registered kernels
are read back from the build (kernels.json), then `version.txt` and, last, `sdk.json`. A
second call with the same sources, board, kernels and tools finds the SDK and returns at once.
"""

from __future__ import annotations

import json
import logging
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from hil.errors import SdkBuildFailed, SdkSourceMissing
from hil.locks import file_lock
from hil.progress import Progress
from hil.sdk import kernels, sources
from hil.sdk.boards import SdkBoard, command_line
from hil.sdk.firmware import CMAKE_FIX, CMAKE_MINIMUM
from hil.sdk.identity import tree_digest
from hil.sdk.plan import SdkPlan, Step, Tools, find_flatc, has_ninja, make_plan
from hil.sdk.store import KERNELS, LOG, RECORD, Sdk, default_sdk_dir, read_sdk

log = logging.getLogger("hil.sdk")

NINJA_PROGRESS = re.compile(r"^\[(\d+)/(\d+)\]")
MAKE_PROGRESS = re.compile(r"^\[\s*(\d+)%\]")
PROGRESS_EVERY_S = 20.0
DRIVER_HEADERS = "include/*.h"
ETDUMP_HEADERS = Path("devtools/etdump")


@dataclass(frozen=True)
class Built:
    sdk: Sdk
    built_now: bool
    plan: SdkPlan


def tools_for(board: SdkBoard) -> Tools:
    """The tools this machine builds with; SdkSourceMissing when one is missing or too old."""
    cmake, version = sources.cmake_binary()
    flatc = find_flatc()
    problems = []
    if cmake is None or version is None or version < CMAKE_MINIMUM:
        problems.append(CMAKE_FIX)
    if not flatc.is_file():
        problems.append("reinstall the executorch package: it ships data/bin/flatc")
    compiler = shutil.which("arm-none-eabi-gcc")
    if problems or cmake is None or version is None or compiler is None:
        raise SdkSourceMissing(
            "the build tools are incomplete",
            fix="; ".join(problems) or "apt-get install gcc-arm-none-eabi",
        )
    first_line = subprocess.run(
        [compiler, "--version"], capture_output=True, text=True, timeout=30
    ).stdout.splitlines()
    return Tools(
        cmake=cmake,
        cmake_version=f"{version[0]}.{version[1]}",
        compiler_version=first_line[0] if first_line else compiler,
        python=sys.executable,
        flatc=flatc,
        ninja=has_ninja(),
    )


def plan_sdk(
    board: SdkBoard,
    trees: sources.Sources,
    programs: Sequence[Path],
    *,
    jobs: int,
    sdk_root: Path | None = None,
    used: Sequence[str] = (),
) -> SdkPlan:
    """Check everything, choose the kernels and plan the build (nothing is built yet).
    `used` adds operators to those the programs call."""
    root = (sdk_root or default_sdk_dir()).resolve()
    _, version = sources.cmake_binary()
    sources.check(trees, board, version)
    tools = tools_for(board)
    catalogue = kernels.catalogue(trees.executorch)
    wanted: set[str] = set(used)
    for program in programs:
        wanted |= kernels.program_operators(program)
    selection = kernels.select(catalogue, wanted, [str(p) for p in programs])
    memo = root / "trees.json"
    digests = {name: tree_digest(path, memo) for name, path in trees.trees().items()}
    return make_plan(board, trees, selection, tools, digests, root, jobs)


def build_sdk(
    plan: SdkPlan,
    progress: Progress,
    *,
    device: str | None = None,
    force: bool = False,
    keep_build: bool = False,
) -> Built:
    """Run `plan` (or find its SDK already built)."""
    prefix = plan.prefix

    def unwritable(e: OSError) -> SdkBuildFailed:
        return SdkBuildFailed(
            f"cannot write the SDK folder {prefix.parent}: {e}",
            fix="set HIL_SDK_DIR to a writable folder",
        )

    with file_lock(prefix.parent / f"{prefix.name}.lock", unwritable):
        found = read_sdk(prefix)
        if found is not None and not force:
            return Built(found, False, plan)
        if prefix.exists():
            shutil.rmtree(prefix)
        prefix.mkdir(parents=True)
        log_file = prefix / LOG
        started = time.monotonic()
        seconds: dict[str, float] = {}
        if plan.ethos_sdk is not None:
            _ethos_sdk_folder(plan)
        for index, step in enumerate(plan.steps, 1):
            progress(
                f"[{index}/{len(plan.steps)}] {step.stage} "
                f"({_clock(time.monotonic() - started)} in)"
            )
            seconds[step.stage] = _run(step, log_file, progress)
        if plan.board.npu:
            _install_driver(plan)
        _install_etdump_headers(plan)
        catalogue = kernels.catalogue(plan.sources.executorch)
        registered = kernels.built_registrations(plan.executorch_build, catalogue)
        count = kernels.built_kernel_count(registered, catalogue)
        if count > plan.selection.max_kernel_num:
            raise SdkBuildFailed(
                f"the build registers {count} kernels but its registry holds "
                f"{plan.selection.max_kernel_num}: the runtime would abort at boot",
                fix="report this to hil (its kernel count missed a library)",
                log_path=str(log_file),
            )
        trees = {name: str(path) for name, path in plan.sources.trees().items()}
        kernels.write_kernel_list(
            prefix / KERNELS,
            registered,
            plan.selection.max_kernel_num,
            catalogue,
            command_line(trees, plan.board, device),
        )
        _write_version(plan)
        record = _record(plan, device, seconds, time.monotonic() - started)
        (prefix / RECORD).write_text(json.dumps(record, indent=1))
        if not keep_build:
            shutil.rmtree(plan.build_dir, ignore_errors=True)
        sdk = read_sdk(prefix)
        assert sdk is not None
        progress(f"SDK ready in {_clock(time.monotonic() - started)}: {prefix}")
        return Built(sdk, True, plan)


def _clock(seconds: float) -> str:
    minutes, rest = divmod(int(seconds), 60)
    return f"{minutes} min {rest:02d} s" if minutes else f"{rest} s"


def _run(step: Step, log_file: Path, progress: Progress) -> float:
    """Run one command into the log; say how far it is every so often; its seconds."""
    started = time.monotonic()
    with log_file.open("a") as out:
        out.write(f"\n### {step.stage}\n$ {' '.join(step.command)}\n")
        out.flush()
        process = subprocess.Popen(
            step.command,
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
    done = threading.Event()

    def report() -> None:
        while not done.wait(PROGRESS_EVERY_S):
            where = _build_progress(log_file)
            progress(
                f"    {step.stage}: {_clock(time.monotonic() - started)}"
                + (f", {where}" if where else "")
            )

    reporter = threading.Thread(target=report, name="hil-sdk-progress", daemon=True)
    reporter.start()
    try:
        code = process.wait()
    except BaseException:  # Ctrl-C: stop the whole build, not just cmake
        os.killpg(process.pid, signal.SIGTERM)
        process.wait()
        raise
    finally:
        done.set()
        reporter.join()
    if code != 0:
        tail = "\n".join(log_file.read_text(errors="replace").splitlines()[-30:])
        raise SdkBuildFailed(
            f"{step.stage} failed (exit {code}); last lines of {log_file}:\n{tail}",
            fix="the full log is in the file above; fix the cause and run the same "
            "`hil sdk build` again (a failed build leaves no SDK behind)",
            log_path=str(log_file),
        )
    return round(time.monotonic() - started, 1)


def _build_progress(log_file: Path) -> str:
    """The build's own count from the log's last lines: Ninja's [n/m], or Make's [ p%]."""
    try:
        with log_file.open("rb") as f:
            f.seek(max(0, log_file.stat().st_size - 8192))
            lines = f.read().decode(errors="replace").splitlines()
    except OSError:
        return ""
    for line in reversed(lines):
        if found := NINJA_PROGRESS.match(line):
            return f"{found.group(1)}/{found.group(2)} compiled"
        if found := MAKE_PROGRESS.match(line):
            return f"{found.group(1)} %"
    return ""


def _ethos_sdk_folder(plan: SdkPlan) -> None:
    """The layout ExecuTorch's Ethos-U CMake checks: core_platform/ (unused by a library
    build) and core_software/core_driver, linked to the driver given."""
    assert plan.ethos_sdk is not None and plan.sources.ethos_u_driver is not None
    software = plan.ethos_sdk / "core_software"
    software.mkdir(parents=True, exist_ok=True)
    (plan.ethos_sdk / "core_platform").mkdir(exist_ok=True)
    (software / "core_driver").symlink_to(plan.sources.ethos_u_driver, target_is_directory=True)


def _install_driver(plan: SdkPlan) -> None:
    library = next(plan.driver_build.rglob("libethosu_core_driver.a"), None)
    if library is None or plan.sources.ethos_u_driver is None:
        raise SdkBuildFailed(
            f"the Ethos-U driver build in {plan.driver_build} made no libethosu_core_driver.a",
            log_path=str(plan.prefix / LOG),
        )
    (plan.prefix / "lib").mkdir(exist_ok=True)
    shutil.copy2(library, plan.prefix / "lib" / library.name)
    include = plan.prefix / "include"
    include.mkdir(exist_ok=True)
    for header in sorted(plan.sources.ethos_u_driver.glob(DRIVER_HEADERS)):
        shutil.copy2(header, include / header.name)


def _install_etdump_headers(plan: SdkPlan) -> None:
    """ExecuTorch's install has the ETDump libraries (etdump, flatccrt) but not the headers a
    runner includes to make an ETDumpGen: copied from the tree, where they include each other.
    A tree without them still makes an SDK; its runner answers TRACE "unsupported"."""
    source = plan.sources.executorch / ETDUMP_HEADERS
    if not (source / "etdump_flatcc.h").is_file():  # the runner then builds without TRACE
        log.warning("%s has no etdump_flatcc.h: the board's runner will record no ETDump", source)
        return
    for header in sorted(source.rglob("*.h")):
        if "tests" in header.relative_to(source).parts:
            continue
        installed = plan.prefix / "include" / ETDUMP_HEADERS / header.relative_to(source)
        installed.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(header, installed)


def _write_version(plan: SdkPlan) -> None:
    """Line 1 the version, line 2 the commit (or the tree's digest): the runner's handshake
    reports them, so a board says which ExecuTorch it runs."""
    et = plan.sources.executorch
    commit = sources.git_commit(et) or f"tree-{plan.material['trees']['executorch'][:12]}"
    (plan.prefix / "version.txt").write_text(f"{sources.executorch_version(et)}\n{commit}\n")


def _record(
    plan: SdkPlan, device: str | None, seconds: dict[str, float], total: float
) -> dict[str, object]:
    et = plan.sources.executorch
    return {
        "key": plan.key,
        "board": {"name": plan.board.name, "cpu": plan.board.cpu, "npu": plan.board.npu},
        "device": device,
        "version": sources.executorch_version(et),
        "commit": sources.git_commit(et),
        "sources": {name: str(path) for name, path in plan.sources.trees().items()},
        "material": plan.material,
        "kernels": plan.selection.to_json(),
        "seconds": {**seconds, "total": round(total, 1)},
        "built_at": time.time(),
    }
