/* The Ethos-U PMU around every NPU inference. The driver calls ethosu_inference_begin() just
 * before it starts a command stream and ethosu_inference_end() once the NPU is done (weak in
 * the driver, defined here); each invocation ends with one log line
 *
 *     ethos-u pmu: cycles=N npu_active=N <port traffic>=N ...
 *
 * in the format hil/fvp/pmu.py reads from the runner's LOG frames: FvpTarget sums the lines of
 * one execution into npu_cycles and sets it beside Vela's estimate.
 *
 * The line is formatted and sent inside the timed run, so an execution's CPU cycles include
 * a few thousand per NPU invocation for it. */
#include <stdint.h>
#include <stdio.h>

#include <ethosu_driver.h>
#include <pmu_ethosu.h>

#include "../../../protocol/reply.h" /* hil_log */
#include "../../platform.h"
#include "npu.h"

typedef struct {
    const char *name; /* hil/fvp/pmu.py reports it as npu_<name> */
    enum ethosu_pmu_event_type event;
} counted_t;

/* Four events, as many as the Ethos-U55 has counters. Beats on the NPU's memory ports tell
 * SRAM traffic from DRAM/flash traffic: AXI0 and AXI1 on the U55/U65, SRAM and EXT on the U85. */
static const counted_t counted[] = {
    {"npu_active", ETHOSU_PMU_NPU_ACTIVE},
#if defined(ETHOSU85)
    {"sram_rd_beats", ETHOSU_PMU_SRAM_RD_DATA_BEAT_RECEIVED},
    {"sram_wr_beats", ETHOSU_PMU_SRAM_WR_DATA_BEAT_WRITTEN},
    {"ext_rd_beats", ETHOSU_PMU_EXT_RD_DATA_BEAT_RECEIVED},
#else
    {"axi0_rd_beats", ETHOSU_PMU_AXI0_RD_DATA_BEAT_RECEIVED},
    {"axi0_wr_beats", ETHOSU_PMU_AXI0_WR_DATA_BEAT_WRITTEN},
    {"axi1_rd_beats", ETHOSU_PMU_AXI1_RD_DATA_BEAT_RECEIVED},
#endif
};
#define COUNTED ((uint32_t)(sizeof(counted) / sizeof(counted[0])))

void ethosu_inference_begin(struct ethosu_driver *drv, void *user_arg) {
    (void)user_arg;
    ETHOSU_PMU_Enable(drv);
    uint32_t enable = ETHOSU_PMU_CCNT_Msk;
    for (uint32_t i = 0; i < COUNTED; i++) {
        ETHOSU_PMU_Set_EVTYPER(drv, i, counted[i].event);
        enable |= ETHOSU_PMU_CNT1_Msk << i;
    }
    /* The cycle counter runs from the NPU going active to it going idle: the command stream's
     * own cycles, which is what Vela estimates, without the wait for the CPU around it. */
    ETHOSU_PMU_PMCCNTR_CFG_Set_Start_Event(drv, ETHOSU_PMU_NPU_ACTIVE);
    ETHOSU_PMU_PMCCNTR_CFG_Set_Stop_Event(drv, ETHOSU_PMU_NPU_IDLE);
    ETHOSU_PMU_CYCCNT_Reset(drv);
    ETHOSU_PMU_EVCNTR_ALL_Reset(drv);
    ETHOSU_PMU_CNTR_Enable(drv, enable);
}

/* The cycle counter is 64 bits wide and newlib-nano's printf has no %llu. */
static const char *decimal(uint64_t value, char digits[21]) {
    char *p = digits + 20;
    *p = '\0';
    do {
        *--p = (char)('0' + value % 10u);
        value /= 10u;
    } while (value != 0);
    return p;
}

void ethosu_inference_end(struct ethosu_driver *drv, void *user_arg) {
    (void)user_arg;
    uint64_t cycles = ETHOSU_PMU_Get_CCNTR(drv);
    uint32_t counts[COUNTED];
    for (uint32_t i = 0; i < COUNTED; i++) counts[i] = ETHOSU_PMU_Get_EVCNTR(drv, i);
    ETHOSU_PMU_Disable(drv);

    char digits[21];
    char line[160]; /* the longest: 20 cycle digits and four 10-digit counts, about 140 */
    int n = snprintf(line, sizeof(line), "ethos-u pmu: cycles=%s", decimal(cycles, digits));
    for (uint32_t i = 0; i < COUNTED; i++) {
        n += snprintf(line + n, sizeof(line) - (size_t)n, " %s=%lu", counted[i].name,
                      (unsigned long)counts[i]);
    }
    hil_log(HIL_LOG_INFO, "%s", line);
}
