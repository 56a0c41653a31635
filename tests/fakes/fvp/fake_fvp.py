"""A fake Arm Corstone FVP for hil's tests: it honours the FVP's command-line and output
contract (CONTRACT.md beside this file) and runs the application ELF in QEMU mps3-an547.

It is started through a wrapper named like the real binary (see __init__.py), which sets
HIL_FAKE_FVP_NAME to that name. Nothing here is Arm's: the words of errors the real FVP
prints in its own way are the fake's, and the fake says what it is in its banner.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from uart_bridge import UartBridge

NAME_ENV = "HIL_FAKE_FVP_NAME"
LICENCE_ENV = "HIL_FAKE_FVP_LICENCE"
BANNER = "Fast Models [0.0.0 (hil fake FVP)]\nNot an Arm product: hil's test stand-in (tests/fakes/fvp).\n"


MIB = 1 << 20
# The memories of each platform, secure aliases (the non-secure ones are 0x10000000 lower):
# ExecuTorch's Corstone linker scripts and Zephyr's mps3/mps4 board files (see CONTRACT.md).
SSE300_MEMORY = (
    (0x10000000, MIB // 2),
    (0x11000000, MIB),
    (0x30000000, MIB // 2),
    (0x31000000, 2 * MIB),
    (0x70000000, 0x60000000),
)
SSE320_MEMORY = (
    (0x10000000, 32 << 10),
    (0x11000000, 128 << 10),
    (0x12000000, 2 * MIB),
    (0x30000000, 32 << 10),
    (0x31000000, 4 * MIB),
    (0x70000000, 256 * MIB),
)


@dataclass(frozen=True)
class Platform:
    stat_name: str
    board: str
    cpu: str
    npu: str
    macs: tuple[int, ...]
    extra: tuple[str, ...] = ()
    memory: tuple[tuple[int, int], ...] = SSE300_MEMORY
    initsvtor: int = 0x10000000  # where the core reads its reset vector
    initsvtor_param: str = ""  # the parameter that moves it, where the fake knows one


PLATFORMS = {
    "FVP_Corstone_SSE-300_Ethos-U55": Platform(
        "FVP_MPS3_Corstone_SSE_300", "mps3_board", "cpu0", "ethosu", (32, 64, 128, 256)
    ),
    "FVP_Corstone_SSE-320": Platform(
        "FVP_MPS4_Corstone_SSE_320",
        "mps4_board",
        "mps4_board.subsystem.cpu0",
        "mps4_board.subsystem.ethosu",
        (128, 256, 512, 1024, 2048),
        ("vis_hdlcd.disable_visualisation",),
        memory=SSE320_MEMORY,
        initsvtor=0x11000000,  # its boot ROM
        initsvtor_param="mps4_board.subsystem.iotss3_systemcontrol.INITSVTOR_RST",
    ),
}
QEMU_MEMORY = SSE300_MEMORY  # what QEMU's mps3-an547, which runs the image, has


def load_segments(elf: Path) -> list[tuple[int, int, int]]:
    """(address, bytes in the file, bytes in memory) of each PT_LOAD segment of an ELF32."""
    data = elf.read_bytes()
    if data[:4] != b"\x7fELF" or data[4] != 1:
        raise Refused(f"{elf} is not a 32-bit ELF application")
    (phoff,) = struct.unpack_from("<I", data, 28)
    phentsize, phnum = struct.unpack_from("<HH", data, 42)
    segments = []
    for i in range(phnum):
        kind, _, _, paddr, filesz, memsz = struct.unpack_from("<6I", data, phoff + i * phentsize)
        if kind == 1 and memsz:
            segments.append((paddr, filesz, memsz))
    return segments


def _inside(memory: tuple[tuple[int, int], ...], start: int, size: int) -> bool:
    for origin, length in memory:
        for alias in (origin, origin - 0x10000000):
            if alias <= start and start + size <= alias + length:
                return True
    return False


def check_image(p: Platform, elf: Path, params: dict[str, str]) -> None:
    """Refuse an image this platform could not run: memory it lacks, or no reset vector
    where the core reads it. (A real FVP starts it anyway and the core locks up or faults;
    the fake says why instead, in its own words.) The image must also fit QEMU's map, which
    runs it: an SSE-320 image built for the FVP's own map does not, and is refused as such."""
    vtor = p.initsvtor
    if p.initsvtor_param and p.initsvtor_param in params:
        vtor = int(params[p.initsvtor_param], 0)
    segments = load_segments(elf)
    for addr, _, memsz in segments:
        if not _inside(p.memory, addr, memsz):
            raise Refused(
                f"{elf.name}: a segment at 0x{addr:08x} ({memsz} bytes) lies outside "
                f"the {p.stat_name} memory map"
            )
    aliases = (vtor, vtor - 0x10000000) if vtor >= 0x10000000 else (vtor,)
    if not any(a <= v and v + 8 <= a + filesz for a, filesz, _ in segments for v in aliases):
        hint = f"; -C {p.initsvtor_param} moves it" if p.initsvtor_param else ""
        raise Refused(
            f"{elf.name}: nothing is loaded at 0x{vtor:08x}, where the core reads "
            f"its reset vector (INITSVTOR){hint}"
        )
    qemu_boots = (vtor & ~0x10000000) == 0  # QEMU's SSE-300 boots from ITCM
    for addr, _, memsz in segments:
        if not qemu_boots or not _inside(QEMU_MEMORY, addr, memsz):
            raise Refused(
                f"{elf.name}: fits the {p.stat_name} map, but the fake runs it in "
                "QEMU mps3-an547 (the SSE-300 map, booting from ITCM at 0x10000000), "
                f"which has no memory at 0x{addr:08x} or does not boot from "
                f"0x{vtor:08x}: build it for QEMU's map (CONTRACT.md)"
            )


