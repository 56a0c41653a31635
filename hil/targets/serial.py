"""SerialTarget (kind "serial"): the hil runner on the other end of a serial link.

The board may be real (a port URL, flashed by a pluggable step when its runner's build id is
not the one built for this device file), the host runner on a pseudo-terminal (the virtual
board `vboard`), or the bare-metal runner in QEMU. Whatever it is, this class only opens the
port URL the board gives and speaks the runner protocol over it.

Device file, `connection` keys:

    port: /dev/ttyACM0        a device node, a pty, socket://HOST:PORT, rfc2217://HOST:PORT,
                              telnet://HOST:PORT (ser2net's telnet port, as labgrid exports it)
    virtual: host-runner      or qemu-mps3-an547: a local stand-in instead of a port
    baudrate: 115200
    firmware: host            preset in firmware/CMakePresets.json, or {preset, defines}
    flash: {command: [pyocd, flash, "{image}"]}   or {labgrid: {config, target, driver}}
    reset_command: [...]      how to reset a real board after flashing
    runner_args: [...]        extra arguments for a virtual board's runner
    reply_timeout_s, bytes_per_s, run_timeout_s, retries    waits and repeats (LinkPolicy)
    model_load: auto          how a model reaches the runner: link (LOAD chunks over the serial
                              line), file (LOAD_FILE: the runner reads the host's file, through
                              semihosting on bare metal), auto (file when the runner offers it
                              and is QEMU on this machine; else link)
    semihosting: true         QEMU: serve semihosting (false: as a board without a debugger)

Failures are classified for the session: a runner that died or faulted is a TargetCrash
carrying its last log lines (the session starts it afresh for the next case); a runner that
is alive but silent, or a link that fails, is an InfrastructureError (the target goes out of
service with that first cause).
"""

from __future__ import annotations

import contextlib
import statistics
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

from hil.arrays import to_array
from hil.artifacts.store import Artifact
from hil.case import Inputs
from hil.devices import DeviceSpec, TimingPolicy
from hil.errors import (
    CaseError,
    DeployError,
    DeviceSpecError,
    InfrastructureError,
    TargetCrash,
    TargetUnavailable,
)
from hil.runner import firmware
from hil.runner import messages as m
from hil.runner.client import LinkPolicy, LoadOutcome, RunnerClient
from hil.runner.file_load import load_file
from hil.runner.pools import check_fits, pool_counters
from hil.targets.base import Deployment, RunResult, Target
from hil.targets.board import Board, PortBoard, make_board, string_list
from hil.targets.flashing import make_flasher
from hil.transports import Link
from hil.transports.serial_link import SerialLink
from hil.transports.telnet_link import SCHEME as TELNET
from hil.transports.telnet_link import TelnetLink

R = TypeVar("R")
DEFAULT_PRESET = {"host-runner": "host", "qemu-mps3-an547": "cortex-m55"}


