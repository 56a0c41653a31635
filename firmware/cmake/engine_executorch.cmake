# The ExecuTorch engine.
#
# posix: link the prebuilt runtime, kernels and XNNPACK from the executorch Python package
#   (the wheel ships include/, lib/*.so and a CMake package; its imported targets need
#   CMake >= 3.28, so use pip's cmake). EXECUTORCH_ROOT is that package folder; when empty it
#   is asked from python3.
# cortex-m: link an ExecuTorch built from source for the CPU and installed with
#   `cmake --install` (EXECUTORCH_ROOT = that install prefix: include/, lib/*.a and
#   lib/cmake/ExecuTorch; optionally version.txt: the version on line 1, the commit on line 2).
#   See firmware/README.md "ExecuTorch for bare metal" for the options it must be built with.
target_sources(hil-runner PRIVATE ${HIL_SRC}/engine/executorch_engine.cpp)
target_compile_definitions(hil-runner PRIVATE HIL_WITH_EXECUTORCH=1)
if(HIL_PLANTED_FAULT)  # tests only: a runner with one kernel wrong on purpose
  target_sources(hil-runner PRIVATE ${HIL_SRC}/engine/planted_fault.cpp)
  target_compile_definitions(hil-runner PRIVATE HIL_PLANTED_FAULT="${HIL_PLANTED_FAULT}")
endif()

if(HIL_PLATFORM STREQUAL "posix")
  if(NOT EXECUTORCH_ROOT AND CMAKE_CROSSCOMPILING)
    message(FATAL_ERROR "a cross build of the ExecuTorch engine needs EXECUTORCH_ROOT: the "
                        "executorch folder of a wheel for ${CMAKE_SYSTEM_PROCESSOR} (pip download "
                        "--no-deps --only-binary=:all: --platform manylinux_2_28_aarch64 "
                        "--python-version 3.11 executorch==1.5.1, then unzip), or "
                        "-DHIL_ENGINE_EXECUTORCH=OFF for the echo engine")
  endif()
  if(NOT EXECUTORCH_ROOT)
    find_program(HIL_PYTHON NAMES python3 python)
    execute_process(
      COMMAND ${HIL_PYTHON} -c "import executorch; print(list(executorch.__path__)[0])"
      OUTPUT_VARIABLE EXECUTORCH_ROOT OUTPUT_STRIP_TRAILING_WHITESPACE RESULT_VARIABLE found)
    if(NOT found EQUAL 0)
      message(FATAL_ERROR "EXECUTORCH_ROOT is not set and '${HIL_PYTHON}' cannot import executorch; "
                          "pass -DEXECUTORCH_ROOT=<site-packages>/executorch or activate the venv")
    endif()
  endif()
  set(executorch_DIR "${EXECUTORCH_ROOT}/lib/cmake/executorch")
  find_package(executorch CONFIG REQUIRED)
  # The runtime carries no operator kernels: a model needs the kernel libraries, and an int8
  # model the quantized ones (opt-in in the package; safe in a process without Python).
  set(hil_et_libs executorch::runtime)
  foreach(component kernels_optimized kernels_quantized backend_xnnpack threadpool)
    if(TARGET executorch::${component})
      list(APPEND hil_et_libs executorch::${component})
    endif()
  endforeach()
  # ETDump (TRACE): the wheel ships the recorder and builds its runtime with the event tracer on.
  if(TARGET executorch::etdump AND NOT HIL_ETDUMP STREQUAL "OFF")
    list(APPEND hil_et_libs executorch::etdump)
    target_compile_definitions(hil-runner PRIVATE HIL_WITH_ETDUMP=1)
  endif()
  target_link_libraries(hil-runner PRIVATE ${hil_et_libs})
  set(hil_et_version "${EXECUTORCH_BUILD_VERSION}")