def known_params(p: Platform) -> list[str]:
    """Parameter-name patterns the fake accepts (a subset of the real model's list)."""
    b, c, n = (re.escape(x) for x in (p.board, p.cpu, p.npu))
    return [
        rf"{n}\.(num_macs|extra_args)",
        rf"{b}\.visualisation\.disable-visualisation",
        rf"{b}\.telnetterminal[0-9]\.(start_telnet|mode|start_port|quiet)",
        rf"{b}\.uart[0-9]\.(out_file|unbuffered_output|shutdown_on_eot|shutdown_tag)",
        rf"{b}\.DISABLE_GATING",
        rf"{c}\.semihosting-(enable|cmd_line|cwd|stack_base|stack_limit|heap_base|heap_limit)",
        rf"{c}\.CFG[ID]TCMSZ",
        *(re.escape(x) for x in p.extra),
        *([re.escape(p.initsvtor_param)] if p.initsvtor_param else []),
    ]


def _die_with_parent() -> None:
    """QEMU must not outlive the fake FVP, whatever kills it (Linux: PR_SET_PDEATHSIG)."""
    import ctypes

    ctypes.CDLL(None).prctl(1, signal.SIGKILL)


class Refused(Exception):
    """The command line is one the FVP would not start with."""


@dataclass
class Options:
    params: dict[str, str] = field(default_factory=dict)
    application: str | None = None
    timelimit: float | None = None
    stat: bool = False
    quiet: bool = False


def _value(args: list[str], i: int, flag: str) -> str:
    if i + 1 >= len(args):
        raise Refused(f"option '{flag}' needs a value")
    return args[i + 1]


def parse(args: list[str], p: Platform) -> Options:
    opts = Options()
    i = 0
    while i < len(args):
        arg = args[i]
        if arg in ("-C", "--parameter"):
            _param(opts, _value(args, i, arg), p)
            i += 2
        elif arg in ("-a", "--application"):
            opts.application = _value(args, i, arg).split("=", 1)[-1]
            i += 2
        elif arg in ("-f", "--config-file"):
            for line in Path(_value(args, i, arg)).read_text().splitlines():
                if line.strip() and not line.lstrip().startswith("#"):
                    _param(opts, line.strip(), p)
            i += 2
        elif arg == "--timelimit":
            opts.timelimit = float(_value(args, i, arg))
            i += 2
        elif arg == "--stat":
            opts.stat = True
            i += 1
        elif arg in ("-q", "--quiet"):
            opts.quiet = True
            i += 1
        elif arg in ("--cyclelimit", "--simlimit"):
            raise Refused(f"{arg} is a real FVP option the fake cannot honour (no simulated clock)")
        else:
            raise Refused(f"unrecognised option '{arg}'")
    return opts