class SerialTarget(Target):
    _board: Board
    _link: Link | None
    _client: RunnerClient
    _info: m.RunnerInfo
    _runner: firmware.BuiltRunner | None

    # -- lifecycle -------------------------------------------------------------------------

    def _provision(self) -> None:
        self._methods: dict[str, m.MethodInfo] = {}
        self._held: str | None = None
        self._link = None
        self._runner, self._board = prepare_board(self.spec)
        try:
            self._connect()
            self._info = self._ensure_build(self._info)
        except BaseException:
            self._close()
            raise
        if self._info.engine != m.ENGINE_EXECUTORCH:
            self._close()
            raise TargetUnavailable(
                f"{self.spec.name}: its runner ({self._info.build_id}) was built with the "
                f"{self._info.engine_name} engine, which links no ExecuTorch and cannot run models",
                fix="build the runner with the ExecuTorch engine (EXECUTORCH_ROOT, see "
                "firmware/README.md); the echo build serves `hil selftest` only",
            )

    def _connect(self) -> None:
        url = self._board.start()
        self._link, self._client = open_link(self.spec, url)
        self._info = self._call("the handshake", self._client.hello)
        self._held = self._info.held_sha256 if self._info.holds_model else None
        self.log.info(
            "runner %s on %s (%s, ExecuTorch %s, engine %s)", self._info.build_id, url,
            self._info.platform, self._info.runtime_version, self._info.engine_name,
        )

    def _ensure_build(self, info: m.RunnerInfo) -> m.RunnerInfo:
        """Flash the board if its runner is not the build made for this device file."""
        expected = self._runner.build_id if self._runner else None
        flasher = make_flasher(self.spec)
        if expected is None and (flasher is not None or "firmware" in self.spec.connection):
            expected = firmware.build_id_for(firmware.firmware_config(self.spec))
        if expected is None or info.build_id == expected:
            return info
        if flasher is None:
            self.log.warning(
                "the board runs build %s, this checkout builds %s; using it as it is "
                "(give connection.flash to have it reflashed)", info.build_id, expected,
            )
            return info
        built = firmware.build(firmware.firmware_config(self.spec))
        self.log.info("board runs %s, flashing %s with %s", info.build_id, built.build_id,
                      flasher.describe())
        self._close_link()
        flasher.flash(built.binary)
        if isinstance(self._board, PortBoard):
            self._board.reset()
        self._connect()
        if self._info.build_id != built.build_id:
            raise DeployError(
                f"{self.spec.name}: after flashing {built.binary} the runner still reports build "
                f"{self._info.build_id}, not {built.build_id}",
                fix=f"check the flash step ({flasher.describe()}) and that the board was reset",
            )
        return self._info

    def _close_link(self) -> None:
        link, self._link = self._link, None
        if link is not None:
            link.close()

    def _close(self) -> None:
        self._close_link()
        self._board.stop()

    def _teardown(self) -> None:
        self._close()

    @property
    def board(self) -> Board:
        """What the runner runs on (tests reach a virtual board's process through it)."""
        return self._board

    @property
    def client(self) -> RunnerClient:
        """The protocol client on the board's link: its stats and log, for diagnostics."""
        return self._client

    def describe(self) -> dict[str, str]:
        facts = dict(super().describe())
        info = getattr(self, "_info", None)
        if info is not None:
            facts.update(build_id=info.build_id, platform=info.platform,
                         executorch=info.runtime_version, engine=info.engine_name)
        return facts

    # -- failures --------------------------------------------------------------------------

    def _call(self, doing: str, fn: Callable[..., R], *args: Any) -> R:
        """Run one client call; turn its failure into what the session needs to know."""
        try:
            return fn(*args)
        except TargetCrash as e:
            raise self._crashed(doing, e) from e
        except InfrastructureError as e:
            if self._runner_gone():
                raise self._crashed(doing, e) from e
            where = f"; board log: {self._board.log_path}" if self._board.log_path else ""
            raise type(e)(f"{e.message} (while {doing}{where})", fix=e.fix) from e

    def _runner_gone(self) -> bool:
        wait_exit = getattr(self._board, "wait_exit", None)
        if wait_exit is not None:
            wait_exit(1.0)  # a runner that just faulted takes a moment to die
        return self._board.alive() is False

    def _crashed(self, doing: str, cause: Exception) -> TargetCrash:
        self._runner_gone()
        board_tail = self._board.log_tail()
        client: RunnerClient | None = getattr(self, "_client", None)  # None: died in handshake
        link_tail = "\n".join(client.log_lines) if client is not None else ""
        state = self._board.exit_description()
        reason = (
            cause.message if isinstance(cause, TargetCrash) else f"{type(cause).__name__}: {cause}"
        )
        where = f"; full log: {self._board.log_path}" if self._board.log_path else ""
        return TargetCrash(
            f"{self.spec.name}: the runner crashed while {doing} ({state}): {reason}",
            fix="the next case starts the runner again; the log lines below show its last "
            "words" + where,
            log_tail=board_tail or link_tail,
        )

    # -- deploy and run --------------------------------------------------------------------

    def _loads_files(self) -> bool:
        """Whether models go by LOAD_FILE (the runner reads the host's file) or the link."""
        mode = str(self.spec.connection.get("model_load", "auto"))
        if mode not in ("auto", "file", "link"):
            raise DeviceSpecError(
                f"{self.spec.source}: connection.model_load is {mode!r}; use auto, file or link"
            )
        offered = self._info.file_load
        if mode == "file" and not offered:
            raise DeployError(
                f"{self.spec.name}: connection.model_load is file, but the runner "
                f"({self._info.build_id}) does not offer LOAD_FILE",
                fix="build it with semihosting (HIL_SEMIHOSTING=ON) and serve semihosting "
                "(QEMU -semihosting-config, an FVP, a debugger), or use model_load: link",
            )
        # auto: files for QEMU, whose semihosting reads this machine's disk and whose emulated
        # UART moves 15 KiB/s; the host runner stands in for a board on a serial line, so it
        # keeps the line (ask for `file` to have it read the disk instead)
        emulated = self.spec.connection.get("virtual") == "qemu-mps3-an547"
        return offered and (mode == "file" or (mode == "auto" and emulated))

    def _load(self, path: Path, sha: str, doing: str) -> LoadOutcome:
        data = path.read_bytes()
        # planned and io refused here, with the sizes; the model pool by the load itself
        # (the client checks first, the runner too: "larger than the runner's model pool")
        check_fits(self.spec.name, data,
                   {k: v for k, v in self._info.pools.items() if k != "model"})
        if self._loads_files():
            return self._call(doing, load_file, self._client, str(path.resolve()), sha,
                              len(data))
        return self._call(doing, self._client.load, data, sha)

    def _deploy(self, artifact: Artifact) -> Deployment:
        sha = artifact.sha256
        if self._held == sha and sha in self._methods:
            return Deployment(sha, handle=artifact.pte_path, bytes_sent=0)
        outcome = self._load(artifact.pte_path, sha, f"loading {artifact.pte_path}")
        self._methods[sha] = outcome.method
        self._held = sha
        if outcome.bytes_sent:
            self.log.info("sent %d bytes of %s", outcome.bytes_sent, artifact.pte_path.name)
        return Deployment(sha, handle=artifact.pte_path, bytes_sent=outcome.bytes_sent)

    def _run(self, deployment: Deployment, inputs: Inputs, policy: TimingPolicy) -> RunResult:
        sha = deployment.sha256
        if self._held != sha:  # another model was deployed since: put this one back
            outcome = self._load(deployment.handle, sha, "reloading the model")
            self._methods[sha] = outcome.method
            self._held = sha
        method = self._methods[sha]
        if len(inputs) != len(method.inputs):
            raise CaseError(
                f"the case gives {len(inputs)} inputs, the model on {self.spec.name} takes "
                f"{len(method.inputs)}"
            )
        self._client.take_log()
        for index, (tensor, expected) in enumerate(zip(inputs, method.inputs, strict=True)):
            spec, data = m.from_numpy(tensor.detach().cpu().numpy(), expected.dim_order)
            self._call(f"setting input {index}", self._client.set_input, index, spec, data)
        times = self._call(
            "running the model", self._client.run, policy.warmup, policy.min_runs,
            policy.max_runs, policy.min_time_s, policy.max_time_s,
        )
        outputs = tuple(
            to_array(self._call(f"reading output {i}", self._client.get_output, i))
            for i in range(len(method.outputs))
        )
        pools = self._call("reading memory statistics", self._client.mem_stats)
        counters: dict[str, float] = {"runner_clock_hz": float(times.clock_hz)}
        if times.clock_kind == m.CLOCK_CYCLES and times.ticks:
            counters["cycles_median"] = float(statistics.median(times.ticks))
            if self.spec.connection.get("virtual") == "qemu-mps3-an547" and times.clock_hz:
                # -icount shift=0: one instruction per ns of QEMU's virtual time, which the
                # SysTick cycles follow at the runner's clock rate
                counters["qemu_instructions_median"] = (
                    counters["cycles_median"] * 1e9 / float(times.clock_hz))
        counters.update(pool_counters(pools))
        return RunResult(
            outputs=outputs, timings_us=times.micros, timing=self.spec.latency.timing,
            counters=counters, log="\n".join(self._client.take_log()),
        )


