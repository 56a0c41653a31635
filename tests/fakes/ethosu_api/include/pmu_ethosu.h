/* TEST ONLY, not the Ethos-U driver: declarations of the driver's PMU functions, event names
 * and counter masks that hil's runner glue uses (see README.md). */
#ifndef PMU_ETHOSU_H
#define PMU_ETHOSU_H

#include <stdint.h>

#include "ethosu_driver.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Counter-enable bits: event counter n is bit n - 1, the cycle counter bit 31. */
#define ETHOSU_PMU_CNT1_Msk (1UL << 0)
#define ETHOSU_PMU_CCNT_Msk (1UL << 31)

/* Symbolic event names (the driver maps them to each NPU's own numbers). */
enum ethosu_pmu_event_type {
    ETHOSU_PMU_NO_EVENT = 0,
    ETHOSU_PMU_NPU_IDLE,
    ETHOSU_PMU_NPU_ACTIVE,
    ETHOSU_PMU_AXI0_RD_DATA_BEAT_RECEIVED, /* Ethos-U55/U65 */
    ETHOSU_PMU_AXI0_WR_DATA_BEAT_WRITTEN,
    ETHOSU_PMU_AXI1_RD_DATA_BEAT_RECEIVED,
    ETHOSU_PMU_SRAM_RD_DATA_BEAT_RECEIVED, /* Ethos-U85 */
    ETHOSU_PMU_SRAM_WR_DATA_BEAT_WRITTEN,
    ETHOSU_PMU_EXT_RD_DATA_BEAT_RECEIVED,
};

void ETHOSU_PMU_Enable(struct ethosu_driver *drv);
void ETHOSU_PMU_Disable(struct ethosu_driver *drv);
void ETHOSU_PMU_Set_EVTYPER(struct ethosu_driver *drv, uint32_t num,
                            enum ethosu_pmu_event_type type);
void ETHOSU_PMU_CYCCNT_Reset(struct ethosu_driver *drv);
void ETHOSU_PMU_EVCNTR_ALL_Reset(struct ethosu_driver *drv);
void ETHOSU_PMU_CNTR_Enable(struct ethosu_driver *drv, uint32_t mask);
uint64_t ETHOSU_PMU_Get_CCNTR(struct ethosu_driver *drv);
uint32_t ETHOSU_PMU_Get_EVCNTR(struct ethosu_driver *drv, uint32_t num);
/* The events that start and stop the cycle counter. */
void ETHOSU_PMU_PMCCNTR_CFG_Set_Start_Event(struct ethosu_driver *drv,
                                            enum ethosu_pmu_event_type start_event);
void ETHOSU_PMU_PMCCNTR_CFG_Set_Stop_Event(struct ethosu_driver *drv,
                                           enum ethosu_pmu_event_type stop_event);

#ifdef __cplusplus
}
#endif

#endif
