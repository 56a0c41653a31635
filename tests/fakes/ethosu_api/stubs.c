/* TEST ONLY: stub definitions of the driver API in include/, which record what the glue asked
 * for and return what a test set (README.md). No hardware is touched. */
#include <stddef.h>
#include <stdint.h>

#include "ethosu_driver.h"
#include "pmu_ethosu.h"

/* What ethosu_init returns; a hook it calls first (a test's stand-in for a faulting start). */
int fake_ethosu_init_result;
void (*fake_ethosu_init_hook)(void);
/* What the PMU reads return. */
uint64_t fake_pmu_cycles;
uint32_t fake_pmu_counts[8];
/* What the glue configured. */
int fake_pmu_enabled;
uint32_t fake_pmu_counter_mask;
int fake_pmu_event[8];
int fake_pmu_start_event = -1;
int fake_pmu_stop_event = -1;
int fake_irq_calls;

int ethosu_init(struct ethosu_driver *drv, void *const base_address, const void *fast_memory,
                const size_t fast_memory_size, uint32_t secure_enable, uint32_t privilege_enable) {
    (void)drv, (void)base_address, (void)fast_memory, (void)fast_memory_size;
    (void)secure_enable, (void)privilege_enable;
    if (fake_ethosu_init_hook) fake_ethosu_init_hook();
    return fake_ethosu_init_result;
}

void ethosu_irq_handler(struct ethosu_driver *drv) { (void)drv, fake_irq_calls++; }

void ETHOSU_PMU_Enable(struct ethosu_driver *drv) { (void)drv, fake_pmu_enabled = 1; }
void ETHOSU_PMU_Disable(struct ethosu_driver *drv) { (void)drv, fake_pmu_enabled = 0; }
void ETHOSU_PMU_Set_EVTYPER(struct ethosu_driver *drv, uint32_t num,
                            enum ethosu_pmu_event_type type) {
    (void)drv;
    if (num < 8) fake_pmu_event[num] = (int)type;
}
void ETHOSU_PMU_CYCCNT_Reset(struct ethosu_driver *drv) { (void)drv; }
void ETHOSU_PMU_EVCNTR_ALL_Reset(struct ethosu_driver *drv) { (void)drv; }
void ETHOSU_PMU_CNTR_Enable(struct ethosu_driver *drv, uint32_t mask) {
    (void)drv, fake_pmu_counter_mask |= mask;
}
uint64_t ETHOSU_PMU_Get_CCNTR(struct ethosu_driver *drv) { return (void)drv, fake_pmu_cycles; }
uint32_t ETHOSU_PMU_Get_EVCNTR(struct ethosu_driver *drv, uint32_t num) {
    return (void)drv, num < 8 ? fake_pmu_counts[num] : 0;
}
void ETHOSU_PMU_PMCCNTR_CFG_Set_Start_Event(struct ethosu_driver *drv,
                                            enum ethosu_pmu_event_type start_event) {
    (void)drv, fake_pmu_start_event = (int)start_event;
}
void ETHOSU_PMU_PMCCNTR_CFG_Set_Stop_Event(struct ethosu_driver *drv,
                                           enum ethosu_pmu_event_type stop_event) {
    (void)drv, fake_pmu_stop_event = (int)stop_event;
}
