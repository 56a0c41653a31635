/* A 64-bit cycle clock from SysTick: the 24-bit down-counter runs at the CPU clock and its
 * wrap interrupt counts the high part. DWT's cycle counter would do on silicon, but QEMU
 * does not model it (it reads zero), and SysTick works on both. Under QEMU with
 * -icount shift=0 it follows the virtual clock, so counts are deterministic. */
#include <stdint.h>

#include "armv8m.h"

static volatile uint32_t wraps;

void SysTick_Handler(void) { wraps++; }

void hil_clock_init(void) {
    SYST_RVR = 0x00FFFFFFu;
    SYST_CVR = 0;
    SYST_CSR = 7u; /* enable, interrupt on wrap, processor clock */
}

uint64_t hil_cycle_count(void) {
    uint32_t high, low;
    do {
        high = wraps;
        low = SYST_CVR;
    } while (high != wraps); /* a wrap in between: read again */
    return ((uint64_t)high << 24) + (0x00FFFFFFu - low);
}
