# The memory map of each bare-metal board, and where the runner's pieces go in it.
#
# One table per board (public sources, see firmware/README.md "Memory maps"): the regions
# (origin and size), the region the core boots from (its vector table), and the defaults
# for where code, data, stack and each of the five pools go. Every value is a cache
# variable, so a preset or a device file (connection.firmware.defines) can move a piece or
# resize a pool without editing this file:
#
#   HIL_MEM_<REGION>_ORIGIN / _SIZE      a region (ITCM, BROM, BRAM, DTCM, SRAM, DDR)
#   HIL_VECTOR_REGION, HIL_CODE_REGION,  where the vector table, .text/.rodata, .data/.bss
#   HIL_DATA_REGION, HIL_STACK_REGION    and the stack go
#   HIL_STACK_SIZE, HIL_HEAP_SIZE
#   HIL_POOL_<POOL>_SIZE / _REGION       the pools (MODEL, METHOD, PLANNED, TEMP, IO)
#   HIL_ETHOS_U_MEMORY_MODE              Vela's memory mode the pool placement follows
#
# The linker script is generated from src/platform/cortex_m/ld/hil.ld.in into the build folder.

set(hil_regions ITCM BROM BRAM DTCM SRAM DDR)
set(hil_pools MODEL METHOD PLANNED TEMP IO)

# board -> "REGION=origin:size ..." (sizes in bytes, hex or decimal)
set(hil_map_mps3-an547
    # QEMU's mps3-an547 (the AN547 FPGA image of the SSE-300), at the non-secure aliases the
    # QEMU bring-up has always used; QEMU maps the same RAM at +0x10000000 too.
    "ITCM=0x00000000:0x80000" "DTCM=0x20000000:0x80000" "SRAM=0x21000000:0x400000"
    "DDR=0x60000000:0x40000000")
set(hil_map_corstone-300
    # Corstone-300 (SSE-300) FVP, secure aliases, as ExecuTorch's Corstone-300 linker script
    # gives them. The FVP boots from ITCM (INITSVTOR 0x10000000).
    "ITCM=0x10000000:0x80000" "BRAM=0x11000000:0x100000" "DTCM=0x30000000:0x80000"
    "SRAM=0x31000000:0x200000" "DDR=0x70000000:0x60000000")
set(hil_map_corstone-320
    # Corstone-320 (SSE-320) FVP, secure aliases: ExecuTorch's Corstone-320 linker script
    # (BROM at 0x11000000, where the FVP's INITSVTOR points by default, and BRAM); Zephyr's
    # mps4 board files agree on ITCM, BRAM ("sram"), DTCM, SRAM ("isram") and DDR4.
    "ITCM=0x10000000:0x8000" "BROM=0x11000000:0x20000" "BRAM=0x12000000:0x200000"
    "DTCM=0x30000000:0x8000" "SRAM=0x31000000:0x400000" "DDR=0x70000000:0x10000000")

# board -> vector, code (echo engine), code (ExecuTorch), data, stack region; stack size
set(hil_layout_mps3-an547 ITCM ITCM DDR DTCM DTCM 0x10000)
set(hil_layout_corstone-300 ITCM ITCM DDR DTCM DTCM 0x10000)
set(hil_layout_corstone-320 BROM BRAM DDR BRAM DTCM 0x8000)

if(NOT DEFINED hil_map_${HIL_BOARD})
  message(FATAL_ERROR "HIL_BOARD '${HIL_BOARD}' has no memory map in cmake/boards.cmake "
                      "(boards: mps3-an547, corstone-300, corstone-320)")
endif()

function(hil_cache name default doc)
  if(NOT DEFINED CACHE{${name}} OR "$CACHE{${name}}" STREQUAL "")
    set(${name} "${default}" CACHE STRING "${doc}" FORCE)
  endif()
endfunction()

foreach(entry IN LISTS hil_map_${HIL_BOARD})
  string(REGEX MATCH "^([A-Z]+)=([0-9a-fx]+):([0-9a-fx]+)$" ok "${entry}")
  hil_cache(HIL_MEM_${CMAKE_MATCH_1}_ORIGIN ${CMAKE_MATCH_2} "origin of ${CMAKE_MATCH_1}")
  hil_cache(HIL_MEM_${CMAKE_MATCH_1}_SIZE ${CMAKE_MATCH_3} "bytes of ${CMAKE_MATCH_1}")
