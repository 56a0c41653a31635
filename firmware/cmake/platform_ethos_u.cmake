# The Ethos-U NPU of the Corstone platforms (src/platform/cortex_m/ethos_u/): Arm's
# ethos-u-core-driver started at boot with the board's NPU base and interrupt, and the NPU's
# PMU read around every inference into the log line hil/fvp/pmu.py parses.
#
# HIL_ETHOS_U=AUTO (the default) turns it on exactly when the runner links an ExecuTorch with
# the Ethos-U delegate: that delegate cannot run without a started driver. ON also builds it
# with the echo engine, to bring up the NPU's start on a new platform before ExecuTorch.
set(HIL_ETHOS_U "AUTO" CACHE STRING
    "ON: start the Ethos-U NPU and report its PMU; OFF: no NPU; AUTO: ON when ExecuTorch has the Ethos-U delegate")
set_property(CACHE HIL_ETHOS_U PROPERTY STRINGS AUTO ON OFF)
set(ETHOSU_DRIVER_ROOT "" CACHE PATH
    "the ethos-u-core-driver (folder with include/ethosu_driver.h) of ExecuTorch's examples/arm/setup.sh; searched in the ExecuTorch tree around EXECUTORCH_ROOT when empty")
set(HIL_ETHOS_U_NPU "" CACHE STRING
    "the NPU the driver drives, ethos-u<55|65|85>-<MACs>; empty: the board's (corstone-300 ethos-u55-128, corstone-320 ethos-u85-256)")
set(HIL_ETHOS_U_FAST_MEMORY_SIZE "" CACHE STRING
    "bytes of SRAM for Vela's Dedicated_Sram fast scratch; empty: 393216 for the U65/U85, 0 for the U55")

if(HIL_ETHOS_U STREQUAL "AUTO")
  if(TARGET executorch_delegate_ethos_u AND hil_board_npu)
    set(HIL_ETHOS_U ON)
  else()
    set(HIL_ETHOS_U OFF)
  endif()
endif()
if(NOT HIL_ETHOS_U)
  return()
endif()

set(hil_npu "${HIL_ETHOS_U_NPU}")
if(NOT hil_npu)
  set(hil_npu "${hil_board_npu}")
endif()
string(REGEX MATCH "^ethos-(u55|u65|u85)-[0-9]+$" hil_npu_valid "${hil_npu}")
if(NOT hil_npu_valid)
  message(FATAL_ERROR "HIL_ETHOS_U: no Ethos-U NPU known for board ${HIL_BOARD} "
                      "(HIL_ETHOS_U_NPU='${HIL_ETHOS_U_NPU}'): the corstone-300 and corstone-320 "
                      "presets have one; elsewhere pass -DHIL_ETHOS_U=OFF")
endif()
string(TOUPPER "${CMAKE_MATCH_1}" hil_npu_arch) # U55: the driver's headers key on ETHOSU55 etc.

set(hil_fast_memory "${HIL_ETHOS_U_FAST_MEMORY_SIZE}")
if(hil_fast_memory STREQUAL "")
  if(hil_npu_arch STREQUAL "U55")
    set(hil_fast_memory 0)     # the U55 has no Dedicated_Sram mode
  else()
    set(hil_fast_memory 393216) # 384 KiB: ExecuTorch's default Dedicated_Sram_384KB
  endif()
endif()

# ExecuTorch's examples/arm/setup.sh checks the driver out inside the ExecuTorch tree; an
# install prefix inside that tree (cmake-out-arm, arm_test/cmake-out) finds it from here.
if(NOT ETHOSU_DRIVER_ROOT AND EXECUTORCH_ROOT)
  find_path(HIL_ETHOSU_DRIVER_FOUND include/ethosu_driver.h
            PATHS "${EXECUTORCH_ROOT}/.." "${EXECUTORCH_ROOT}/../.."
            PATH_SUFFIXES examples/arm/arm-scratch/ethos-u/core_software/core_driver
                          examples/arm/ethos-u-scratch/ethos-u/core_software/core_driver
            NO_DEFAULT_PATH NO_CMAKE_FIND_ROOT_PATH)
  mark_as_advanced(HIL_ETHOSU_DRIVER_FOUND)
  if(HIL_ETHOSU_DRIVER_FOUND)
    set(ETHOSU_DRIVER_ROOT "${HIL_ETHOSU_DRIVER_FOUND}")
  endif()
endif()
# An install that carries the driver (its headers in include/, libethosu_core_driver.a in lib/)
# serves when no driver source is given; it must be built for this board's NPU.
set(hil_driver_include "${ETHOSU_DRIVER_ROOT}/include")
if(NOT ETHOSU_DRIVER_ROOT AND EXISTS "${EXECUTORCH_ROOT}/include/ethosu_driver.h"
   AND EXISTS "${EXECUTORCH_ROOT}/lib/libethosu_core_driver.a")
  set(hil_driver_include "${EXECUTORCH_ROOT}/include")
  if(NOT TARGET ethosu_core_driver)
    add_library(ethosu_core_driver STATIC IMPORTED)
    set_target_properties(ethosu_core_driver PROPERTIES
      IMPORTED_LOCATION "${EXECUTORCH_ROOT}/lib/libethosu_core_driver.a")
  endif()
  set(ETHOSU_DRIVER_ROOT "${EXECUTORCH_ROOT}")
  message(STATUS "hil-runner: the Ethos-U driver of the install (${EXECUTORCH_ROOT}/lib/"
                 "libethosu_core_driver.a): it must have been built for ${hil_npu}")
endif()
if(NOT EXISTS "${hil_driver_include}/ethosu_driver.h")
  message(FATAL_ERROR "the runner's Ethos-U start-up needs Arm's ethos-u-core-driver: set "
                      "ETHOSU_DRIVER_ROOT (environment or -D) to its folder, the one with "
                      "include/ethosu_driver.h; ExecuTorch's examples/arm/setup.sh checks it out "
                      "at <executorch>/examples/arm/arm-scratch/ethos-u/core_software/core_driver. "
                      "Or -DHIL_ETHOS_U=OFF for a runner without the NPU (the Ethos-U delegate "
                      "then cannot run). Looked in '${ETHOSU_DRIVER_ROOT}'.")
endif()

# ExecuTorch exports the driver library it was built with (engine_executorch.cmake links it);
# without it (the echo engine, or an ExecuTorch that does not export it) build it from source.
if(NOT TARGET ethosu_core_driver)
  set(ETHOSU_TARGET_NPU_CONFIG "${hil_npu}" CACHE STRING "the NPU the driver is built for" FORCE)
  add_subdirectory("${ETHOSU_DRIVER_ROOT}" ethosu_core_driver EXCLUDE_FROM_ALL)
  target_compile_options(ethosu_core_driver PRIVATE ${hil_cpu_flags})
endif()

target_sources(hil-runner PRIVATE
  ${HIL_SRC}/platform/cortex_m/ethos_u/npu_start.c
  ${HIL_SRC}/platform/cortex_m/ethos_u/npu_pmu.c)
target_include_directories(hil-runner PRIVATE "${hil_driver_include}")
target_compile_definitions(hil-runner PRIVATE
  HIL_ETHOS_U=1 ETHOS${hil_npu_arch}=1 HIL_NPU_FAST_MEMORY_SIZE=${hil_fast_memory})
target_link_libraries(hil-runner PRIVATE ethosu_core_driver)
message(STATUS "hil-runner: Ethos-U ${hil_npu} (driver ${ETHOSU_DRIVER_ROOT}), "
               "fast memory ${hil_fast_memory} bytes")
