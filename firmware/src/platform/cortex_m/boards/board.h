/* Board facts the bare-metal platform needs: where UART0 is, how fast the CPU clock runs and,
 * where there is one, where the Ethos-U NPU's registers are and which interrupt it raises.
 * One block per board; the build picks it with HIL_BOARD_<NAME>. Each value is a default: the
 * build may pass another (-DHIL_UART0_BASE=..., from a preset or a device file's defines).
 * The memory map (regions, where code, data and pools go) is in cmake/boards.cmake. */
#ifndef HIL_BOARD_H
#define HIL_BOARD_H

#if defined(HIL_BOARD_MPS3_AN547) || defined(HIL_BOARD_CORSTONE_300)
/* MPS3 AN547 / Corstone-300 (SSE-300): the FVP and QEMU's mps3-an547 share this map.
 * CMSDK UART0 (secure alias); the FPGA image and QEMU clock the CPU at 32 MHz, the
 * Corstone-300 FVP at 25 MHz. */
#ifndef HIL_UART0_BASE
#define HIL_UART0_BASE 0x49303000u
#endif
/* Ethos-U55 NPU0 (as Arm's Corstone-300 platform code, ExecuTorch and Zephyr's mps3 board
 * files give it; QEMU's mps3-an547 models no NPU there, only an unimplemented region). */
#ifndef HIL_NPU_BASE
#define HIL_NPU_BASE 0x48102000u
#endif
#ifndef HIL_NPU_IRQ
#define HIL_NPU_IRQ 56
#endif
#if defined(HIL_BOARD_MPS3_AN547)
#define HIL_BOARD_NAME "mps3-an547"
#ifndef HIL_CPU_HZ
#define HIL_CPU_HZ 32000000u
#endif
#else
#define HIL_BOARD_NAME "corstone-300"
#ifndef HIL_CPU_HZ
#define HIL_CPU_HZ 25000000u
#endif
#endif

#elif defined(HIL_BOARD_CORSTONE_320)
/* Corstone-320 (SSE-320) FVP: CMSDK UART0 at its secure address in the MPS4 peripheral map
 * (Zephyr's mps4 board files: 0x58203000, non-secure 0x48203000), the system clock at
 * 25 MHz, Ethos-U85 NPU0 at its secure alias, interrupt 16 (Zephyr's mps4 Corstone-320
 * board files; ExecuTorch's Corstone-320 platform agrees). */
#ifndef HIL_UART0_BASE
#define HIL_UART0_BASE 0x58203000u
#endif
#define HIL_BOARD_NAME "corstone-320"
#ifndef HIL_CPU_HZ
#define HIL_CPU_HZ 25000000u
#endif
#ifndef HIL_NPU_BASE
#define HIL_NPU_BASE 0x50004000u
#endif
#ifndef HIL_NPU_IRQ
#define HIL_NPU_IRQ 16
#endif

#else
#error "define one HIL_BOARD_* (see firmware/cmake/platform_cortex_m.cmake)"
#endif

#endif
