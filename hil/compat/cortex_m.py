"""ExecuTorch's Cortex-M backend where 1.4 and 1.5 differ.

* The to_edge configuration it requires (the operators its passes lower must survive to_edge;
  edge validation off): 1.5 names it in `backends.cortex_m.edge_compile_config`; 1.4 keeps the
  same settings in its Cortex-M test harness's ToEdge stage only, what its own tests lower with.
* The quantizer: 1.5's takes a configuration (8- or 16-bit activations); 1.4's has one, 8-bit.
"""

from __future__ import annotations

import importlib.util
import inspect
from typing import Any

from hil.compat.versions import installed
from hil.errors import ExportError


def edge_compile_config() -> Any:
    """The Cortex-M backend's EdgeCompileConfig, wherever this ExecuTorch keeps it."""
    if importlib.util.find_spec("executorch.backends.cortex_m.edge_compile_config"):
        from executorch.backends.cortex_m.edge_compile_config import cortex_m_edge_compile_config

        return cortex_m_edge_compile_config()
    from executorch.backends.cortex_m.test.tester import CortexMToEdge

    return CortexMToEdge().edge_compile_conf


def quantizer(int16_activations: bool) -> Any:
    """The CortexMQuantizer for 8- or 16-bit activations; an ExportError naming the version
    where this ExecuTorch has no 16-bit configuration."""
    from executorch.backends.cortex_m.quantizer import quantization_configs as configs
    from executorch.backends.cortex_m.quantizer.quantizer import CortexMQuantizer

    if not inspect.signature(CortexMQuantizer).parameters:  # one configuration: 8-bit
        if int16_activations:
            raise ExportError(
                f"{installed().describe()}: its Cortex-M quantizer has 8-bit activations only",
                fix="16-bit activations (int16_activations: true) need ExecuTorch 1.5 or later",
            )
        return CortexMQuantizer()
    config = (
        configs.INT16_PER_TENSOR_CONFIG if int16_activations else configs.INT8_PER_TENSOR_CONFIG
    )
    return CortexMQuantizer(config)
