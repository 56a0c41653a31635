/* Starting the Ethos-U NPU: Arm's driver gets the NPU's register base, the fast-memory arena
 * where the NPU configuration uses one, and the NPU's interrupt, which ends the driver's wait
 * for each command stream (ethosu_irq_handler).
 *
 * The platform never turns the data cache on, so the driver's default cache maintenance
 * (none) is right and nothing here flushes or invalidates. */
#include <stddef.h>
#include <stdint.h>

#include <ethosu_driver.h>

#include "../../../protocol/reply.h" /* hil_log: the log console, and LOG frames once the link is up */
#include "../../platform.h"
#include "../armv8m.h"
#include "npu.h"

#ifndef HIL_NPU_FAST_MEMORY_SIZE
#define HIL_NPU_FAST_MEMORY_SIZE 0
#endif

#define STARTING 0x4E505553u /* "NPUS" */

static struct ethosu_driver npu;
static int npu_up;      /* ethosu_init took the NPU */
static int npu_failure; /* what ethosu_init said instead, for the reason given later */

/* Set while the driver starts, cleared after. A wrong register base is a bus fault, and the
 * fault handler resets: found still set at boot, the last start faulted, and trying again
 * would reset forever. Kept over the reset in .noinit, as the fault record is. */
static uint32_t npu_starting __attribute__((section(".noinit")));

/* Vela's Dedicated_Sram mode (Ethos-U65/U85) keeps a fast scratch in region 2. ExecuTorch's
 * delegate passes ethosu_fast_scratch as that region's base, and the driver checks its size
 * against the arena it was given at start: both name the same SRAM, or none (the U55). */
#if HIL_NPU_FAST_MEMORY_SIZE > 0
static uint8_t fast_memory[HIL_NPU_FAST_MEMORY_SIZE]
    __attribute__((section(".sram.ethosu_fast"), aligned(16)));
unsigned char *ethosu_fast_scratch = fast_memory;
#else
unsigned char *ethosu_fast_scratch = NULL;
#endif
size_t ethosu_fast_scratch_size = HIL_NPU_FAST_MEMORY_SIZE;

int hil_npu_start(void) {
    if (npu_starting == STARTING) {
        npu_starting = 0;
        npu_failure = -1;
        hil_log(HIL_LOG_ERROR,
                "ethos-u: the last start of the NPU at 0x%08lx faulted (FAULT_REPORT has the "
                "registers); not starting it again. Check HIL_NPU_BASE in boards/board.h",
                (unsigned long)HIL_NPU_BASE);
        return npu_failure;
    }
    npu_starting = STARTING; /* in memory before a reset: the fault handler syncs first */
    /* Secure and privileged: the state the core resets into and the runner stays in, so the
     * NPU's own accesses reach every buffer the runner hands it. */
    int status = ethosu_init(&npu, (void *)(uintptr_t)HIL_NPU_BASE, ethosu_fast_scratch,
                             ethosu_fast_scratch_size, 1, 1);
    npu_starting = 0;
    if (status != 0) {
        npu_failure = status;
        hil_log(HIL_LOG_ERROR,
                "ethos-u: ethosu_init refused the NPU at 0x%08lx (error %d): NPU delegates "
                "cannot run. Check that the FVP models the NPU the driver was built for "
                "(HIL_ETHOS_U_NPU) at that address",
                (unsigned long)HIL_NPU_BASE, status);
        return status;
    }
    NVIC_ISER(HIL_NPU_IRQ / 32u) = 1u << (HIL_NPU_IRQ % 32u);
    npu_up = 1;
    hil_log(HIL_LOG_INFO, "ethos-u: NPU at 0x%08lx started, interrupt %d, fast memory %lu bytes",
            (unsigned long)HIL_NPU_BASE, HIL_NPU_IRQ, (unsigned long)HIL_NPU_FAST_MEMORY_SIZE);
    return 0;
}

void hil_npu_irq_handler(void) { ethosu_irq_handler(&npu); }

/* The delegate calls this before it reserves a driver. Without a started NPU the reservation
 * would wait forever and the host would see a silent runner; a fault now, after the reason,
 * reaches the host at once as a crash with that line in its log. */
void EthosUBackend_execute_begin(void) {
    if (npu_up) return;
    hil_log(HIL_LOG_ERROR,
            "ethos-u: an NPU delegate was asked to run, but the NPU did not start at boot "
            "(error %d); faulting rather than waiting for a driver",
            npu_failure);
    hil_platform_fault();
}
