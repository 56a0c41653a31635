"""What a built runner ELF says about itself, read with binutils (arm-none-eabi-readelf, nm)."""

from __future__ import annotations

import re
import struct
import subprocess
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Section:
    name: str
    addr: int
    offset: int
    size: int
    loaded: bool  # occupies the image (PROGBITS), not NOLOAD/NOBITS


def sections(elf: Path) -> list[Section]:
    out = subprocess.run(
        ["arm-none-eabi-readelf", "-S", "-W", str(elf)], capture_output=True, text=True, check=True
    ).stdout
    found = []
    for m in re.finditer(
        r"\]\s+(\S+)\s+(\w+)\s+([0-9a-f]{8})\s+([0-9a-f]{6,8})\s+([0-9a-f]{6,8})"
        r"\s+\S+\s+(\S*A\S*)\s",
        out,
    ):
        name, kind, addr, off, size, _ = m.groups()
        found.append(Section(name, int(addr, 16), int(off, 16), int(size, 16), kind == "PROGBITS"))
    return found


def symbols(elf: Path) -> dict[str, int]:
    out = subprocess.run(
        ["arm-none-eabi-nm", str(elf)], capture_output=True, text=True, check=True
    ).stdout
    return {m[2]: int(m[1], 16) for m in re.finditer(r"^([0-9a-f]+) \w (\S+)$", out, re.M)}


def read_words(elf: Path, address: int, count: int) -> tuple[int, ...]:
    """`count` little-endian words at `address` in the image."""
    for s in sections(elf):
        if s.loaded and s.addr <= address < s.addr + s.size:
            with elf.open("rb") as f:
                f.seek(s.offset + address - s.addr)
                return struct.unpack(f"<{count}I", f.read(4 * count))
    raise AssertionError(f"0x{address:08x} is in no loaded section of {elf}")


def memory_regions(linker_script: Path) -> dict[str, tuple[int, int]]:
    text = linker_script.read_text()
    return {
        m[1]: (int(m[2], 0), int(m[3], 0))
        for m in re.finditer(
            r"^\s*(\w+) \(\w+\) : ORIGIN = (0x[0-9A-Fa-f]+), LENGTH = (0x[0-9A-Fa-f]+)", text, re.M
        )
    }