def prepare_board(spec: DeviceSpec) -> tuple[firmware.BuiltRunner | None, Board]:
    """The board of a serial device file, with its runner built first if the board is virtual."""
    virtual = spec.connection.get("virtual")
    runner = None
    if virtual is not None:
        preset = DEFAULT_PRESET.get(str(virtual), "host")
        runner = firmware.build(firmware.firmware_config(spec, preset))
    board = make_board(spec, runner.binary if runner else None, string_list(spec, "runner_args"))
    return runner, board


def open_link(spec: DeviceSpec, url: str) -> tuple[Link, RunnerClient]:
    """A client on any port URL: telnet:// through hil's telnet link, the rest through pyserial."""
    if url.startswith(f"{TELNET}://"):
        link = TelnetLink(url).open()
        return link, RunnerClient(link, name=spec.name, policy=link_policy(spec.connection))
    return open_client(spec, url)


def open_client(spec: DeviceSpec, url: str) -> tuple[SerialLink, RunnerClient]:
    link = SerialLink(url, baudrate=int(spec.connection.get("baudrate", 115200))).open()
    return link, RunnerClient(link, name=spec.name, policy=link_policy(spec.connection))


@contextlib.contextmanager
def runner_client(spec: DeviceSpec) -> Iterator[RunnerClient]:
    """A started board and a client on its link, for tools (selftest) rather than model runs."""
    _, board = prepare_board(spec)
    try:
        link, client = open_link(spec, board.start())
        try:
            yield client
        finally:
            link.close()
    finally:
        board.stop()


def link_policy(connection: Any) -> LinkPolicy:
    """Waits and retries from the device file, with defaults that suit the kind of link."""
    defaults = LinkPolicy()
    try:
        return LinkPolicy(
            reply_timeout_s=float(connection.get("reply_timeout_s", defaults.reply_timeout_s)),
            bytes_per_s=float(connection.get("bytes_per_s", defaults.bytes_per_s)),
            run_timeout_s=float(connection.get("run_timeout_s", defaults.run_timeout_s)),
            retries=int(connection.get("retries", defaults.retries)),
        )
    except (TypeError, ValueError) as e:
        raise DeviceSpecError(f"connection timing keys must be numbers: {e}") from e
