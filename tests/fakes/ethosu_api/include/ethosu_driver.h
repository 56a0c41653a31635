/* TEST ONLY, not the Ethos-U driver: declarations of the part of Arm's ethos-u-core-driver
 * API that hil's runner glue uses, so the glue type-checks and links here (see README.md). */
#ifndef ETHOSU_DRIVER_H
#define ETHOSU_DRIVER_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* One driver instance per NPU, owned by the platform. Placeholder layout: the real one is the
 * driver's own and the glue never looks inside. */
struct ethosu_driver {
    uint64_t placeholder[16];
};

/* 0 on success, negative on error. secure_enable and privilege_enable: the security state
 * and privilege the NPU's transactions use. fast_memory: the arena for region 2 (Vela's
 * Dedicated_Sram fast scratch), or NULL and 0. */
int ethosu_init(struct ethosu_driver *drv, void *const base_address, const void *fast_memory,
                const size_t fast_memory_size, uint32_t secure_enable, uint32_t privilege_enable);

/* To be called from the NPU's interrupt. */
void ethosu_irq_handler(struct ethosu_driver *drv);

/* Weak in the driver; called just before a command stream starts and after it has ended,
 * with the user argument given to the invoke call. */
void ethosu_inference_begin(struct ethosu_driver *drv, void *user_arg);
void ethosu_inference_end(struct ethosu_driver *drv, void *user_arg);

#ifdef __cplusplus
}
#endif

#endif
