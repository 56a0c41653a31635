"""Vela's summary csv, combining delegates, MACs per cycle and MAC utilization."""

from __future__ import annotations

from pathlib import Path

import pytest

from hil.errors import ExportError, UsageError
from hil.ethos_u import vela

# The header and row Vela 5.1 wrote for a small CNN on Ethos-U85-256 (Sram_Only).
HEADER = (
    "experiment,network,accelerator_configuration,system_config,memory_mode,core_clock,"
    "arena_cache_size,sram_bandwidth,dram_bandwidth,on_chip_flash_bandwidth,"
    "off_chip_flash_bandwidth,weights_storage_area,feature_map_storage_area,"
    "inferences_per_second,batch_size,inference_time,passes_before_fusing,passes_after_fusing,"
    "sram_memory_used,dram_memory_used,on_chip_flash_memory_used,off_chip_flash_memory_used,"
    "total_original_weights,total_npu_encoded_weights,sram_feature_map_read_bytes,"
    "sram_feature_map_write_bytes,sram_weight_read_bytes,sram_weight_write_bytes,"
    "sram_total_bytes,dram_feature_map_read_bytes,dram_feature_map_write_bytes,"
    "dram_weight_read_bytes,dram_weight_write_bytes,dram_total_bytes,"
    "on_chip_flash_feature_map_read_bytes,on_chip_flash_feature_map_write_bytes,"
    "on_chip_flash_weight_read_bytes,on_chip_flash_weight_write_bytes,on_chip_flash_total_bytes,"
    "off_chip_flash_feature_map_read_bytes,off_chip_flash_feature_map_write_bytes,"
    "off_chip_flash_weight_read_bytes,off_chip_flash_weight_write_bytes,"
    "off_chip_flash_total_bytes,nn_macs,nn_tops,cycles_npu,cycles_sram_access,"
    "cycles_dram_access,cycles_on_chip_flash_access,cycles_off_chip_flash_access,cycles_total"
)
ROW = (
    "default,out,Ethos_U85_256,Ethos_U85_SYS_DRAM_Mid,Sram_Only,1000000000.0,1073741824.0,"
    "29.802322387695312,11.175870895385742,29.802322387695312,14.901161193847656,On-chip Flash,"
    "SRAM,46648.31832812427,1,2.1437e-05,3,3,23.03125,0.0,113.6875,0.0,72224,116096,24864,"
    "45224,116448,0,187016,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,269472,0.025140831273032606,21437,"
    "7857,0,0,0,21437"
)


def test_summary_is_parsed_with_units() -> None:
    summary = vela.parse_summary(HEADER + "\n" + ROW + "\n")
    assert summary.accelerator == "Ethos_U85_256"
    assert summary.memory_mode == "Sram_Only"
    assert summary.clock_hz == 1e9
    assert summary.npu_cycles == 21437 and summary.total_cycles == 21437
    assert summary.inference_time_us == pytest.approx(21.437)
    assert summary.sram_bytes == round(23.03125 * 1024)  # Vela writes KiB
    assert summary.flash_bytes == round(113.6875 * 1024)  # on-chip + off-chip flash
    assert summary.vela_macs == 269472
    counters = summary.counters()
    assert counters["est_time_us"] == pytest.approx(21.437)
    assert counters["npu_cycles"] == 21437.0


def test_summary_without_a_needed_column_is_refused() -> None:
    header = HEADER.replace("cycles_npu", "cycles_something")
    with pytest.raises(ExportError, match="cycles_npu"):
        vela.parse_summary(header + "\n" + ROW)


def test_summary_with_two_rows_is_refused() -> None:
    with pytest.raises(ExportError, match="one row"):
        vela.parse_summary("\n".join([HEADER, ROW, ROW]))


def test_read_summary_finds_the_csv(tmp_path: Path) -> None:
    (tmp_path / "out_summary_Ethos_U85_SYS_DRAM_Mid.csv").write_text(HEADER + "\n" + ROW)
    assert vela.read_summary(tmp_path).npu_cycles == 21437
    with pytest.raises(ExportError, match="expected one Vela summary"):
        vela.read_summary(tmp_path / "missing")


def test_delegates_add_cycles_and_flash_and_share_sram() -> None:
    one = vela.parse_summary(HEADER + "\n" + ROW)
    combined = vela.combine([one, one])
    assert combined is not None
    assert combined.npu_cycles == 2 * one.npu_cycles
    assert combined.inference_time_us == pytest.approx(2 * one.inference_time_us)
    assert combined.flash_bytes == 2 * one.flash_bytes
    assert combined.sram_bytes == one.sram_bytes  # the arena is reused: peak, not sum
    assert combined.delegates == 2
    assert vela.combine([]) is None


@pytest.mark.parametrize(
    ("config", "rate"),
    [
        ("ethos-u55-32", 32),
        ("ethos-u55-128", 128),
        ("ethos-u85-256", 256),
        ("ethos-u85-2048", 2048),
    ],
)
def test_macs_per_cycle(config: str, rate: int) -> None:
    assert vela.macs_per_cycle(config) == rate
    assert vela.macs_per_cycle(config, a16w8=True) == rate / 2


def test_mac_utilization_is_macs_over_peak_over_cycles() -> None:
    # 1.28 M MACs on a 128-MAC NPU need 10,000 cycles at peak; 40,000 cycles is 25 %.
    assert vela.mac_utilization(1_280_000, "ethos-u55-128", 40_000) == pytest.approx(0.25)
    assert vela.mac_utilization(1_280_000, "ethos-u55-128", 40_000, a16w8=True) == pytest.approx(
        0.5
    )
    assert vela.mac_utilization(1_280_000, "ethos-u55-128", 0) is None
    assert vela.utilization(0, 128, 100) is None


def test_unknown_accelerator_is_refused_with_the_valid_ones() -> None:
    with pytest.raises(UsageError) as caught:
        vela.macs_per_cycle("ethos-u55-512")
    assert "ethos-u55-256" in str(caught.value)


def test_vela_name_matches_the_summary_spelling() -> None:
    assert vela.vela_name("ethos-u85-256") == "Ethos_U85_256"


def test_installed_vela_ini_lists_configs_and_modes() -> None:
    sections = vela.ini_sections(str(vela.default_ini()))
    assert "Ethos_U55_High_End_Embedded" in sections["System_Config"]
    assert "Shared_Sram" in sections["Memory_Mode"]
    with pytest.raises(UsageError, match="Sram_Only"):
        vela.check_ini_choice("memory mode", "Sram_Everywhere", sections["Memory_Mode"], "mode")
