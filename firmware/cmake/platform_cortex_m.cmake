# Bare-metal Cortex-M platform: startup, CMSDK UART, SysTick clock, fault capture,
# semihosting console, newlib stubs, and the board's linker script.
if(NOT CMAKE_C_COMPILER_ID STREQUAL "GNU" OR NOT CMAKE_SYSTEM_NAME STREQUAL "Generic")
  message(FATAL_ERROR "HIL_PLATFORM=cortex-m needs the arm-none-eabi toolchain "
                      "(-DCMAKE_TOOLCHAIN_FILE=cmake/toolchain-arm-none-eabi.cmake, or a cortex-m preset)")
endif()
# Semihosting (log console, exit codes, LOAD_FILE from the host's disk) is a `bkpt 0xAB` the
# debugger or emulator answers; with nobody to answer, the core takes a HardFault.
#   ON     the emulator serves it (QEMU with -semihosting-config, an FVP): always used;
#   AUTO   used only while a debugger is attached (DHCSR.C_DEBUGEN), for a board on a probe;
#   OFF    never: the image holds no semihosting call at all.
# Under ON and AUTO a semihosting call that faults anyway (an emulator started without it)
# is caught by the fault handler, which turns semihosting off and carries on (semihost.c).
set(HIL_SEMIHOSTING "ON" CACHE STRING "semihosting: ON (emulator/FVP), AUTO (when a debugger is attached), OFF")
set_property(CACHE HIL_SEMIHOSTING PROPERTY STRINGS ON AUTO OFF)

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
include(${CMAKE_CURRENT_LIST_DIR}/boards.cmake) # the memory map: hil_linker_script, hil_board_defines
# The board's Ethos-U NPU, if it has one (the driver must be built for it).
if(HIL_BOARD STREQUAL "corstone-300")
  set(hil_board_npu ethos-u55-128)
elseif(HIL_BOARD STREQUAL "corstone-320")
  set(hil_board_npu ethos-u85-256)
else()
  set(hil_board_npu "")
endif()

# Board facts with a public default in boards/board.h; a device file may override them.
set(HIL_UART0_BASE "" CACHE STRING "UART0 base address; empty: the board's (boards/board.h)")
set(HIL_CPU_HZ "" CACHE STRING "CPU clock in Hz; empty: the board's (boards/board.h)")
set(HIL_NPU_BASE "" CACHE STRING "Ethos-U register base; empty: the board's (boards/board.h)")
set(HIL_NPU_IRQ "" CACHE STRING "Ethos-U interrupt number; empty: the board's (boards/board.h)")
foreach(fact HIL_UART0_BASE HIL_CPU_HZ HIL_NPU_BASE HIL_NPU_IRQ)
  if(NOT "${${fact}}" STREQUAL "")
    list(APPEND hil_board_defines "${fact}=${${fact}}")
  endif()
endforeach()

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
  ${HIL_SRC}/platform/cortex_m/newlib_format.c
  ${HIL_SRC}/platform/cortex_m/syscalls.c
  ${HIL_SRC}/platform/cortex_m/platform_cortex_m.c)
target_compile_definitions(hil-runner PRIVATE
  HIL_BOARD_${hil_board_macro}=1
  HIL_CPU_NAME="${HIL_CPU}"
  HIL_MAX_PAYLOAD=8192u
  HIL_GAP_MS=1000u
  ${hil_board_defines})
if(HIL_SEMIHOSTING STREQUAL "ON" OR HIL_SEMIHOSTING STREQUAL "AUTO")
  target_compile_definitions(hil-runner PRIVATE HIL_SEMIHOSTING=1)
  if(HIL_SEMIHOSTING STREQUAL "AUTO")
    target_compile_definitions(hil-runner PRIVATE HIL_SEMIHOSTING_WHEN_DEBUGGED=1)
  endif()
  # LOAD_FILE from the host's disk through semihosting (about 50 MiB/s under QEMU, against
  # 15 KiB/s for the emulated UART). The handshake offers it only while semihosting works.
  target_sources(hil_protocol PRIVATE ${HIL_SRC}/protocol/load_file.c)
  target_sources(hil-runner PRIVATE ${HIL_SRC}/platform/cortex_m/file_semihost.c)
  target_compile_definitions(hil_protocol PUBLIC HIL_FILE_LOAD=1)
elseif(NOT HIL_SEMIHOSTING STREQUAL "OFF")
  message(FATAL_ERROR "HIL_SEMIHOSTING must be ON, AUTO or OFF, not '${HIL_SEMIHOSTING}'")
endif()
# newlib-nano's printf knows no C99 length modifiers (%zu, %jd, %td): ExecuTorch's log lines
# use them. vsnprintf is wrapped to rewrite them first (newlib_format.c).
target_link_options(hil-runner PRIVATE
  ${hil_cpu_flags} -nostartfiles --specs=nano.specs -T${hil_linker_script}
  -Wl,--wrap=vsnprintf -Wl,--wrap=snprintf
  -Wl,--gc-sections -Wl,-Map=${CMAKE_CURRENT_BINARY_DIR}/hil-runner.map)
target_link_libraries(hil-runner PRIVATE c m gcc)
set_target_properties(hil-runner PROPERTIES SUFFIX ".elf" LINK_DEPENDS ${hil_linker_script})
