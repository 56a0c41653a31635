"""ExecuTorch's Cortex-M backend where 1.4 and 1.5 differ.

* The to_edge configuration it requires (the operators its passes lower must survive to_edge;
  edge validation off): 1.5 names it in `backends.cortex_m.edge_compile_config`; 1.4 keeps the
  same settings in its Cortex-M test harness's ToEdge stage only, what its own tests lower with.
* The quantizer: 1.5's takes a configuration (8- or 16-bit activations); 1.4's has one, 8-bit.
* CMSIS-NN's Python bindings, which the passes size scratch buffers with: in both wheels, but
  a source build leaves them out unless CMSIS-NN was at hand when it was configured.
"""

from __future__ import annotations

import importlib.util
import inspect
from typing import Any

from hil.compat.versions import installed
from hil.errors import ExporterIncomplete, ExportError


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


# ExecuTorch's own option for them, and where its CMake finds CMSIS-NN without a download
CMSIS_NN_FIX = (
    "rebuild ExecuTorch with CMAKE_ARGS='-DEXECUTORCH_BUILD_CMSIS_NN_PYBINDS=ON "
    "-DCMSIS_NN_LOCAL_PATH=<CMSIS-NN checkout at the commit backends/cortex_m/CMakeLists.txt "
    "names>' (the registry's wheels have them)"
)


def missing_cmsis_nn_bindings() -> str | None:
    """Why this ExecuTorch cannot lower for a Cortex-M: it was built without CMSIS-NN's Python
    bindings (its Cortex-M passes fail inside with a ModuleNotFoundError); None when it has
    them or does not use them."""
    try:
        from executorch.backends.cortex_m.library import cmsis_nn
    except ImportError:
        return None
    if getattr(cmsis_nn, "_cmsis_nn", cmsis_nn) is not None:
        return None
    return (
        f"{installed().describe()} was built without CMSIS-NN's Python bindings "
        "(executorch.backends.cortex_m.library._cmsis_nn), which its Cortex-M passes need"
    )


def require_cmsis_nn_bindings() -> None:
    """ExporterIncomplete naming the missing bindings, before a Cortex-M lowering starts."""
    missing = missing_cmsis_nn_bindings()
    if missing is not None:
        raise ExporterIncomplete(missing, fix=CMSIS_NN_FIX)
