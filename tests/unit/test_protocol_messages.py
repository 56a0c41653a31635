"""Message payloads: tensors keep their values and layout, replies parse as documented."""

from __future__ import annotations

import struct

import numpy as np
import pytest

from hil.errors import ProtocolError
from hil.runner import messages as m


def test_tensor_spec_round_trip() -> None:
    spec = m.TensorSpec(6, (1, 3, 4, 5), (0, 2, 3, 1), 240)
    assert m.TensorSpec.read(m.Reader(spec.pack(), "test")) == spec


@pytest.mark.parametrize("dtype", [np.float32, np.int8, np.uint8, np.int32, np.int64, np.bool_])
def test_arrays_travel_unchanged(dtype: type) -> None:
    x = (np.arange(60) % 7).astype(dtype).reshape(3, 4, 5)
    spec, data = m.from_numpy(x)
    assert spec.dims == (3, 4, 5) and spec.nbytes == x.nbytes
    assert np.array_equal(m.to_numpy(spec, data), x)


def test_channels_last_memory_is_laid_out_and_read_back_by_dim_order() -> None:
    x = np.arange(2 * 3 * 4 * 5, dtype=np.float32).reshape(2, 3, 4, 5)
    spec, data = m.from_numpy(x, (0, 2, 3, 1))
    nhwc = np.frombuffer(data, dtype=np.float32).reshape(2, 4, 5, 3)
    assert np.array_equal(nhwc, x.transpose(0, 2, 3, 1))
    assert np.array_equal(m.to_numpy(spec, data), x)


def test_unknown_dtype_is_a_protocol_error_naming_it() -> None:
    with pytest.raises(ProtocolError, match="dtype code 99"):
        m.to_numpy(m.TensorSpec(99, (1,), (0,), 4), b"\0\0\0\0")


def test_short_reply_is_a_protocol_error_not_a_crash() -> None:
    with pytest.raises(ProtocolError, match="too short"):
        m.RunnerInfo.parse(b"\x01\x00")


def test_run_times_convert_ticks_to_microseconds() -> None:
    payload = struct.pack("<IIQB7x3Q", 3, 2, 32_000_000, m.CLOCK_CYCLES, 32, 64, 3200)
    times = m.RunTimes.parse(payload)
    assert times.ticks == (32, 64, 3200) and times.warmup == 2
    assert times.micros == pytest.approx((1.0, 2.0, 100.0))


def test_fault_report_names_registers() -> None:
    payload = bytes([1, 5]) + b"fault" + bytes([2]) + bytes([2]) + b"pc" + struct.pack("<Q", 0x5CC)
    payload += bytes([6]) + b"signal" + struct.pack("<Q", 11)
    report = m.FaultReport.parse(payload)
    assert report is not None
    assert report.fields == {"pc": 0x5CC, "signal": 11}
    assert "pc=0x000005cc" in report.describe() and "signal=11" in report.describe()
    assert m.FaultReport.parse(bytes([0, 0, 0])) is None


def _hello(minor: int, flags: int = 0, tail: bytes = b"") -> bytes:
    """A HELLO reply as a runner of protocol 1.`minor` sends it; `tail`: what 1.4 and later
    append after the pools."""
    out = struct.pack("<HHIQBBBBHH", 1, minor, 4096, 10**9, 0, 1, flags, 1, 1, 0) + bytes(32)
    for text in ("host-0123", "1.0.0", "posix-x86_64", "executorch", "model"):
        out += bytes([len(text)]) + text.encode()
    return out + struct.pack("<Q", 1 << 20) + tail


def _str8(text: str) -> bytes:
    return bytes([len(text)]) + text.encode()


def test_a_runner_older_than_1_4_did_not_say_whether_a_fault_is_planted() -> None:
    """A 1.3 HELLO ends after the pools: read whole, its build neither release nor test."""
    info = m.RunnerInfo.parse(_hello(3))
    assert info.protocol == (1, 3) and info.pools == {"model": 1 << 20}
    assert info.planted_fault == "" and not info.says_planted_fault
    assert info.build == "unknown"
    assert m.RunnerInfo.parse(_hello(3, flags=m.HELLO_DEBUG)).build == "test"


def test_a_1_4_runner_names_its_planted_fault_or_says_it_has_none() -> None:
    planted = m.RunnerInfo.parse(_hello(4, m.HELLO_PLANTED_FAULT, _str8("aten::add.out")))
    assert planted.planted_fault == "aten::add.out" and planted.says_planted_fault
    assert planted.build == "test"
    release = m.RunnerInfo.parse(_hello(4, tail=_str8("")))
    assert release.planted_fault == "" and release.says_planted_fault
    assert release.build == "release"
    # the flag without a name is a test build all the same
    assert m.RunnerInfo.parse(_hello(4, m.HELLO_PLANTED_FAULT, _str8(""))).build == "test"


def test_fields_a_later_minor_appends_are_left_unread() -> None:
    info = m.RunnerInfo.parse(_hello(9, tail=_str8("") + b"\x07later fields"))
    assert info.protocol == (1, 9) and info.build == "release"


def test_a_1_4_runner_without_the_planted_fault_field_speaks_another_dialect() -> None:
    with pytest.raises(ProtocolError, match="too short"):
        m.RunnerInfo.parse(_hello(4))
