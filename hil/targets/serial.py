"""SerialTarget (kind "serial"): hil's runner on the other end of a serial link.

A board (hil.resources.boards: a real board on a port URL, the host runner on a pty, the
bare-metal runner in QEMU) as the site of a RunnerTarget (hil/targets/runner_target.py: the
driver, deploy, run and the failure classes every runner kind shares). What is this kind's
own: building the runner of a virtual board, flashing a real board whose runner is not the
build made for its device file, choosing how models reach the runner (the line, or LOAD_FILE
where the runner reads this machine's disk), and refusing a runner with the echo engine for
model runs. Connection keys: hil/settings/serial.py.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator

from hil.artifacts.store import Artifact
from hil.devices import DeviceSpec
from hil.errors import (
    DeployError,
    DeviceSpecError,
    HilError,
    InfrastructureError,
    TransportError,
)
from hil.resources.boards import Board, PortBoard, PortLost, make_board
from hil.resources.flashing import make_flasher
from hil.runner import messages as m
from hil.runner.client import RunnerClient
from hil.runner.driver import DeviceTrace, Files, RunnerRun, local_files
from hil.runner.kernels import KernelList
from hil.sdk import firmware
from hil.settings.serial import ModelLoad, SerialSettings, VirtualBoard
from hil.targets.runner_target import RunnerTarget
from hil.transports import Link
from hil.transports.serial_link import SerialLink
from hil.transports.telnet_link import SCHEME as TELNET
from hil.transports.telnet_link import TelnetLink


def serial_settings(spec: DeviceSpec) -> SerialSettings:
    if not isinstance(spec.settings, SerialSettings):
        raise DeviceSpecError(f"{spec.source}: {spec.name} is a {spec.kind} device, not serial")
    return spec.settings


class SerialTarget(RunnerTarget):
    def __init__(self, spec: DeviceSpec) -> None:
        super().__init__(spec)
        self._settings = serial_settings(spec)
        # None until provisioning starts them: a failed provision tears down what it reached
        self._board: Board | None = None
        self._runner: firmware.BuiltRunner | None = None

    # -- lifecycle ---------------------------------------------------------------------------

    def _provision(self) -> None:
        self._runner, self._board = prepare_board(self.spec)
        # a virtual board runs the binary hil built and started; a real one what it was flashed
        # with, known only once hil flashes it (_ensure_build)
        self._expect_runner(self._expected_build(), self._runner.binary if self._runner else None)
        try:
            info = self._connect()
        except PortLost as lost:  # re-enumerated during the handshake: as under a step
            self.log.warning("%s; reconnecting once", lost.message)
            info = self._connect_when_back()
            self.reconnects += 1
        info = self._ensure_build(info)
        self._require_engine(
            info,
            m.ENGINE_EXECUTORCH,
            fix="build an SDK for the board (hil sdk build, docs/targets/sdk.md) or point "
            "EXECUTORCH_ROOT at an install; the echo build serves `hil selftest` only",
        )
        self.driver.kernels = self._kernel_list(info)

    def _kernel_list(self, info: m.RunnerInfo) -> KernelList | None:
        """The SDK's registered kernels, when the board runs exactly the build made
        against that SDK (a board running another build is judged by its own runner)."""
        if self._runner is None and not self._settings.firmware.preset:
            return None
        config = self._runner.config if self._runner else firmware.firmware_config(self.spec)
        if info.build_id != firmware.build_id_for(config):
            return None
        return firmware.registered_kernels(config)

    def _connect(self) -> m.RunnerInfo:
        url = self.board.start()
        link = open_link(url, self._settings.baudrate)
        info = self._connect_runner(link, self.board, self._settings.policy, self._files())
        self.log.info(
            "runner %s on %s (%s, ExecuTorch %s, engine %s)",
            info.build_id,
            url,
            info.platform,
            info.runtime_version,
            info.engine_name,
        )
        return info

    def _connect_when_back(self) -> m.RunnerInfo:
        """A new link and handshake once the board's port is back: a node that is back but
        cannot be opened yet (udev still setting it up) is tried again within the wait."""
        self._disconnect_runner()
        board = self._board
        if not isinstance(board, PortBoard):
            return self._connect()
        deadline = time.monotonic() + self._settings.port_return_s
        while True:
            board.wait_for_port(
                max(deadline - time.monotonic(), 0.0), whole_s=self._settings.port_return_s
            )
            try:
                return self._connect()
            except TransportError:
                self._disconnect_runner()
                if time.monotonic() >= deadline:
                    raise
                time.sleep(0.2)

    def _reconnect(self) -> None:
        """The port came back (a USB re-enumeration): the same runner, unless the board reset
        and now runs another build; either way the model is sent again."""
        info = self._ensure_build(self._connect_when_back())
        self.driver.kernels = self._kernel_list(info)

    def _stayed_away(self, doing: str, again: HilError) -> InfrastructureError:
        return InfrastructureError(
            f"{self.spec.name}: lost the port {self._settings.port} while {doing}, and could "
            f"not get it back: {again.message}",
            fix="check the board's power and USB cable; the target stays out of service for "
            "the rest of this session",
        )

    def describe(self) -> dict[str, str]:
        facts = super().describe()
        if isinstance(self._board, PortBoard):
            facts["reconnects"] = str(self.reconnects)  # ports that went away and came back
        return facts

    def _files(self) -> Files | None:
        """LOAD_FILE (the runner reads this machine's file) or the line. auto: files for
        QEMU, whose semihosting reads this disk and whose emulated UART moves 15 KiB/s; the
        host runner stands in for a board on a serial line, so it keeps the line."""
        load = self._settings.model_load
        if load is ModelLoad.FILE:
            return local_files(required=True)
        qemu = self._settings.virtual is VirtualBoard.QEMU_MPS3_AN547
        return local_files() if load is ModelLoad.AUTO and qemu else None

    def _expected_build(self) -> str | None:
        """The build id the board should run: the virtual board's build, or the one made for
        this device file when it names a preset or a flash step; None when hil cannot tell (a
        board flashed by someone else, its file naming neither)."""
        if self._runner is not None:
            return self._runner.build_id
        if self._settings.flash is not None or self._settings.firmware.preset:
            return firmware.build_id_for(firmware.firmware_config(self.spec))
        return None

    def _ensure_build(self, info: m.RunnerInfo) -> m.RunnerInfo:
        """Flash the board if its runner is not the build made for this device file."""
        expected = self._expected_build_id
        if expected is None or info.build_id == expected:
            return info
        flasher = make_flasher(self._settings.flash)
        if flasher is None:  # the run goes on; the records show both ids (describe)
            self.log.warning(
                "the board runs build %s, this checkout builds %s; using it as it is "
                "(give connection.flash to have it reflashed)",
                info.build_id,
                expected,
            )
            return info
        built = firmware.build(firmware.firmware_config(self.spec))
        self.log.info(
            "board runs %s, flashing %s with %s", info.build_id, built.build_id, flasher.describe()
        )
        self._disconnect_runner()
        flasher.flash(built.binary)
        self._expect_runner(built.build_id, built.binary)
        if isinstance(self._board, PortBoard):
            self._board.reset()
        info = self._connect()
        if info.build_id != built.build_id:
            raise DeployError(
                f"{self.spec.name}: after flashing {built.binary} the runner still reports build "
                f"{info.build_id}, not {built.build_id}",
                fix=f"check the flash step ({flasher.describe()}) and that the board was reset",
            )
        return info

    def _teardown(self) -> None:
        self._disconnect_runner()
        if self._board is not None:
            self._board.stop()

    @property
    def board(self) -> Board:
        """What the runner runs on (tests reach a virtual board's process through it)."""
        if self._board is None:
            raise InfrastructureError(f"{self.spec.name}: the board is not started")
        return self._board

    # -- what only this kind measures ----------------------------------------------------------

    def _instructions_per_tick(self, clock_hz: int) -> float | None:
        """On QEMU (-icount shift=0) a ns of virtual time is one instruction, which the SysTick
        cycles follow at the runner's clock rate; None on any other board."""
        if self._settings.virtual is VirtualBoard.QEMU_MPS3_AN547 and clock_hz:
            return 1e9 / float(clock_hz)
        return None

    def clock_of(self, trace: DeviceTrace) -> tuple[str, float]:
        """On QEMU the profile counts instructions."""
        per_tick = self._instructions_per_tick(trace.clock_hz)
        return ("QEMU instructions", per_tick) if per_tick else super().clock_of(trace)

    def _counters(self, artifact: Artifact, run: RunnerRun) -> dict[str, float]:
        counters = run.counters()
        per_tick = self._instructions_per_tick(run.times.clock_hz)
        if per_tick and "cpu_cycles" in counters:
            counters["qemu_instructions_median"] = counters["cpu_cycles"] * per_tick
        return counters


def prepare_board(spec: DeviceSpec) -> tuple[firmware.BuiltRunner | None, Board]:
    """The board of a serial device file, with its runner built first if the board is virtual."""
    settings = serial_settings(spec)
    runner = None
    if settings.virtual is not None:
        runner = firmware.build(firmware.firmware_config(spec))
    board = make_board(spec.name, settings, runner.binary if runner else None, spec.source)
    return runner, board


def open_link(url: str, baudrate: int = 115200) -> Link:
    """A link on any port URL: telnet:// through hil's telnet link, the rest through pyserial."""
    if url.startswith(f"{TELNET}://"):
        return TelnetLink(url).open()
    return SerialLink(url, baudrate=baudrate).open()


def client_on(spec: DeviceSpec, url: str) -> tuple[Link, RunnerClient]:
    """A bare protocol client on a board's port, with the device's baud rate and waits (for
    tools and bring-up tests; model runs go through the driver)."""
    settings = serial_settings(spec)
    link = open_link(url, settings.baudrate)
    return link, RunnerClient(link, name=spec.name, policy=settings.policy)


@contextlib.contextmanager
def runner_client(spec: DeviceSpec) -> Iterator[RunnerClient]:
    """A started board and a client on its link, for tools (selftest) rather than model runs."""
    _, board = prepare_board(spec)
    try:
        link, client = client_on(spec, board.start())
        try:
            yield client
        finally:
            link.close()
    finally:
        board.stop()
