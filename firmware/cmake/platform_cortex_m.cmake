# Bare-metal Cortex-M platform: startup, CMSDK UART, SysTick clock, fault capture,
# semihosting console, newlib stubs, and the board's linker script.
if(NOT CMAKE_C_COMPILER_ID STREQUAL "GNU" OR NOT CMAKE_SYSTEM_NAME STREQUAL "Generic")
  message(FATAL_ERROR "HIL_PLATFORM=cortex-m needs the arm-none-eabi toolchain "
                      "(-DCMAKE_TOOLCHAIN_FILE=cmake/toolchain-arm-none-eabi.cmake, or a cortex-m preset)")
endif()
option(HIL_SEMIHOSTING "log to the semihosting console (needs a debugger or an emulator serving it)" ON)

# GCC 12 knows no -mcpu=cortex-m85; its ISA (Armv8.1-M with MVE) is the M55's plus PACBTI,
# so the M55 code generation runs on it.
set(hil_mcpu ${HIL_CPU})
if(HIL_CPU STREQUAL "cortex-m85")
  execute_process(COMMAND ${CMAKE_C_COMPILER} -mcpu=cortex-m85 -E -x c /dev/null
                  RESULT_VARIABLE m85_missing OUTPUT_QUIET ERROR_QUIET)
  if(m85_missing)
    message(STATUS "hil-runner: ${CMAKE_C_COMPILER} has no cortex-m85; generating cortex-m55 code")
    set(hil_mcpu cortex-m55)
  endif()
endif()
set(hil_cpu_flags -mcpu=${hil_mcpu} -mthumb -mfloat-abi=hard)

string(TOUPPER "${HIL_BOARD}" hil_board_macro)
string(REPLACE "-" "_" hil_board_macro "${hil_board_macro}")
set(hil_linker_script ${HIL_SRC}/platform/cortex_m/ld/sse300.ld)

foreach(target hil_protocol hil-runner)
  target_compile_options(${target} PRIVATE ${hil_cpu_flags} -ffunction-sections -fdata-sections)
endforeach()
target_compile_definitions(hil_protocol PRIVATE HIL_MAX_PAYLOAD=8192u)
target_sources(hil_protocol PRIVATE ${HIL_SRC}/protocol/digest_inline.c)
target_sources(hil-runner PRIVATE
  ${HIL_SRC}/platform/cortex_m/startup.c
  ${HIL_SRC}/platform/cortex_m/clock.c
  ${HIL_SRC}/platform/cortex_m/fault.c
  ${HIL_SRC}/platform/cortex_m/cmsdk_uart.c
  ${HIL_SRC}/platform/cortex_m/semihost.c
  ${HIL_SRC}/platform/cortex_m/syscalls.c
  ${HIL_SRC}/platform/cortex_m/platform_cortex_m.c)
target_compile_definitions(hil-runner PRIVATE
  HIL_BOARD_${hil_board_macro}=1
  HIL_CPU_NAME="${HIL_CPU}"
  HIL_MAX_PAYLOAD=8192u
  HIL_GAP_MS=1000u)
if(HIL_SEMIHOSTING)
  target_compile_definitions(hil-runner PRIVATE HIL_SEMIHOSTING=1)
endif()
target_link_options(hil-runner PRIVATE
  ${hil_cpu_flags} -nostartfiles --specs=nano.specs -T${hil_linker_script}
  -Wl,--gc-sections -Wl,-Map=${CMAKE_CURRENT_BINARY_DIR}/hil-runner.map)
target_link_libraries(hil-runner PRIVATE c m gcc)
set_target_properties(hil-runner PROPERTIES SUFFIX ".elf" LINK_DEPENDS ${hil_linker_script})
