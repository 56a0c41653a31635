"""The SIMD path named from the CPU's flags, as /proc/cpuinfo gives them."""

from __future__ import annotations

import pytest

from hil import simd


@pytest.mark.parametrize(
    ("machine", "flags", "path"),
    [
        ("x86_64", "fpu sse avx avx2 fma avx512f avx512bw avx512_vnni", "avx512-vnni"),
        ("x86_64", "fpu sse avx avx2 fma avx512f avx512bw", "avx512"),
        ("x86_64", "fpu sse avx avx2 fma avx_vnni", "avx-vnni"),
        ("x86_64", "fpu sse avx avx2 fma bmi2", "avx2"),
        ("x86_64", "fpu sse sse2", "x86_64"),
        ("aarch64", "fp asimd asimddp i8mm", "i8mm"),
        ("aarch64", "fp asimd asimddp", "dotprod"),
        ("aarch64", "fp asimd", "aarch64"),
    ],
)
def test_the_path_is_the_most_capable_one_the_flags_allow(
    monkeypatch: pytest.MonkeyPatch, machine: str, flags: str, path: str
) -> None:
    monkeypatch.setattr(simd.platform, "machine", lambda: machine)
    monkeypatch.setattr(simd, "_cpu_flags", lambda: frozenset(flags.split()))
    simd.simd_path.cache_clear()
    try:
        assert simd.simd_path() == path
    finally:
        simd.simd_path.cache_clear()


def test_this_machine_has_a_path() -> None:
    assert simd.simd_path()
