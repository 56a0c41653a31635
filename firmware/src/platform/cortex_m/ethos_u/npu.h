/* The Ethos-U NPU of a Corstone platform, in builds with HIL_ETHOS_U
 * (cmake/platform_ethos_u.cmake), against Arm's ethos-u-core-driver:
 *   npu_start.c  starts the driver at boot and routes the NPU's interrupt to it;
 *   npu_pmu.c    reads the NPU's PMU around every inference, one log line per invocation. */
#ifndef HIL_NPU_H
#define HIL_NPU_H

#include <stddef.h>

#include "../boards/board.h"

#if !defined(HIL_NPU_BASE) || !defined(HIL_NPU_IRQ)
#error "HIL_ETHOS_U: this board has no Ethos-U NPU in boards/board.h (HIL_NPU_BASE, HIL_NPU_IRQ)"
#endif

/* Start the driver for the board's NPU. Returns 0, or the driver's error after logging why:
 * the runner then still serves the link and CPU-only models, and an NPU delegate that is asked
 * to run faults with the reason instead of waiting for a driver that never came up. */
int hil_npu_start(void);

/* The NPU's interrupt: vector 16 + HIL_NPU_IRQ (startup.c). */
void hil_npu_irq_handler(void);

/* Symbols ExecuTorch's Ethos-U delegate declares weak and this runner defines (npu_start.c):
 * a hook at the start of every delegate call, and the fast-memory arena (region 2). */
void EthosUBackend_execute_begin(void);
extern unsigned char *ethosu_fast_scratch;
extern size_t ethosu_fast_scratch_size;

#endif