def _param(opts: Options, text: str, p: Platform) -> None:
    name, sep, value = text.partition("=")
    name, value = name.strip(), value.strip()
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
        value = value[1:-1]  # the FVP takes quoted values as scripts pass them
    if not sep or not any(re.fullmatch(pattern, name) for pattern in known_params(p)):
        raise Refused(f"unknown parameter '{name}'")
    if name.endswith("num_macs") and value not in {str(m) for m in p.macs}:
        raise Refused(f"parameter '{name}': value {value} is not one of {p.macs}")
    opts.params[name] = value


def stats_block(p: Platform, started: float) -> str:
    times = os.times()
    wall = time.monotonic() - started
    rule = "-" * 79
    head = f"--- {p.stat_name} statistics: "
    return "\n".join(
        [
            "",
            head + "-" * max(3, 79 - len(head)),
            f"{'User time':<40}: {times.user + times.children_user:.6f}s",
            f"{'System time':<40}: {times.system + times.children_system:.6f}s",
            f"{'Wall time':<40}: {wall:.6f}s",
            rule,
            "",
        ]
    )


class Simulation:
    """QEMU running the application, the terminal bridge, and the reasons to stop."""

    def __init__(self, p: Platform, opts: Options) -> None:
        self.p, self.opts = p, opts
        self.reason: str | None = None
        self.done = threading.Event()
        self.qemu: subprocess.Popen[bytes] | None = None
        self.bridge: UartBridge | None = None

    def param(self, suffix: str, default: str = "") -> str:
        return self.opts.params.get(suffix, default)

    def stop(self, reason: str) -> None:
        if self.reason is None:
            self.reason = reason
        self.done.set()

    def start(self) -> None:
        b, c = self.p.board, self.p.cpu
        semihosting = self.param(f"{c}.semihosting-enable", "0") in ("1", "true")
        cwd = Path(self.param(f"{c}.semihosting-cwd", ".") or ".")
        cmd_line = self.param(f"{c}.semihosting-cmd_line")[:255]  # the FVP keeps 255 chars
        uart = socket.socket()
        uart.bind(("127.0.0.1", 0))
        qemu_port = uart.getsockname()[1]
        uart.close()
        argv = [
            shutil.which("qemu-system-arm") or "qemu-system-arm",
            "-M",
            "mps3-an547",
            "-m",
            "2G",
            "-nographic",
            "-icount",
            "shift=0",
            "-monitor",
            "none",
            "-kernel",
            str(Path(self.opts.application or "").resolve()),
            "-serial",
            f"tcp:127.0.0.1:{qemu_port},server=on,wait=on",
        ]
        if semihosting:  # its console is the FVP's standard output
            config = "enable=on,target=native,chardev=semihosting"
            for word in cmd_line.split():
                config += ",arg=" + word.replace(",", ",,")
            argv += ["-chardev", "stdio,id=semihosting,signal=off", "-semihosting-config", config]
        self.qemu_log = tempfile.TemporaryFile()  # noqa: SIM115 - QEMU writes it all run long
        self.qemu = subprocess.Popen(
            argv,
            cwd=cwd,
            stdin=subprocess.DEVNULL,
            stdout=sys.stdout,
            stderr=self.qemu_log,
            preexec_fn=_die_with_parent,
        )
        link = self._connect(qemu_port)
        terminal = f"{b}.telnetterminal0"
        listener = socket.socket()
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        port = int(self.param(f"{terminal}.start_port", "5000"))
        while True:  # the FVP moves up from start_port until a port is free
            try:
                listener.bind(("127.0.0.1", port))
                break
            except OSError:
                port += 1
        listener.listen(1)
        out_file = self.param(f"{b}.uart0.out_file")
        tee = None
        if out_file:
            sink = sys.stdout.buffer if out_file == "-" else open(out_file, "ab")  # noqa: SIM115
            tee = lambda data: (sink.write(data), sink.flush())  # noqa: E731
        self.bridge = UartBridge(
            listener,
            link,
            raw=self.param(f"{terminal}.mode", "telnet") == "raw",
            shutdown_on_eot=self.param(f"{b}.uart0.shutdown_on_eot", "0") in ("1", "true"),
            tee=tee,
            on_stop=self.stop,
        )
        if self.param(f"{terminal}.quiet", "0") not in ("1", "true"):
            print(f"telnetterminal0: Listening for serial connection on port {port}", flush=True)
        threading.Thread(target=self._serve, daemon=True).start()

    def _connect(self, port: int) -> socket.socket:
        for _ in range(500):
            try:
                return socket.create_connection(("127.0.0.1", port), timeout=5)
            except OSError:
                if self.qemu is not None and self.qemu.poll() is not None:
                    break
                time.sleep(0.01)
        self.qemu_log.seek(0)
        sys.stderr.write(self.qemu_log.read().decode(errors="replace"))
        raise Refused("the application could not be started (QEMU did not come up)")

    def _serve(self) -> None:
        assert self.bridge is not None
        self.bridge.run()
        self.stop("uart closed")

    def wait(self, started: float) -> None:
        while not self.done.wait(0.1):  # the FVP tests its limits every 0.1 s too
            if self.qemu is not None and self.qemu.poll() is not None:
                self.stop("application exited")
            elif self.opts.timelimit and time.monotonic() - started >= self.opts.timelimit:
                print(
                    "\nInfo: Simulation is stopping. Reason: CPU time has been exceeded.\n",
                    flush=True,
                )
                self.stop("time limit")

    def shutdown(self) -> None:
        if self.bridge is not None:
            self.bridge.stop()
        if self.qemu is not None and self.qemu.poll() is None:
            self.qemu.kill()
            self.qemu.wait()


