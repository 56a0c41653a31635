/* The few Armv8-M system registers the platform touches (names as in the Arm ARM). */
#ifndef HIL_ARMV8M_H
#define HIL_ARMV8M_H

#include <stdint.h>

#define HIL_REG32(addr) (*(volatile uint32_t *)(addr))

#define SCB_ICSR HIL_REG32(0xE000ED04u)
#define SCB_VTOR HIL_REG32(0xE000ED08u)
#define SCB_AIRCR HIL_REG32(0xE000ED0Cu)
#define SCB_CCR HIL_REG32(0xE000ED14u)
#define SCB_SHCSR HIL_REG32(0xE000ED24u)
#define SCB_CFSR HIL_REG32(0xE000ED28u)
#define SCB_HFSR HIL_REG32(0xE000ED2Cu)
#define SCB_MMFAR HIL_REG32(0xE000ED34u)
#define SCB_BFAR HIL_REG32(0xE000ED38u)
#define SCB_SFSR HIL_REG32(0xE000EDE4u)
#define SCB_SFAR HIL_REG32(0xE000EDE8u)
#define SCB_CPACR HIL_REG32(0xE000ED88u)
#define SCB_DFSR HIL_REG32(0xE000ED30u)
#define SCB_DHCSR HIL_REG32(0xE000EDF0u) /* debug halting control and status */
#define DHCSR_C_DEBUGEN (1u << 0)         /* a debugger has enabled halting debug */

#define NVIC_ISER(n) HIL_REG32(0xE000E100u + 4u * (n)) /* interrupt set-enable, 32 a word */

#define SYST_CSR HIL_REG32(0xE000E010u)
#define SYST_RVR HIL_REG32(0xE000E014u)
#define SYST_CVR HIL_REG32(0xE000E018u)

#define AIRCR_VECTKEY (0x05FAu << 16)
#define AIRCR_SYSRESETREQ (1u << 2)
#define SHCSR_FAULTS_ENABLE ((1u << 16) | (1u << 17) | (1u << 18) | (1u << 19))
#define CCR_DIV_0_TRP (1u << 4)

static inline void hil_dsb(void) { __asm__ volatile("dsb 0xF" ::: "memory"); }
static inline void hil_isb(void) { __asm__ volatile("isb 0xF" ::: "memory"); }

#endif