endforeach()
foreach(region IN LISTS hil_regions)
  hil_cache(HIL_MEM_${region}_ORIGIN 0 "origin of ${region}")
  hil_cache(HIL_MEM_${region}_SIZE 0 "bytes of ${region} (0: the board has none)")
endforeach()

list(GET hil_layout_${HIL_BOARD} 0 hil_default_vectors)
if(HIL_ENGINE_EXECUTORCH)
  list(GET hil_layout_${HIL_BOARD} 2 hil_default_code) # the kernels do not fit the TCMs
else()
  list(GET hil_layout_${HIL_BOARD} 1 hil_default_code)
endif()
list(GET hil_layout_${HIL_BOARD} 3 hil_default_data)
list(GET hil_layout_${HIL_BOARD} 4 hil_default_stack)
list(GET hil_layout_${HIL_BOARD} 5 hil_default_stack_size)
hil_cache(HIL_VECTOR_REGION ${hil_default_vectors} "region of the vector table (the boot address)")
hil_cache(HIL_CODE_REGION ${hil_default_code} "region of .text and .rodata")
hil_cache(HIL_DATA_REGION ${hil_default_data} "region of .data, .bss, .noinit and the heap")
hil_cache(HIL_STACK_REGION ${hil_default_stack} "region of the main stack")
hil_cache(HIL_STACK_SIZE ${hil_default_stack_size} "bytes of main stack")
hil_cache(HIL_HEAP_SIZE 0x4000 "bytes of newlib heap")

# Vela's memory mode decides where an Ethos-U model's pieces live (ExecuTorch's Arm runner
# does the same with its linker script): Shared_Sram keeps the weights in DDR and the arena
# (planned activations and the delegate's scratch, the temp pool) in SRAM; Sram_Only keeps
# the model in SRAM too; Dedicated_Sram (U65/U85) keeps everything in DDR and gives the NPU
# a fast scratch in SRAM (HIL_ETHOS_U_FAST_MEMORY_SIZE). Boards without an NPU: none.
if(HIL_BOARD STREQUAL "corstone-300")
  set(hil_default_mode Shared_Sram)
elseif(HIL_BOARD STREQUAL "corstone-320")
  set(hil_default_mode Dedicated_Sram)
else()
  set(hil_default_mode none)
endif()
hil_cache(HIL_ETHOS_U_MEMORY_MODE ${hil_default_mode}
          "Vela memory mode the pools follow: Shared_Sram, Sram_Only, Dedicated_Sram or none")
set(hil_model_region DDR)
set(hil_arena_region DDR)
if(HIL_ETHOS_U_MEMORY_MODE STREQUAL "Shared_Sram")
  set(hil_arena_region SRAM)
elseif(HIL_ETHOS_U_MEMORY_MODE STREQUAL "Sram_Only")
  set(hil_model_region SRAM)
  set(hil_arena_region SRAM)
elseif(NOT HIL_ETHOS_U_MEMORY_MODE MATCHES "^(Dedicated_Sram|none)$")
  message(FATAL_ERROR "HIL_ETHOS_U_MEMORY_MODE must be Shared_Sram, Sram_Only, Dedicated_Sram "
                      "or none, not '${HIL_ETHOS_U_MEMORY_MODE}'")
endif()

# Default pool sizes: reservations (NOLOAD, nothing in the image) that fit the board.
if(HIL_BOARD STREQUAL "corstone-300")
  set(hil_pool_defaults MODEL=0x4000000 METHOD=0x400000 PLANNED=0x100000 TEMP=0xC0000 IO=0x400000)
  if(HIL_ETHOS_U_MEMORY_MODE STREQUAL "Sram_Only")
    set(hil_pool_defaults MODEL=0x100000 METHOD=0x400000 PLANNED=0x80000 TEMP=0x60000 IO=0x400000)
  elseif(HIL_ETHOS_U_MEMORY_MODE STREQUAL "Dedicated_Sram")
    set(hil_pool_defaults MODEL=0x4000000 METHOD=0x400000 PLANNED=0x2000000 TEMP=0x1000000 IO=0x400000)
  endif()
