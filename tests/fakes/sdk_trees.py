"""Small stand-ins for the source trees `hil sdk build` reads: not ExecuTorch, CMSIS-NN, the
Ethos-U driver or CMSIS (CI has none of them and cannot fetch them), but trees with the same
layout and the same files hil checks and parses, and CMake projects that really configure,
cross-compile with arm-none-eabi-gcc and install what the real ones install (a static library
per registration library, a CMake package, the selected_operators.yaml ExecuTorch's codegen
writes). What they do not honour: any real kernel, driver or runtime code."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

PORTABLE = ("add.out", "convolution.out", "relu.out", "mean.out", "view_copy.out")
QUANTIZED = (
    "quantized_decomposed::quantize_per_tensor.out",
    "quantized_decomposed::dequantize_per_tensor.out",
)
CORTEX_M = ("cortex_m::quantized_add.out", "cortex_m::quantized_conv2d.out")
PRIM = ("aten::sym_size.int", "executorch_prim::add.Scalar")

TOOLCHAIN = """\
set(TARGET_CPU "cortex-m55" CACHE STRING "Target CPU")
set(CMAKE_SYSTEM_NAME Generic)
set(CMAKE_SYSTEM_PROCESSOR ${TARGET_CPU})
set(CMAKE_C_COMPILER arm-none-eabi-gcc)
set(CMAKE_CXX_COMPILER arm-none-eabi-g++)
set(CMAKE_TRY_COMPILE_TARGET_TYPE STATIC_LIBRARY)
string(REPLACE "cortex-m85" "cortex-m55" GCC_CPU ${TARGET_CPU})
add_compile_options(-mcpu=${GCC_CPU} -mthumb -mfloat-abi=hard)
"""

# Registers what the select list asks for, plus every quantized and cortex_m operator, as
# ExecuTorch's gen_selected_ops does; installs one library per registration library.
EXECUTORCH_CMAKE = """\
cmake_minimum_required(VERSION 3.24)
project(executorch C)
if(FETCHCONTENT_FULLY_DISCONNECTED STREQUAL "ON")
  message(STATUS "fake executorch: offline")
endif()
if(NOT MAX_KERNEL_NUM)
  message(FATAL_ERROR "fake executorch: MAX_KERNEL_NUM not given")
endif()
if(FAIL_ON_PURPOSE)
  message(FATAL_ERROR "fake executorch: failing as asked")
endif()
string(REPLACE "," ";" ops "${EXECUTORCH_SELECT_OPS_LIST}")
set(yaml "operators:\\n")
foreach(op IN LISTS ops)
  string(APPEND yaml "  ${op}: {}\\n")
endforeach()
file(WRITE ${CMAKE_BINARY_DIR}/executorch_selected_kernels/selected_operators.yaml "${yaml}")
file(WRITE ${CMAKE_BINARY_DIR}/kernels/quantized/quantized_ops_lib/selected_operators.yaml
     "operators:\\n@QUANTIZED@")
file(WRITE ${CMAKE_BINARY_DIR}/backends/cortex_m/cortex_m_ops_lib/selected_operators.yaml
     "operators:\\n@CORTEX_M@")
file(WRITE ${CMAKE_BINARY_DIR}/fake.c "int hil_fake_kernel(void) { return 1; }\\n")
foreach(lib executorch executorch_core executorch_selected_kernels quantized_ops_lib cortex_m_ops_lib)
  add_library(${lib} STATIC ${CMAKE_BINARY_DIR}/fake.c)
  install(TARGETS ${lib} DESTINATION lib)
endforeach()
if(EXECUTORCH_BUILD_ARM_BAREMETAL)
  if(NOT EXISTS "${ETHOS_SDK_PATH}/core_software/core_driver/include/ethosu_driver.h")
    message(FATAL_ERROR "fake executorch: no driver headers under ${ETHOS_SDK_PATH}")
  endif()
  add_library(executorch_delegate_ethos_u STATIC ${CMAKE_BINARY_DIR}/fake.c)
  install(TARGETS executorch_delegate_ethos_u DESTINATION lib)
endif()
file(WRITE ${CMAKE_BINARY_DIR}/executorch-config.cmake "# fake\\n")
install(FILES ${CMAKE_BINARY_DIR}/executorch-config.cmake DESTINATION lib/cmake/ExecuTorch)
"""

DRIVER_CMAKE = """\
cmake_minimum_required(VERSION 3.15)
project(ethosu_core_driver C)
if(NOT EXISTS "${CMSIS_PATH}/CMSIS/Core/Include/cmsis_compiler.h")
  message(FATAL_ERROR "fake driver: no CMSIS at ${CMSIS_PATH}")
