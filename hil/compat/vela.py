"""What ExecuTorch's `vela_compile` hands back: the NPU command stream as bytes (1.4), or a
result whose `processed_bytes` holds it beside the external weight blocks (1.5)."""

from __future__ import annotations

from typing import Any


def command_stream(compiled: Any) -> bytes:
    """The command stream of a vela_compile result, from either form."""
    return bytes(getattr(compiled, "processed_bytes", compiled))
