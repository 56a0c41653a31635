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
