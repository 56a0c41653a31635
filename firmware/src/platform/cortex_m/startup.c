/* Reset and the vector table for an Armv8-M mainline core (Cortex-M55/M85), in C.
 *
 * Reset copies .data from its load address, zeroes .bss, enables the FPU and MVE, turns the
 * configurable faults on (so a bad access is reported as MemManage/BusFault/UsageFault with
 * its status, not folded into a HardFault), runs static constructors and calls main(). */
#include <stdint.h>
#include <string.h>

#include "armv8m.h"

#ifdef HIL_ETHOS_U
#include "ethos_u/npu.h"
#define EXTERNAL_IRQS (HIL_NPU_IRQ < 32 ? 32 : HIL_NPU_IRQ + 1)
#else
#define EXTERNAL_IRQS 32
#endif

extern uint32_t __data_load, __data_start, __data_end, __bss_start, __bss_end, __stack_top;
extern int main(int argc, char **argv);
extern void __libc_init_array(void);
extern void hil_fault_entry(void);
extern void SysTick_Handler(void);
void Reset_Handler(void);

static void Default_Handler(void) {
    for (;;) {
    }
}

void Reset_Handler(void) {
    memcpy(&__data_start, &__data_load, (size_t)((uintptr_t)&__data_end - (uintptr_t)&__data_start));
    memset(&__bss_start, 0, (size_t)((uintptr_t)&__bss_end - (uintptr_t)&__bss_start));
    SCB_CPACR |= 0xFu << 20; /* CP10 and CP11: the FPU and MVE */
    hil_dsb();
    hil_isb();
    SCB_SHCSR |= SHCSR_FAULTS_ENABLE;
    SCB_CCR |= CCR_DIV_0_TRP;
    __libc_init_array();
    static char *argv[] = {"hil-runner", 0};
    (void)main(1, argv);
    for (;;) {
    }
}

typedef void (*vector_t)(void);

__attribute__((section(".vectors"), used)) const vector_t hil_vectors[16 + EXTERNAL_IRQS] = {
    (vector_t)&__stack_top,
    Reset_Handler,
    Default_Handler, /* NMI */
    hil_fault_entry, /* HardFault */
    hil_fault_entry, /* MemManage */
    hil_fault_entry, /* BusFault */
    hil_fault_entry, /* UsageFault */
    hil_fault_entry, /* SecureFault */
    0, 0, 0,
    Default_Handler, /* SVC */
    Default_Handler, /* DebugMonitor */
    0,
    Default_Handler, /* PendSV */
    SysTick_Handler,
    /* external interrupts: only the NPU's, where there is one (the UART is polled) */
#ifdef HIL_ETHOS_U
    [16 + HIL_NPU_IRQ] = hil_npu_irq_handler,
#endif
};