def main(args: list[str]) -> int:
    name = os.environ.get(NAME_ENV, "")
    p = PLATFORMS.get(name)
    if p is None:
        print(f"fake FVP: {NAME_ENV} must name one of {', '.join(PLATFORMS)}", file=sys.stderr)
        return 2
    if args in (["--version"], ["-v"]):
        print(BANNER, flush=True)
        return 0
    if args in (["--list-params"], ["-l"]):
        print("\n".join(known_params(p)))
        return 0
    try:
        opts = parse(args, p)
    except (Refused, OSError, ValueError) as e:
        print(f"ERROR: {e}", file=sys.stderr)
        return 1
    if not opts.quiet:
        print(BANNER, flush=True)
    if os.environ.get(LICENCE_ENV):
        print(
            f"License checkout for feature {name} has been denied ({LICENCE_ENV}="
            f"{os.environ[LICENCE_ENV]}).\nFlexNet Licensing error:-5,357\n"
            f"License path: {os.environ.get('ARMLMD_LICENSE_FILE', '(none)')}",
            file=sys.stderr,
            flush=True,
        )
        return 1
    if opts.application is None:
        print("ERROR: no application given (-a)", file=sys.stderr)
        return 1
    try:
        check_image(p, Path(opts.application), opts.params)
    except (Refused, OSError, struct.error) as e:
        print(f"ERROR: {e}", file=sys.stderr)
        return 1
    started = time.monotonic()
    sim = Simulation(p, opts)
    signal.signal(
        signal.SIGINT,
        lambda *_: (print("\nStopping simulation...\n", flush=True), sim.stop("interrupted")),
    )
    signal.signal(signal.SIGTERM, lambda *_: sim.stop("terminated"))
    try:
        sim.start()
        sim.wait(started)
    except Refused as e:
        print(f"ERROR: {e}", file=sys.stderr)
        return 1
    finally:
        sim.shutdown()
    print("\nInfo: /OSCI/SystemC: Simulation stopped by user.", flush=True)
    if opts.stat:
        print(stats_block(p, started), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
