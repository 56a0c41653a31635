/* Board facts the bare-metal platform needs: where UART0 is, how fast the CPU clock runs and,
 * where there is one, where the Ethos-U NPU's registers are and which interrupt it raises.
 * One block per board; the build picks it with HIL_BOARD_<NAME>. */
#ifndef HIL_BOARD_H
#define HIL_BOARD_H

#if defined(HIL_BOARD_MPS3_AN547) || defined(HIL_BOARD_CORSTONE_300)
/* MPS3 AN547 / Corstone-300 (SSE-300): the FVP and QEMU's mps3-an547 share this map.
 * CMSDK UART0 (secure alias); the FPGA image and QEMU clock the CPU at 32 MHz, the
 * Corstone-300 FVP at 25 MHz. */
#define HIL_UART0_BASE 0x49303000u
/* Ethos-U55 NPU0 (as Arm's Corstone-300 platform code and Zephyr's mps3 board files give it;
 * QEMU's mps3-an547 models no NPU there). */
#define HIL_NPU_BASE 0x48102000u
#define HIL_NPU_IRQ 56
#if defined(HIL_BOARD_MPS3_AN547)
#define HIL_BOARD_NAME "mps3-an547"
#define HIL_CPU_HZ 32000000u
#else
#define HIL_BOARD_NAME "corstone-300"
#define HIL_CPU_HZ 25000000u
#endif

#elif defined(HIL_BOARD_CORSTONE_320)
/* Corstone-320 (SSE-320) FVP: UART0 at the same secure address in its peripheral map.
 * Not verified on these machines (no FVP here); check against the FVP's documentation:
 * Zephyr's mps4 Corstone-320 board files put UART0 at 0x58203000 (0x48203000 non-secure). */
#define HIL_UART0_BASE 0x49303000u
#define HIL_BOARD_NAME "corstone-320"
#define HIL_CPU_HZ 25000000u
/* Ethos-U85 NPU0 (secure alias), as Zephyr's mps4 Corstone-320 board files give it. */
#define HIL_NPU_BASE 0x50004000u
#define HIL_NPU_IRQ 16

#else
#error "define one HIL_BOARD_* (see firmware/cmake/platform_cortex_m.cmake)"
#endif

#endif
