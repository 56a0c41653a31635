"""An SSH connection through the OpenSSH client: one master connection, many commands over it.

Why OpenSSH's `ssh`/`sftp` and not a Python SSH library: host-key checking is OpenSSH's own
(`StrictHostKeyChecking=yes` against the device's known-hosts file; an unknown or changed key
is refused, never learned), keys with passphrases stay in the user's ssh-agent, hil adds no
crypto dependency, and the C `sftp` client is the fastest way to move a file, which makes the
deploy as fast as "raw SFTP" by construction. A master connection (`ControlMaster`) carries
every command, copy and the runner's stream, so the handshake happens once per connection and
one lost connection is one event, seen by `alive()`.

Nothing here logs key material: the identity file is passed by path, and only the host key's
fingerprint (public) is ever read from ssh's debug output.
"""

from __future__ import annotations

import logging
import os
import re
import shlex
import subprocess
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from hil.errors import HilError, TargetUnavailable, TransportError
from hil.processes import stop_process

CONNECT_TIMEOUT_S = 15.0
VERIFY = (
    "compare it with the key on the device itself (on its console: "
    "`ssh-keygen -lf /etc/ssh/ssh_host_ed25519_key.pub`)"
)
UNKNOWN_FIX = (
    VERIFY + "; if they match, add it: `ssh-keyscan -p {port} {host} >> {known_hosts}` "
    "(and check the fingerprint of what was added). hil never trusts a key that is "
    "not already in that file"
)
CHANGED_FIX = (
    "do not connect until you know why it changed. If the device was re-imaged, "
    + VERIFY
    + "; if they match, drop the old line with `ssh-keygen -R '{pattern}' "
    "-f {known_hosts}` and add the new one with `ssh-keyscan -p {port} {host} >> "
    "{known_hosts}`"
)


class HostKeyRefused(TransportError):
    """The host offered a key that the known-hosts file does not vouch for. An error, not a
    skip: the device is there, and talking to it may not be safe."""

    def __init__(self, message: str, *, fix: str, fingerprint: str | None) -> None:
        super().__init__(message, fix=fix)
        self.fingerprint = fingerprint


@dataclass(frozen=True)
class SshEndpoint:
    """Where and as whom to log in; the identity and known-hosts files are given by path."""

    host: str
    user: str
    identity: Path
    known_hosts: Path
    port: int = 22
    options: tuple[str, ...] = field(default_factory=tuple)  # extra `-o` options, verbatim

    @property
    def address(self) -> str:
        return f"{self.user}@{self.host}:{self.port}"

    @property
    def known_hosts_pattern(self) -> str:
        return self.host if self.port == 22 else f"[{self.host}]:{self.port}"


