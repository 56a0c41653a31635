"""The hil folder on an SSH device: the runner bundle and the models, copied only when needed.

    <remote_dir>/runner/   hil-runner and its libraries, each compared by sha256 (sha256sum on
                           the device) and copied only when it differs
    <remote_dir>/models/   <sha256>.pte, content-addressed: the runner is asked to load it
                           first (it checks size and sha256); only a missing or damaged file
                           is copied, so a model already there moves no bytes

Copies go by SFTP to a `.part` name and are renamed when complete, so an interrupted copy
never looks like a model. A copy that cannot be made (disk full, read-only, no permission)
is a DeployError with the device's own words and its free space.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from hil.errors import DeployError
from hil.sdk.aarch64 import RunnerBundle
from hil.transports.ssh import SshConnection, quote, sftp_quote

KEEP_MODEL_BYTES = 4 << 30  # the newest model files kept on the device, pruned at provisioning
FACTS_SCRIPT = r"""
lscpu 2>/dev/null | sed -n 's/^Model name: *//p' | head -n 1; echo '--'
sed -n 's/^model name[^:]*: *//p' /proc/cpuinfo 2>/dev/null | head -n 1; echo '--'
tr -d '\0' < /proc/device-tree/model 2>/dev/null; echo; echo '--'
cat /sys/devices/system/cpu/cpu0/cpufreq/scaling_governor 2>/dev/null; echo '--'
cat /sys/class/thermal/thermal_zone0/temp 2>/dev/null; echo '--'
uname -srm; echo '--'
nproc
"""
TEMPERATURE = "cat /sys/class/thermal/thermal_zone0/temp 2>/dev/null"


@dataclass(frozen=True)
class RemoteFacts:
    cpu_model: str
    board: str
    governor: str
    temperature_c: float | None
    kernel: str
    cpus_online: str

    def as_dict(self) -> dict[str, str]:
        facts = {
            "remote_cpu": self.cpu_model,
            "board": self.board,
            "cpu_governor": self.governor,
            "kernel": self.kernel,
            "cpus_online": self.cpus_online,
        }
        if self.temperature_c is not None:
            facts["soc_temperature_c"] = f"{self.temperature_c:.1f}"
        return {k: v for k, v in facts.items() if v}


def parse_facts(text: str) -> RemoteFacts:
    parts = [p.strip() for p in text.split("--\n")] + [""] * 7
    lscpu, cpuinfo, board, governor, temp, kernel, cpus = parts[:7]
    return RemoteFacts(
        cpu_model=lscpu or cpuinfo,
        board=board,
        governor=governor,
        temperature_c=parse_temperature(temp),
        kernel=kernel,
        cpus_online=cpus,
    )


def parse_temperature(text: str) -> float | None:
    """thermal_zone temp is in millidegrees Celsius."""
    text = text.strip()
    return int(text) / 1000.0 if re.fullmatch(r"-?\d+", text) else None


class RemoteTree:
    """The device's hil folder, reached over one SshConnection."""

    def __init__(self, connection: SshConnection, remote_dir: str, name: str) -> None:
        self.connection = connection
        self.remote_dir = remote_dir
        self.name = name
        self.root = ""  # absolute, once prepared
        self.log = logging.getLogger(f"hil.target.RemoteTree({name})")

    @property
    def host(self) -> str:
        return self.connection.endpoint.host

    @property
    def runner_dir(self) -> str:
        return f"{self.root}/runner"

    def model_path(self, sha256: str) -> str:
        return f"{self.root}/models/{sha256}.pte"

    def _fail(self, what: str, detail: str) -> DeployError:
        return DeployError(
            f"{self.name}: {what} on {self.host}: {detail}",
            fix=f"free space or fix permissions of {self.remote_dir} on the device, or point "
            "connection.remote_dir of the device file at a folder its user may write",
        )

    def prepare(self) -> None:
        """Create the folders, make sure they are writable, keep the newest models up to
        KEEP_MODEL_BYTES (the device's disk is not endless); learn the absolute path."""
        d = quote(self.remote_dir)
        done = self.connection.run(
            f"mkdir -p {d}/runner {d}/models && cd {d} && "
            'probe=.hil-write-test.$$ && : > "$probe" && rm -f "$probe" && '
            "(cd models && rm -f -- *.part; total=0; ls -t -- *.pte 2>/dev/null | "
            'while read -r f; do total=$((total + $(stat -c %s "$f"))); '
            f'[ $total -le {KEEP_MODEL_BYTES} ] || rm -f -- "$f"; done) && pwd -P'
        )
        if done.returncode != 0:
            raise self._fail(f"cannot use the folder {self.remote_dir}", _words(done.stderr))
        self.root = done.stdout.decode().strip().splitlines()[-1]

    def free_bytes(self) -> int | None:
        done = self.connection.run(f"df -Pk {quote(self.root)} | tail -n 1")
        fields = done.stdout.decode().split()
        return int(fields[3]) * 1024 if done.returncode == 0 and len(fields) > 3 else None

    def facts(self) -> RemoteFacts:
        return parse_facts(self.connection.run(FACTS_SCRIPT).stdout.decode(errors="replace"))

    def temperature_c(self) -> float | None:
        return parse_temperature(self.connection.run(TEMPERATURE).stdout.decode())

    # -- the runner ---------------------------------------------------------------------------

    def remote_hashes(self, names: list[str]) -> Mapping[str, str]:
        listed = " ".join(quote(n) for n in names)
        done = self.connection.run(
            f"cd {quote(self.runner_dir)} && sha256sum -- {listed} 2>/dev/null; true"
        )
        hashes = {}
        for line in done.stdout.decode(errors="replace").splitlines():
            digest, _, name = line.partition("  ")
            hashes[name.strip()] = digest.strip()
        return hashes

    def sync_runner(self, bundle: RunnerBundle) -> int:
        """Copy the bundle's files whose hash differs on the device; the bytes copied."""
        held = self.remote_hashes([f.name for f in bundle.files])
        stale = [f for f in bundle.files if held.get(f.name) != f.sha256]
        if not stale:
            return 0
        self._put(
            [(bundle.folder / f.name, f"{self.runner_dir}/{f.name}") for f in stale],
            sum(f.size for f in stale),
            "the runner",
            after=f"chmod +x {quote(self.runner_dir + '/' + bundle.runner)}",
        )
        self.log.info("copied %d runner file(s), %d bytes", len(stale), sum(f.size for f in stale))
        return sum(f.size for f in stale)

    # -- models: SFTP only (no remote shell on the deploy path) ---------------------------

    def put_model(self, local: Path, sha256: str) -> int:
        """Copy the model's file to the device in one SFTP session: the free space, the copy
        to a .part name, the rename over the final name. Its size."""
        size = local.stat().st_size
        path = self.model_path(sha256)
        part = path + ".part"
        done = self.connection.sftp_batch(
            [
                f"df {sftp_quote(self.root + '/models')}",
                f"put {sftp_quote(str(local))} {sftp_quote(part)}",
                f"rename {sftp_quote(part)} {sftp_quote(path)}",
            ],
            timeout=120.0 + size / 2e6,
        )  # even a 2 MB/s link finishes in time
        if done.ok:
            return size
        self.connection.sftp_batch([f"-rm {sftp_quote(part)}"], timeout=60)
        free = _sftp_free(done.out)
        if free is not None and free < size:
            raise self._fail(
                f"no room for the model {local.name} ({size} bytes)",
                f"the disk holding {self.root} had {free} bytes free (disk full); "
                f"sftp: {_sftp_words(done.error)}",
            )
        room = f"; {free} bytes free on that disk" if free is not None else ""
        raise self._fail(
            f"copying the model {local.name} ({size} bytes) failed", _sftp_words(done.error) + room
        )

    def forget_model(self, sha256: str) -> None:
        self.connection.sftp_batch([f"-rm {sftp_quote(self.model_path(sha256))}"], timeout=60)

    # -- copying ------------------------------------------------------------------------------

    def _put(self, copies: list[tuple[Path, str]], total: int, what: str, after: str = "") -> None:
        """Copy files by SFTP (to .part names, then renamed); `after`: a command to finish."""
        free = self.free_bytes()
        if free is not None and free < total:
            raise self._fail(
                f"no room for {what} ({total} bytes)",
                f"the disk holding {self.root} has {free} bytes free (disk full)",
            )
        batch = [
            f"put {sftp_quote(str(local))} {sftp_quote(remote + '.part')}"
            for local, remote in copies
        ]
        timeout = 120.0 + total / 2e6
        done = self.connection.sftp_batch(batch, timeout=timeout)
        error = done.error
        if done.ok:
            renames = " && ".join(f"mv -f {quote(r + '.part')} {quote(r)}" for _, r in copies)
            finished = self.connection.run(renames + (f" && {after}" if after else ""))
            if finished.returncode == 0:
                return
            error = _words(finished.stderr)
        self.connection.run("rm -f " + " ".join(quote(r + ".part") for _, r in copies))
        free = self.free_bytes()
        room = f"; {free} bytes free on that disk" if free is not None else ""
        raise self._fail(f"copying {what} ({total} bytes) failed", f"{_sftp_words(error)}{room}")


def _field(line: str, index: int) -> str:
    fields = line.split()
    return fields[index] if len(fields) > index else ""


def _sftp_free(out: str) -> int | None:
    """Free bytes from sftp's `df` (KiB columns: Size Used Avail (root) %Capacity)."""
    lines = out.splitlines()
    for at, line in enumerate(lines[:-1]):
        if "Avail" in line and "Size" in line:
            value = _field(lines[at + 1], 2)
            return int(value) * 1024 if value.isdigit() else None
    return None


def _words(stderr: bytes) -> str:
    text = stderr.decode(errors="replace").strip()
    return text.splitlines()[-1] if text else "no reason given"


def _sftp_words(text: str) -> str:
    """sftp reports ENOSPC and EROFS as a bare "Failure"; say what that usually means."""
    line = text.splitlines()[-1] if text else "sftp gave no reason"
    if line.rstrip().endswith("Failure"):
        line += " (SFTP's word for disk full or a read-only file system)"
    return line
