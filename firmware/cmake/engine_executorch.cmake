# The ExecuTorch engine.
#
# posix: link the prebuilt runtime, kernels and XNNPACK from the executorch Python package
#   (the wheel ships include/, lib/*.so and a CMake package; its imported targets need
#   CMake >= 3.28, so use pip's cmake). EXECUTORCH_ROOT is that package folder; when empty it
#   is asked from python3.
# cortex-m: link an ExecuTorch built from source for the CPU and installed with
#   `cmake --install` (EXECUTORCH_ROOT = that install prefix: include/, lib/*.a and
#   lib/cmake/ExecuTorch). Untested on these machines, which have no ExecuTorch source tree.
target_sources(hil-runner PRIVATE ${HIL_SRC}/engine/executorch_engine.cpp)
target_compile_definitions(hil-runner PRIVATE HIL_WITH_EXECUTORCH=1)

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
  # Registration-only libraries (operator tables, delegates) must be kept whole.
  set(hil_et_libs executorch executorch_core)
  foreach(lib portable_ops_lib quantized_ops_lib cortex_m_ops_lib executorch_delegate_ethos_u)
    if(TARGET ${lib})
      list(APPEND hil_et_libs "$<LINK_LIBRARY:WHOLE_ARCHIVE,${lib}>")
    endif()
  endforeach()
  foreach(lib portable_kernels quantized_kernels cortex_m_kernels ethosu_core_driver)
    if(TARGET ${lib})
      list(APPEND hil_et_libs ${lib})
    endif()
  endforeach()
  target_link_libraries(hil-runner PRIVATE ${hil_et_libs})
  set(hil_et_version "${executorch_VERSION}")
endif()
if(NOT hil_et_version)
  set(hil_et_version "unknown")
endif()
target_compile_definitions(hil-runner PRIVATE HIL_EXECUTORCH_VERSION="${hil_et_version}")
target_include_directories(hil-runner PRIVATE ${HIL_SRC})
