"""The FVP command line per platform, and the semihosting command-line limit."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from hil.devices import parse_device
from hil.errors import DeviceSpecError
from hil.fvp.command import SEMIHOSTING_CMDLINE_MAX, build_command
from hil.fvp.config import fvp_config


def config(tmp_path: Path, platform: str, npu: str, **connection: Any) -> Any:
    data = {
        "name": "fvp-x",
        "kind": "fvp",
        "npu": npu,
        "recipes": [{"name": "ethos-u", "options": {"accelerator_config": npu}}],
        "connection": {"platform": platform, **connection},
    }
    return fvp_config(parse_device(data, tmp_path / "fvp-x.yaml"))


def params(argv: tuple[str, ...]) -> dict[str, str]:
    pairs = [argv[i + 1] for i, a in enumerate(argv) if a == "-C"]
    return dict(p.split("=", 1) for p in pairs)


def test_corstone_300_command_line(tmp_path: Path) -> None:
    c = config(tmp_path, "corstone-300", "ethos-u55-128", time_limit_s=90.5)
    cmd = build_command(c, Path("/opt/FVP"), Path("/r/hil-runner.elf"), Path("/w"), 5123)
    got = params(cmd.argv)
    assert cmd.argv[0] == "/opt/FVP"
    assert got["ethosu.num_macs"] == "128"
    assert got["mps3_board.telnetterminal0.mode"] == "raw"  # bytes untouched by telnet
    assert got["mps3_board.telnetterminal0.start_telnet"] == "0"
    assert got["mps3_board.telnetterminal0.start_port"] == "5123"
    assert got["mps3_board.uart0.shutdown_on_eot"] == "0"  # the link is binary: 0x04 happens
    assert got["cpu0.semihosting-enable"] == "1"
    assert got["cpu0.semihosting-cwd"] == "/w"
    assert got["cpu0.semihosting-cmd_line"] == "hil-runner"
    assert "ethosu.extra_args" not in got  # accurate mode
    tail = cmd.argv[cmd.argv.index("-a") :]
    assert tail == ("-a", "/r/hil-runner.elf", "--timelimit", "91", "--stat")


def test_corstone_320_command_line_in_fast_mode(tmp_path: Path) -> None:
    c = config(
        tmp_path,
        "corstone-320",
        "ethos-u85-512",
        mode="fast",
        stat=False,
        params={"mps4_board.subsystem.cpu0.CFGITCMSZ": 14},
    )
    cmd = build_command(c, Path("FVP_Corstone_SSE-320"), Path("r.elf"), Path("w"), 6000)
    got = params(cmd.argv)
    assert got["mps4_board.subsystem.ethosu.num_macs"] == "512"
    assert got["mps4_board.subsystem.ethosu.extra_args"] == "--fast"
    assert got["mps4_board.telnetterminal0.mode"] == "raw"
    assert got["mps4_board.subsystem.cpu0.semihosting-enable"] == "1"
    assert got["vis_hdlcd.disable_visualisation"] == "1"
    assert got["mps4_board.subsystem.cpu0.CFGITCMSZ"] == "14"
    assert "--stat" not in cmd.argv


def test_semihosting_command_line_at_the_limit_is_kept(tmp_path: Path) -> None:
    arg = "x" * (SEMIHOSTING_CMDLINE_MAX - len("hil-runner "))
    c = config(tmp_path, "corstone-300", "ethos-u55-128", runner_args=[arg])
    cmd = build_command(c, Path("f"), Path("r.elf"), Path("w"), 1)
    assert len(cmd.cmd_line) == SEMIHOSTING_CMDLINE_MAX == 255


def test_semihosting_command_line_over_the_limit_is_refused_with_the_device_file(
    tmp_path: Path,
) -> None:
    arg = "x" * (SEMIHOSTING_CMDLINE_MAX + 1 - len("hil-runner "))
    with pytest.raises(DeviceSpecError, match="would be 256 characters; the FVP keeps only 255"):
        config(tmp_path, "corstone-300", "ethos-u55-128", runner_args=[arg])
