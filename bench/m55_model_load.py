"""Loading a model into the bare-metal runner on QEMU mps3-an547: over the emulated UART
(LOAD_BEGIN / LOAD_CHUNK / LOAD_END) against LOAD_FILE through semihosting. One run prints the
throughput of each and their ratio; no goal is asserted.

    uart   the model's bytes in CRC-checked chunks over QEMU's CMSDK UART0 on a pty, which
           takes one byte per emulator main-loop pass host->target.
    file   the runner reads the host's file with semihosting SYS_READ into its model pool.

Both paths hash the model on the M55 (SHA-256) before they answer; that time is included.
The echo engine serves (no program parse), so no ExecuTorch is needed.

Run: .venv/bin/python bench/m55_model_load.py [--kib 256] [--repeats 3]
"""

from __future__ import annotations

import argparse
import hashlib
import statistics
import sys
import tempfile
import time
from pathlib import Path

import yaml

from hil.devices import DeviceRegistry
from hil.runner.file_load import load_file
from hil.targets.serial import open_link, prepare_board

REPO = Path(__file__).resolve().parents[1]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kib", type=int, default=256, help="model size (default 256 KiB)")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        work = Path(folder)
        data = yaml.safe_load((REPO / "devices" / "qemu-m55.yaml").read_text())
        data["name"] = "qemu-m55-bench"
        data["connection"]["firmware"]["defines"]["HIL_ENGINE_EXECUTORCH"] = "OFF"
        (work / "qemu-m55-bench.yaml").write_text(yaml.safe_dump(data))
        spec = DeviceRegistry.from_dirs([work]).get("qemu-m55-bench")
        _, board = prepare_board(spec)
        payload = bytes((i * 131) & 0xFF for i in range(args.kib * 1024))
        model = work / "model.bin"
        model.write_bytes(payload)
        sha = hashlib.sha256(payload).hexdigest()
        link, client = open_link(spec, board.start())
        try:
            client.hello()
            rates: dict[str, list[float]] = {"uart": [], "file": []}
            for _ in range(args.repeats):
                client.load(b"x")  # another model, so the next load moves the bytes again
                started = time.monotonic()
                client.load(payload, sha)
                rates["uart"].append(len(payload) / (time.monotonic() - started))
                client.load(b"x")
                started = time.monotonic()
                load_file(client, str(model), sha, len(payload))
                rates["file"].append(len(payload) / (time.monotonic() - started))
        finally:
            link.close()
            board.stop()
    uart, file = (statistics.median(rates[k]) for k in ("uart", "file"))
    print(f"model of {args.kib} KiB, median of {args.repeats}:")
    print(f"  uart (LOAD chunks)          {uart / 1024:10.1f} KiB/s")
    print(f"  file (LOAD_FILE, semihost)  {file / 1024:10.1f} KiB/s")
    print(f"  ratio file/uart             {file / uart:10.1f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
