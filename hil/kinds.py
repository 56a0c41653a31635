"""The closed sets hil speaks in: numerics, timing kinds, hardware kinds, target kinds.

String enums: they compare equal to their text and are written as it in JSON records, so a
device file, a record and the code all say "int8" while the code cannot misspell it.
"""

from __future__ import annotations

import enum


class Numerics(enum.StrEnum):
    FP32 = "fp32"
    INT8 = "int8"
    A16W8 = "a16w8"  # 16-bit activations, int8 weights
    A8W4 = "a8w4"  # int8 activations, 4-bit weights (Ethos-U)


class Timing(enum.StrEnum):
    MEASURED = "measured"  # on the device's own clock
    ESTIMATED = "estimated"  # a compiler's estimate (Vela)
    EMULATED = "emulated"  # an emulator's virtual time (QEMU, an FVP's simulated clock)


class Hardware(enum.StrEnum):
    FIXED = "fixed"  # a named piece of hardware: absolute budgets apply
    HOST = "host"  # whatever machine runs hil: budgets relative to eager


class TargetKind(enum.StrEnum):
    HOST = "host"
    ETHOS_U_REF = "ethos_u_ref"
    TOSA_REF = "tosa_ref"
    VGF_EMU = "vgf_emu"
    CORTEX_M_REF = "cortex_m_ref"
    SERIAL = "serial"
    SSH = "ssh"
    FVP = "fvp"