else()
  if(NOT EXECUTORCH_ROOT)
    message(FATAL_ERROR "the ExecuTorch engine for ${HIL_CPU} needs EXECUTORCH_ROOT: the install "
                        "prefix of an ExecuTorch built for it (see firmware/README.md), or "
                        "-DHIL_ENGINE_EXECUTORCH=OFF for the echo engine")
  endif()
  find_package(executorch CONFIG REQUIRED PATHS "${EXECUTORCH_ROOT}" NO_DEFAULT_PATH
               NO_CMAKE_FIND_ROOT_PATH)
  target_compile_options(hil-runner PRIVATE $<$<COMPILE_LANGUAGE:CXX>:-fno-exceptions -fno-rtti>)
  # Kernels: the selective build's registration library when the install has one (it
  # registers only the operators it was built with: EXECUTORCH_SELECT_OPS_LIST / _MODEL),
  # else every portable kernel (which overflows a Cortex-M's memories and pulls getentropy).
  set(hil_et_registrations quantized_ops_lib cortex_m_ops_lib)
  if(TARGET executorch_selected_kernels)
    list(PREPEND hil_et_registrations executorch_selected_kernels)
  else()
    list(PREPEND hil_et_registrations portable_ops_lib)
  endif()
  # The Ethos-U delegate only where the board has an NPU for it (and a driver started).
  if(TARGET executorch_delegate_ethos_u AND hil_board_npu AND NOT HIL_ETHOS_U STREQUAL "OFF")
    list(APPEND hil_et_registrations executorch_delegate_ethos_u)
  endif()
  set(hil_et_libs executorch executorch_core)
  foreach(lib IN LISTS hil_et_registrations)
    if(NOT TARGET ${lib})
      continue()
    endif()
    list(APPEND hil_et_libs ${lib})
    # A registration library must be linked whole. The install's exports already say so for
    # the kernel libraries (--whole-archive in INTERFACE_LINK_OPTIONS): wrapping those again
    # registers every kernel twice, and the runtime aborts at boot ("Re-registering
    # aten::add.out"). Those exported without it (the Ethos-U delegate) are wrapped here;
    # CMake's WHOLE_ARCHIVE link feature is refused for CXX on the Generic platform.
    get_target_property(hil_lib_options ${lib} INTERFACE_LINK_OPTIONS)
    if(NOT "${hil_lib_options}" MATCHES "whole-archive")
      target_link_options(hil-runner PRIVATE
                          "SHELL:LINKER:--whole-archive $<TARGET_FILE:${lib}> LINKER:--no-whole-archive")
    endif()
  endforeach()
  # Position-independent code would make the reset handler read __data_start through a GOT
  # that nothing has copied yet (a HardFault before main): whatever the install exports, the
  # runner is built without -fPIC.
  foreach(lib executorch executorch_core kernels_util_all_deps portable_kernels ${hil_et_registrations})
    if(TARGET ${lib})
      get_target_property(hil_lib_copts ${lib} INTERFACE_COMPILE_OPTIONS)
      if(hil_lib_copts AND "${hil_lib_copts}" MATCHES "-f(PIC|pic|PIE|pie)")
        string(REGEX REPLACE "-f(PIC|pic|PIE|pie)" "-fno-pic" hil_lib_copts "${hil_lib_copts}")
        set_target_properties(${lib} PROPERTIES INTERFACE_COMPILE_OPTIONS "${hil_lib_copts}")
      endif()
    endif()
  endforeach()
  target_compile_options(hil-runner PRIVATE -fno-pic)
  # ETDump (TRACE) where the install has it (EXECUTORCH_BUILD_DEVTOOLS with the event tracer):
  # its flatcc builder works in a buffer carved from the model pool, never on a heap.
  # (the headers are copied into the install by `hil sdk build`; ExecuTorch installs none)
  if(TARGET etdump AND TARGET flatccrt AND NOT HIL_ETDUMP STREQUAL "OFF"
     AND EXISTS "${EXECUTORCH_ROOT}/include/executorch/devtools/etdump/etdump_flatcc.h")
    list(APPEND hil_et_libs etdump flatccrt)
    target_compile_definitions(hil-runner PRIVATE HIL_WITH_ETDUMP=1
                                                  HIL_ETDUMP_BUILDER_BYTES=${HIL_ETDUMP_BUILDER_BYTES})
  endif()
  target_link_libraries(hil-runner PRIVATE ${hil_et_libs})
  if(EXISTS "${EXECUTORCH_ROOT}/version.txt")
    file(STRINGS "${EXECUTORCH_ROOT}/version.txt" hil_et_version_lines LIMIT_COUNT 2)
    list(GET hil_et_version_lines 0 executorch_VERSION)
    list(LENGTH hil_et_version_lines hil_n)
    if(hil_n GREATER 1)
      list(GET hil_et_version_lines 1 hil_et_commit)
      string(SUBSTRING "${hil_et_commit}" 0 8 hil_et_commit)
      string(APPEND executorch_VERSION "+${hil_et_commit}")
    endif()
  endif()
  message(STATUS "hil-runner: ExecuTorch ${executorch_VERSION} from ${EXECUTORCH_ROOT}: ${hil_et_libs}")
  set(hil_et_version "${executorch_VERSION}")
endif()
if(NOT hil_et_version)
  set(hil_et_version "unknown")
endif()
target_compile_definitions(hil-runner PRIVATE HIL_EXECUTORCH_VERSION="${hil_et_version}")
target_include_directories(hil-runner PRIVATE ${HIL_SRC})
