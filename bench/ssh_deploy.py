"""Deploy to the emulated Pi 5 over SSH, as a ratio of raw SFTP on the same link, and what a
redeploy of an unchanged model moves. Goals: copy ratio >= 0.9, redeploy 0 bytes.

    raw SFTP   OpenSSH `sftp` (its default settings) puts the .pte to the device over the
               target's own SSH connection: the link's ceiling for a file copy.
    copy       what deploy moves: one SFTP session with the free space, the copy to a .part
               name and the rename (no remote shell).
    deploy     SshTarget.deploy() of a model the device does not have: the runner is asked to
               load its content-addressed file (missing: one protocol round trip), the copy,
               then the runner reading, hashing (Armv8 SHA-256) and loading the program from
               the device's disk (LOAD_FILE) under qemu-aarch64. Shown beside the copy.
    protocol   for comparison: the same bytes streamed through the runner protocol over the
               SSH channel (LOAD_BEGIN/CHUNK/END), the path hil does not take for the Pi.
    redeploy   the same model again (0 bytes), and again after the runner restarted (a new
               session: still 0 bytes, the device's disk has it).

The .pte is a real program (fp32 Linear layers, about 50 MB of weights, portable recipe), so
the runner's load is a real load. Run: .venv/bin/python bench/ssh_deploy.py [--repeats 3]
[--record] (`--record` writes the figures the docs quote to bench/figures.json).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))

from figures import record

from hil.artifacts.store import Artifact
from hil.case import case_from_module
from hil.device_search import find_devices
from hil.recipes import make_recipe
from hil.session import Session
from hil.targets.ssh import SshTarget

MIB = 1 << 20


def fifty_mb_model(seed: int) -> torch.nn.Module:
    torch.manual_seed(seed)
    return torch.nn.Sequential(
        torch.nn.Linear(2560, 2560), torch.nn.ReLU(), torch.nn.Linear(2560, 2560)
    ).eval()


def programs(session: Session) -> list[Artifact]:
    """Two different ~50 MB programs (deploys alternate, so the runner never holds the next)."""
    found = []
    for seed in (1, 2):
        case = case_from_module(f"bench_50mb_{seed}", fifty_mb_model(seed), torch.randn(1, 2560))
        found.append(session.artifact(session.built(case), make_recipe("portable")))
    return found


def raw_sftp_seconds(target: SshTarget, pte: Path) -> float:
    remote = f"{target.remote.root}/bench-raw.bin"
    started = time.perf_counter()
    subprocess.run(
        target.connection.sftp_command("-b", "-"),
        check=True,
        capture_output=True,
        input=f'put "{pte}" "{remote}"\n'.encode(),
    )
    seconds = time.perf_counter() - started
    target.connection.run(f"rm -f {remote}")
    return seconds


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--record", action="store_true", help="write bench/figures.json")
    args = parser.parse_args()
    scratch = Path(tempfile.mkdtemp(prefix="hil-bench-ssh-"))
    os.environ["HIL_EMU_DIR"] = str(scratch / "emu")  # a fresh "Pi": nothing on its disk
    os.environ["HIL_RESULTS_DIR"] = str(scratch / "results")
    devices = find_devices().registry
    with Session(devices=devices, results_dir=scratch / "results") as session:
        artifacts = programs(session)
        size = artifacts[0].pte_path.stat().st_size
        target = session.target("pi5-emu")
        assert isinstance(target, SshTarget)
        raw, copy, full, stream = [], [], [], []
        for _ in range(args.repeats):
            for artifact in artifacts:
                pte, sha = artifact.pte_path, artifact.sha256
                raw.append(raw_sftp_seconds(target, pte))
                target.remote.forget_model(sha)
                started = time.perf_counter()
                target.remote.put_model(pte, sha)
                copy.append(time.perf_counter() - started)
                target.remote.forget_model(sha)
                started = time.perf_counter()
                deployment = target.deploy(artifact)
                full.append(time.perf_counter() - started)
                assert deployment.bytes_sent == size
        again = target.deploy(artifact)
        for other in artifacts:  # last: the runner then holds a model behind the target's back
            started = time.perf_counter()
            target.client.load(other.pte_path.read_bytes(), other.sha256)
            stream.append(time.perf_counter() - started)
    with Session(devices=devices, results_dir=scratch / "results") as later:
        restarted = later.target("pi5-emu")
        started = time.perf_counter()
        after_restart = restarted.deploy(artifact)
        after_restart_s = time.perf_counter() - started

    def rate(seconds: list[float]) -> float:
        return size / MIB / statistics.median(seconds)

    print(
        f"pi5-emu over SSH on loopback (sshd + qemu-aarch64 cortex-a76), "
        f".pte {size / 1e6:.1f} MB, {len(raw)} runs each, medians"
    )
    print(f"  raw SFTP put                       {rate(raw):8.1f} MiB/s")
    print(
        f"  deploy copy (df + SFTP put + rename) {rate(copy):8.1f} MiB/s   "
        f"ratio {rate(copy) / rate(raw):.2f}  (goal >= 0.9)"
    )
    print(
        f"  deploy incl. runner load (LOAD_FILE under qemu) {rate(full):8.1f} MiB/s   "
        f"ratio {rate(full) / rate(raw):.2f}; load alone "
        f"{statistics.median(full) - statistics.median(copy):.2f} s"
    )
    print(
        f"  protocol stream over the SSH channel {rate(stream):6.1f} MiB/s   "
        f"ratio {rate(stream) / rate(raw):.2f}  (not used for the Pi)"
    )
    print(f"  redeploy, unchanged model          {again.bytes_sent} bytes moved  (goal 0)")
    print(
        f"  redeploy after a runner restart    {after_restart.bytes_sent} bytes moved, "
        f"{after_restart_s:.2f} s (the runner reads it from the device's disk)"
    )
    if args.record:
        command = " ".join(["bench/ssh_deploy.py", *sys.argv[1:]])
        ratio = round(rate(copy) / rate(raw), 2)
        what = "deploy's copy throughput over raw SFTP's, pi5-emu"
        record("ssh_deploy.copy_ratio", ratio, "", what, command)
        what = "bytes a redeploy of an unchanged model moves, pi5-emu"
        record("ssh_deploy.redeploy_bytes", again.bytes_sent, "B", what, command)
    return 0 if again.bytes_sent == 0 and after_restart.bytes_sent == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