elseif(HIL_BOARD STREQUAL "corstone-320")
  set(hil_pool_defaults MODEL=0x4000000 METHOD=0x400000 PLANNED=0x2000000 TEMP=0x1000000 IO=0x400000)
  if(HIL_ETHOS_U_MEMORY_MODE STREQUAL "Shared_Sram")
    set(hil_pool_defaults MODEL=0x4000000 METHOD=0x400000 PLANNED=0x200000 TEMP=0x180000 IO=0x400000)
  elseif(HIL_ETHOS_U_MEMORY_MODE STREQUAL "Sram_Only")
    set(hil_pool_defaults MODEL=0x200000 METHOD=0x400000 PLANNED=0x100000 TEMP=0x80000 IO=0x400000)
  endif()
else()
  set(hil_pool_defaults MODEL=0x4000000 METHOD=0x800000 PLANNED=0x4000000 TEMP=0x1000000 IO=0x800000)
endif()
foreach(entry IN LISTS hil_pool_defaults)
  string(REGEX MATCH "^([A-Z]+)=(0x[0-9A-Fa-f]+)$" ok "${entry}")
  hil_cache(HIL_POOL_${CMAKE_MATCH_1}_SIZE ${CMAKE_MATCH_2} "bytes of the ${CMAKE_MATCH_1} pool")
endforeach()
hil_cache(HIL_POOL_MODEL_REGION ${hil_model_region} "region of the model pool")
hil_cache(HIL_POOL_PLANNED_REGION ${hil_arena_region} "region of the planned-memory pool")
hil_cache(HIL_POOL_TEMP_REGION ${hil_arena_region} "region of the temp (scratch) pool")
hil_cache(HIL_POOL_METHOD_REGION DDR "region of the method-allocator pool")
hil_cache(HIL_POOL_IO_REGION DDR "region of the input pool")

foreach(piece VECTOR CODE DATA STACK POOL_MODEL POOL_METHOD POOL_PLANNED POOL_TEMP POOL_IO)
  set(region "${HIL_${piece}_REGION}")
  if(NOT region IN_LIST hil_regions OR "${HIL_MEM_${region}_SIZE}" EQUAL 0)
    message(FATAL_ERROR "HIL_${piece}_REGION is '${region}', which board ${HIL_BOARD} does not "
                        "have (its regions: ${hil_map_${HIL_BOARD}})")
  endif()
endforeach()

# The linker script: the regions the board has, then the template.
set(HIL_LD_MEMORY "")
foreach(region IN LISTS hil_regions)
  if(NOT "${HIL_MEM_${region}_SIZE}" EQUAL 0)
    string(APPEND HIL_LD_MEMORY
           "    ${region} (rwx) : ORIGIN = ${HIL_MEM_${region}_ORIGIN}, LENGTH = ${HIL_MEM_${region}_SIZE}\n")
  endif()
endforeach()
set(HIL_LD_POOLS "")
foreach(region IN LISTS hil_regions)
  if(NOT "${HIL_MEM_${region}_SIZE}" EQUAL 0)
    string(TOLOWER ${region} lower)
    string(APPEND HIL_LD_POOLS
           "    .pools.${lower} (NOLOAD) : ALIGN(64) { *(.pool.${lower}*) } > ${region}\n")
  endif()
endforeach()
set(hil_linker_script ${CMAKE_CURRENT_BINARY_DIR}/hil-runner.ld)
configure_file(${HIL_SRC}/platform/cortex_m/ld/hil.ld.in ${hil_linker_script} @ONLY)

# What the C side needs: pool sizes and the section each pool goes in.
set(hil_board_defines)
foreach(pool IN LISTS hil_pools)
  string(TOLOWER "${HIL_POOL_${pool}_REGION}" lower)
  math(EXPR bytes "${HIL_POOL_${pool}_SIZE}" OUTPUT_FORMAT DECIMAL)
  list(APPEND hil_board_defines HIL_POOL_${pool}_SIZE=${bytes}u
       "HIL_POOL_${pool}_SECTION=\".pool.${lower}\"")
endforeach()
message(STATUS "hil-runner: ${HIL_BOARD} map, vectors ${HIL_VECTOR_REGION}, code ${HIL_CODE_REGION}, "
               "data ${HIL_DATA_REGION}, stack ${HIL_STACK_REGION}, memory mode ${HIL_ETHOS_U_MEMORY_MODE}")
