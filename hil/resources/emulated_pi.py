"""The emulated Pi: a throwaway OpenSSH sshd on loopback that stands in for a Raspberry Pi 5.

`start()` makes a fresh host key and client key in a temporary folder, an authorized_keys
holding exactly that client key and a known-hosts file holding exactly that host key, starts
`sshd -D -e` on a free loopback port, and returns the SshEndpoint to log in with. The runner
then runs "on the Pi" through `qemu-aarch64 -cpu cortex-a76` (the device file's
runner_prefix). The remote folder lives on across sessions (under .hil/emu/NAME), as a Pi's
disk does, so a model copied once is not copied again.

Needs root (sshd's privilege-separation folder /run/sshd, and logging in as this user).
"""

from __future__ import annotations

import contextlib
import getpass
import logging
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path

from hil import environment
from hil.errors import TargetUnavailable
from hil.processes import stop_process
from hil.resources.logs import board_log_dir, tail
from hil.transports.ssh import SshEndpoint

SSHD = "/usr/sbin/sshd"
START_TIMEOUT_S = 10.0

SSHD_CONFIG = """\
ListenAddress 127.0.0.1:{port}
HostKey {keys}/ssh_host_ed25519_key
PidFile {keys}/sshd.pid
AuthorizedKeysFile {keys}/authorized_keys
PubkeyAuthentication yes
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
StrictModes no
PermitRootLogin prohibit-password
Subsystem sftp internal-sftp
LogLevel INFO
"""


def default_emu_dir(name: str) -> Path:
    return environment.EMU_DIR.path().resolve() / name


class EmulatedPi:
    """sshd on 127.0.0.1:<free port> with throwaway keys; `remote_dir` is its persistent disk."""

    def __init__(self, name: str, root: Path | None = None) -> None:
        self.name = name
        self.root = root or default_emu_dir(name)
        self.keys: Path | None = None
        self.port = 0
        self._process: subprocess.Popen[bytes] | None = None
        self._log_path = board_log_dir().resolve() / f"{name}.sshd.log"
        self.log = logging.getLogger(f"hil.board.EmulatedPi({name})")

    @property
    def remote_dir(self) -> str:
        return str(self.root / "remote")

    @property
    def pid(self) -> int | None:
        return self._process.pid if self._process else None

    def start(self) -> SshEndpoint:
        self.stop()
        if not os.path.exists(SSHD):
            raise TargetUnavailable(
                f"{self.name}: OpenSSH sshd is not installed ({SSHD})",
                fix="apt-get install openssh-server openssh-client",
            )
        try:
            os.makedirs("/run/sshd", mode=0o755, exist_ok=True)
        except OSError as e:
            raise TargetUnavailable(
                f"{self.name}: sshd needs its privilege-separation folder /run/sshd: {e}",
                fix="run as root, or create it once: sudo mkdir -m0755 /run/sshd",
            ) from e
        self.root.mkdir(parents=True, exist_ok=True)
        Path(self.remote_dir).mkdir(parents=True, exist_ok=True)
        self.keys = Path(tempfile.mkdtemp(prefix=f"hil-{self.name}-keys-"))
        host_key = self._keygen("ssh_host_ed25519_key")
        client_key = self._keygen("client_ed25519")
        (self.keys / "authorized_keys").write_bytes(client_key.with_suffix(".pub").read_bytes())
        for attempt in range(3):
            self.port = _free_port()
            self._write_known_hosts(host_key)
            if self._spawn_sshd():
                break
            if attempt == 2:
                raise TargetUnavailable(
                    f"{self.name}: sshd did not start:\n{tail(self._log_path, 10)}",
                    fix=f"see {self._log_path}",
                )
        return SshEndpoint(
            host="127.0.0.1",
            port=self.port,
            user=getpass.getuser(),
            identity=client_key,
            known_hosts=self.keys / "known_hosts",
        )

    def _keygen(self, name: str) -> Path:
        assert self.keys is not None
        path = self.keys / name
        subprocess.run(
            [
                "ssh-keygen",
                "-q",
                "-t",
                "ed25519",
                "-N",
                "",
                "-C",
                f"hil-{self.name}",
                "-f",
                str(path),
            ],
            check=True,
            capture_output=True,
            timeout=30,
        )
        return path

    def _write_known_hosts(self, host_key: Path) -> None:
        assert self.keys is not None
        key_type, key = host_key.with_suffix(".pub").read_text().split()[:2]
        (self.keys / "known_hosts").write_text(f"[127.0.0.1]:{self.port} {key_type} {key}\n")

    def _spawn_sshd(self) -> bool:
        assert self.keys is not None
        config = self.keys / "sshd_config"
        config.write_text(SSHD_CONFIG.format(port=self.port, keys=self.keys))
        self._log_path.parent.mkdir(parents=True, exist_ok=True)
        with self._log_path.open("ab") as log_file:
            self._process = subprocess.Popen(
                [SSHD, "-D", "-e", "-f", str(config)],
                stdin=subprocess.DEVNULL,
                stdout=log_file,
                stderr=log_file,
                start_new_session=True,
            )
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            if self._process.poll() is not None:
                return False
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.5):
                    self.log.info(
                        "sshd pid %s on 127.0.0.1:%d; log %s",
                        self._process.pid,
                        self.port,
                        self._log_path,
                    )
                    return True
            except OSError:
                time.sleep(0.05)
        self._stop_process()
        return False

    def replace_host_key(self) -> None:
        """Give the sshd a new host key (as a re-imaged Pi has), keeping the known-hosts file:
        the next login must be refused. For the fault tests."""
        assert self.keys is not None
        (self.keys / "ssh_host_ed25519_key").unlink()
        (self.keys / "ssh_host_ed25519_key.pub").unlink()
        self._keygen("ssh_host_ed25519_key")
        self._stop_process()
        if not self._spawn_sshd():
            raise TargetUnavailable(f"{self.name}: sshd did not restart with its new key")

    def session_pids(self) -> list[int]:
        """The sshd processes serving connections now (descendants of the listener that are
        sshd, not the commands they run)."""
        if self._process is None:
            return []
        children: dict[int, list[int]] = {}
        for stat in Path("/proc").glob("[0-9]*/stat"):
            with contextlib.suppress(OSError, ValueError, IndexError):
                fields = stat.read_text().rsplit(")", 1)[1].split()
                children.setdefault(int(fields[1]), []).append(int(stat.parent.name))
        found, pending = [], [self._process.pid]
        while pending:
            for pid in children.get(pending.pop(), []):
                pending.append(pid)
                with contextlib.suppress(OSError):
                    if Path(f"/proc/{pid}/comm").read_text().strip() == "sshd":
                        found.append(pid)
        return found

    def drop_connections(self) -> None:
        """Kill every sshd serving a connection: a cable pulled, as the clients see it."""
        for pid in self.session_pids():
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)

    def go_away(self) -> None:
        """Stop accepting connections and drop the ones there are: a Pi that went away and
        stays away. For the fault tests."""
        serving = self.session_pids()
        self._stop_process()
        for pid in serving:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)

    def _stop_process(self) -> None:
        process, self._process = self._process, None
        if process is not None:
            stop_process(process)

    def stop(self) -> None:
        """Stop the listener and every connection it serves; forget the keys."""
        self.drop_connections()
        self._stop_process()
        if self.keys is not None:
            shutil.rmtree(self.keys, ignore_errors=True)
            self.keys = None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port