class SshConnection:
    """A master connection and the commands that ride on it. Not thread-safe."""

    def __init__(self, endpoint: SshEndpoint, name: str, log_dir: Path) -> None:
        self.endpoint = endpoint
        self.name = name
        self.log_dir = log_dir
        self._master: subprocess.Popen[bytes] | None = None
        self._control_dir: str | None = None
        self.host_key_fingerprint: str | None = None
        self.log = logging.getLogger(f"hil.transport.SshConnection({name})")

    # -- command lines -------------------------------------------------------------------------

    @property
    def control_path(self) -> str:
        if self._control_dir is None:
            raise TransportError(f"{self.name}: not connected to {self.endpoint.address}")
        return os.path.join(self._control_dir, "master")

    def _options(self) -> list[str]:
        e = self.endpoint
        options = [
            "-F",
            "/dev/null",  # the device file is the whole truth: no ~/.ssh/config
            "-i",
            str(e.identity),
            "-o",
            "IdentitiesOnly=yes",
            "-o",
            "BatchMode=yes",
            "-o",
            "StrictHostKeyChecking=yes",
            "-o",
            f"UserKnownHostsFile={e.known_hosts}",
            "-o",
            "GlobalKnownHostsFile=/dev/null",
            "-o",
            f"ConnectTimeout={int(CONNECT_TIMEOUT_S)}",
            "-o",
            "ServerAliveInterval=5",
            "-o",
            "ServerAliveCountMax=3",
            "-o",
            f"Port={e.port}",
            "-o",
            f"User={e.user}",
        ]
        for option in e.options:
            options += ["-o", option]
        return options

    def _client_options(self) -> list[str]:
        return [
            *self._options(),
            "-o",
            f"ControlPath={self.control_path}",
            "-o",
            "ControlMaster=no",
            "-o",
            "LogLevel=ERROR",
        ]

    def ssh_command(self, remote: str) -> list[str]:
        """The argv that runs `remote` (a shell command line) over the master connection."""
        return ["ssh", *self._client_options(), self.endpoint.host, "--", remote]

    def sftp_command(self, *extra: str) -> list[str]:
        return ["sftp", "-q", *extra, *self._client_options(), self.endpoint.host]

    # -- lifecycle ----------------------------------------------------------------------------

    def connect(self) -> None:
        """Open the master connection; refuses unknown or changed host keys with the offered
        key's fingerprint, and says why a login failed."""
        self.close()
        self.log_dir.mkdir(parents=True, exist_ok=True)
        log_path = self.log_dir / f"{self.name}.ssh.log"
        self._control_dir = tempfile.mkdtemp(prefix="hil-ssh-")
        argv = [
            "ssh",
            "-M",
            "-N",
            "-v",
            *self._options(),
            "-o",
            f"ControlPath={self.control_path}",
            "-o",
            "ControlPersist=no",
            self.endpoint.host,
        ]
        with log_path.open("wb") as log_file:
            try:
                self._master = subprocess.Popen(
                    argv,
                    stdin=subprocess.DEVNULL,
                    stdout=log_file,
                    stderr=log_file,
                    start_new_session=True,
                )
            except OSError as e:
                raise TargetUnavailable(
                    f"{self.name}: cannot run the OpenSSH client: {e}",
                    fix="apt-get install openssh-client",
                ) from e
        deadline = time.monotonic() + CONNECT_TIMEOUT_S + 5
        while time.monotonic() < deadline:
            if self._master.poll() is not None:
                text = log_path.read_text(errors="replace")
                self._master = None
                raise self._login_failure(text)
            if os.path.exists(self.control_path) and self._check():
                break
            time.sleep(0.05)
        else:
            self.close()
            raise TargetUnavailable(
                f"{self.name}: no SSH connection to {self.endpoint.address} within "
                f"{CONNECT_TIMEOUT_S + 5:.0f} s",
                fix="check that the device is on and reachable (ping it, `ssh` to it by hand)",
            )
        found = re.search(r"Server host key: (\S+) (\S+)", log_path.read_text(errors="replace"))
        self.host_key_fingerprint = found.group(2) if found else None
        self.log.info(
            "connected to %s (host key %s)", self.endpoint.address, self.host_key_fingerprint
        )

    def _check(self) -> bool:
        done = subprocess.run(
            [
                "ssh",
                *self._options(),
                "-o",
                f"ControlPath={self.control_path}",
                "-O",
                "check",
                self.endpoint.host,
            ],
            capture_output=True,
            timeout=10,
        )
        return done.returncode == 0

    def alive(self) -> bool:
        """Whether the master connection still stands."""
        if self._master is None or self._master.poll() is not None:
            return False
        try:
            return self._check()
        except (OSError, subprocess.SubprocessError):
            return False

    def close(self) -> None:
        master, self._master = self._master, None
        if master is not None:
            stop_process(master)
        if self._control_dir is not None:
            for leftover in Path(self._control_dir).glob("*"):
                leftover.unlink(missing_ok=True)
            os.rmdir(self._control_dir)
            self._control_dir = None

    # -- failures -----------------------------------------------------------------------------

    def _login_failure(self, text: str) -> HilError:
        e = self.endpoint
        offered = re.search(r"Server host key: (\S+) (\S+)", text)
        fingerprint = offered.group(2) if offered else None
        key_type = offered.group(1) if offered else "host"
        facts = {
            "known_hosts": e.known_hosts,
            "pattern": e.known_hosts_pattern,
            "port": e.port,
            "host": e.host,
        }
        if "REMOTE HOST IDENTIFICATION HAS CHANGED" in text:
            return HostKeyRefused(
                f"{self.name}: refused {e.host}:{e.port}: its {key_type} key {fingerprint} is not "
                f"the one {e.known_hosts} holds for it (the key CHANGED: a re-imaged device, or "
                "someone in between)",
                fix=CHANGED_FIX.format(**facts),
                fingerprint=fingerprint,
            )
        if "host key is known for" in text or "Host key verification failed" in text:
            return HostKeyRefused(
                f"{self.name}: refused {e.host}:{e.port}: its {key_type} key {fingerprint} is "
                f"not in {e.known_hosts} (an UNKNOWN host key is never trusted silently)",
                fix=UNKNOWN_FIX.format(**facts),
                fingerprint=fingerprint,
            )
        if "Permission denied" in text:
            return TargetUnavailable(
                f"{self.name}: {e.address} refused the login with {e.identity} (publickey)",
                fix=f"install the public key on the device: ssh-copy-id -i {e.identity} "
                f"-p {e.port} {e.user}@{e.host}; a key with a passphrase must be in ssh-agent",
            )
        reason = _last_error_line(text)
        return TargetUnavailable(
            f"{self.name}: cannot connect to {e.address}: {reason}",
            fix="check that the device is on, reachable and runs sshd (`ssh` to it by hand)",
        )

    # -- commands -----------------------------------------------------------------------------

    def run(
        self, remote: str, *, timeout: float = 60.0, stdin: bytes | None = None
    ) -> subprocess.CompletedProcess[bytes]:
        """Run a shell command line on the device; the result whatever its exit status, or
        TransportError when the connection is gone (ssh's status 255 and no master)."""
        try:
            if stdin is None:
                done = subprocess.run(
                    self.ssh_command(remote),
                    stdin=subprocess.DEVNULL,
                    capture_output=True,
                    timeout=timeout,
                )
            else:
                done = subprocess.run(
                    self.ssh_command(remote), input=stdin, capture_output=True, timeout=timeout
                )
        except subprocess.TimeoutExpired as e:
            raise TransportError(
                f"{self.name}: `{remote[:80]}` on {self.endpoint.host} took over {timeout:.0f} s"
            ) from e
        self._require_alive(done.returncode)
        return done

    def _require_alive(self, returncode: int) -> None:
        if returncode == 255 and not self.alive():
            raise TransportError(
                f"{self.name}: the SSH connection to {self.endpoint.address} is gone",
                fix="check that the device is on and reachable",
            )

    def spawn(self, remote: str, stderr: int | object) -> subprocess.Popen[bytes]:
        """Start a long-running remote command with its stdin/stdout as pipes here."""
        return subprocess.Popen(
            self.ssh_command(remote),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=stderr,  # type: ignore[arg-type]
            bufsize=0,
            start_new_session=True,
        )

    def sftp_batch(self, commands: Sequence[str], *, timeout: float) -> SftpResult:
        """Run sftp batch commands (a leading `-` lets one fail without stopping the rest)."""
        script = "\n".join(commands) + "\n"
        try:
            done = subprocess.run(
                self.sftp_command("-b", "-", "-R", "128", "-B", "131072"),
                input=script.encode(),
                capture_output=True,
                timeout=timeout,
            )
        except subprocess.TimeoutExpired as e:
            raise TransportError(
                f"{self.name}: an SFTP transfer to {self.endpoint.host} took over {timeout:.0f} s"
            ) from e
        self._require_alive(done.returncode)
        return SftpResult(
            done.returncode == 0,
            done.stdout.decode(errors="replace"),
            done.stderr.decode(errors="replace").strip(),
        )


@dataclass(frozen=True)
class SftpResult:
    ok: bool
    out: str
    error: str


def quote(text: str) -> str:
    return shlex.quote(text)


def sftp_quote(path: str) -> str:
    """A path as an sftp batch command takes it."""
    return '"' + path.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _last_error_line(text: str) -> str:
    lines = [ln for ln in text.splitlines() if ln.strip() and not ln.startswith("debug")]
    return lines[-1].strip() if lines else "ssh gave no reason"
