"""Reading FVP output. The samples are in the real FVPs' format (see tests/fakes/fvp/CONTRACT.md
for where each line comes from)."""

from __future__ import annotations

from hil.fvp import output

BOOT = """Fast Models [11.27.19 (Jun 10 2024)]
Copyright 2000-2024 ARM Limited.
All Rights Reserved.

telnetterminal0: Listening for serial connection on port 5003
telnetterminal1: Listening for serial connection on port 5004
telnetterminal2: Listening for serial connection on port 5005
telnetterminal5: Listening for serial connection on port 5006
"""

TIME_LIMIT_END = """[hil info] run: 1 warm-up, 3..10 runs

Info: Simulation is stopping. Reason: CPU time has been exceeded.

Info: /OSCI/SystemC: Simulation stopped by user.
[warning ][main@0][01 ns] Simulation stopped by user

--- FVP_MPS3_Corstone_SSE_300 statistics: -------------------------------------
Simulated time                          : 2.958458s
User time                               : 1.768731s
System time                             : 0.227094s
Wall time                               : 2.022361s
Performance index                       : 1.46
cpu0                                    :  36.57 MIPS (    73961463 Inst)
Memory highwater mark                   : 0x11935000 bytes ( 0.275 GB )
-------------------------------------------------------------------------------
"""


def test_banner_version_and_terminal_port() -> None:
    assert output.version(BOOT) == "11.27.19 (Jun 10 2024)"
    assert output.terminal_port(BOOT) == 5003  # the FVP moved up from its start port
    assert output.terminal_port(BOOT, "telnetterminal5") == 5006
    assert output.terminal_port("Fast Models [1]\n") is None


def test_time_limit_is_told_apart_from_other_stops() -> None:
    assert output.hit_time_limit(BOOT + TIME_LIMIT_END)
    assert output.simulation_ended(TIME_LIMIT_END)
    cycles = "Info: Simulation is stopping. Reason: Cycle limit has been exceeded.\n"
    assert output.stop_reason(cycles) == "Cycle limit has been exceeded"
    assert not output.hit_time_limit(cycles)
    assert not output.hit_time_limit(BOOT)


def test_stat_block() -> None:
    stats = output.stats(BOOT + TIME_LIMIT_END)
    assert stats is not None
    assert stats.model == "FVP_MPS3_Corstone_SSE_300"
    assert stats.simulated_s == 2.958458 and stats.wall_s == 2.022361
    assert stats.instructions == {"cpu0": 73961463}
    assert stats.mips == {"cpu0": 36.57}
    assert "simulated 2.958458 s" in stats.describe()
    assert output.stats(BOOT) is None


def test_licence_failures_are_recognised_by_their_vocabulary() -> None:
    flexnet = (
        "License checkout for feature FM_Simulator has been denied by Flex back-end.\n"
        "FlexNet Licensing error:-5,357\nLicense path: 7010@licence-server\n"
    )
    problem = output.licence_problem(BOOT + flexnet)
    assert problem is not None and "FlexNet Licensing error:-5,357" in problem
    assert output.licence_problem(BOOT + TIME_LIMIT_END) is None