endif()
add_library(ethosu_core_driver STATIC src/ethosu_driver.c)
target_compile_definitions(ethosu_core_driver PRIVATE NPU="${ETHOSU_TARGET_NPU_CONFIG}")
"""

DRIVER_API = (
    "ethosu_init",
    "ethosu_irq_handler",
    "ethosu_invoke_v3",
    "ethosu_reserve_driver",
    "ethosu_release_driver",
    "ethosu_inference_begin",
    "ethosu_inference_end",
)
PMU_API = (
    "ETHOSU_PMU_CNTR_Enable",
    "ETHOSU_PMU_CYCCNT_Reset",
    "ETHOSU_PMU_Disable",
    "ETHOSU_PMU_EVCNTR_ALL_Reset",
    "ETHOSU_PMU_Enable",
    "ETHOSU_PMU_Get_CCNTR",
    "ETHOSU_PMU_Get_EVCNTR",
    "ETHOSU_PMU_PMCCNTR_CFG_Set_Start_Event",
    "ETHOSU_PMU_PMCCNTR_CFG_Set_Stop_Event",
    "ETHOSU_PMU_Set_EVTYPER",
)


@dataclass(frozen=True)
class Trees:
    executorch: Path
    cmsis_nn: Path
    driver: Path
    cmsis: Path


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def _yaml_list(names: tuple[str, ...]) -> str:
    return "".join(f"  {name}: {{}}\\n" for name in names)


def make_trees(root: Path, *, driver_api: tuple[str, ...] = DRIVER_API + PMU_API) -> Trees:
    et = root / "executorch"
    cmake = EXECUTORCH_CMAKE.replace("@QUANTIZED@", _yaml_list(QUANTIZED)).replace(
        "@CORTEX_M@", _yaml_list(CORTEX_M)
    )
    _write(et / "CMakeLists.txt", cmake)
    _write(et / "runtime" / "executor" / "program.h", "// fake\n")
    _write(et / "version.txt", "1.5.0\n")
    _write(et / "tools/cmake/preset/arm_baremetal.cmake", "# fake preset\n")
    _write(et / "examples/arm/ethos-u-setup/arm-none-eabi-gcc.cmake", TOOLCHAIN)
    for sub in (
        "third-party/flatbuffers",
        "third-party/flatcc",
        "third-party/gflags",
        "third-party/json",
        "backends/xnnpack/third-party/FXdiv",
    ):
        _write(et / sub / "CMakeLists.txt", "# fake submodule\n")
    _write(
        et / "kernels/portable/functions.yaml",
        "".join(
            f"- op: {op}\n  kernels:\n    - arg_meta: null\n      kernel_name: k\n"
            for op in PORTABLE
        )
        + "- func: dim_order_ops::_to_dim_order_copy.out(Tensor self) -> Tensor\n",
    )
    _write(
        et / "kernels/quantized/quantized.yaml",
        "".join(f"- func: {op}(Tensor a) -> Tensor\n" for op in QUANTIZED),
    )
    _write(
        et / "backends/cortex_m/ops/operators.yaml",
        "".join(f"- func: {op}(Tensor a) -> Tensor\n" for op in CORTEX_M),
    )
    _write(
        et / "backends/cortex_m/CMakeLists.txt",
        'set(CMSIS_NN_VERSION\n    "dbf45dbfcc515421dd6099037d3e2637b90748c8"\n',
    )
    _write(
        et / "kernels/prim_ops/register_prim_ops.cpp",
        "static Kernel prim_ops[] = {\n"
        + "".join(f'    Kernel(\n        "{op}",\n        fn),\n' for op in PRIM)
        + "};\n",
    )
    _write(
        et / "backends/arm/runtime/EthosUBackend_Cortex_M.cpp",
        'extern "C" __attribute__((weak)) int ethosu_reserve_driver_ex(int a) { return 0; }\n'
        "void f() { ethosu_reserve_driver_ex(1); ethosu_invoke_v3(d, 0); "
        "ethosu_reserve_driver(); }\n",
    )
    cmsis_nn = root / "cmsis-nn"
    _write(cmsis_nn / "Include/arm_nnfunctions.h", "// fake\n")
    _write(cmsis_nn / "CMakeLists.txt", "# fake\n")
    driver = root / "ethos-u-core-driver"
    _write(driver / "CMakeLists.txt", DRIVER_CMAKE)
    _write(
        driver / "include/ethosu_driver.h", "".join(f"int {name}(void);\n" for name in driver_api)
    )
    _write(driver / "include/pmu_ethosu.h", "// the PMU functions, in a fake header\n")
    _write(driver / "src/ethosu_driver.c", "int ethosu_fake(void) { return 0; }\n")
    _write(driver / "src/ethosu_device_u55_u65.c", "\n")
    _write(driver / "src/ethosu_device_u85.c", "\n")
    cmsis = root / "cmsis"
    _write(cmsis / "CMSIS/Core/Include/cmsis_compiler.h", "// fake\n")
    return Trees(et, cmsis_nn, driver, cmsis)
