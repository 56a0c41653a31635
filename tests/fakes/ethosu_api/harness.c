/* TEST ONLY: runs the runner's Ethos-U glue (firmware/src/platform/cortex_m/ethos_u/) on this
 * machine's CPU against the stub driver of stubs.c, with stand-ins for the two runner
 * functions the glue calls, and prints what the glue logged and did:
 *   harness pmu            one inference's begin and end callbacks, with set PMU counts
 *   harness failed-start   a start the driver refuses, then an NPU delegate asked to run
 *   harness faulted-start  a start that faults (the runner resets), then the next boot's start */
#include <setjmp.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "ethosu_driver.h"
#include "platform/cortex_m/ethos_u/npu.h"
#include "platform/platform.h"
#include "pmu_ethosu.h"
#include "protocol/reply.h"

extern int fake_ethosu_init_result;
extern void (*fake_ethosu_init_hook)(void);
extern uint64_t fake_pmu_cycles;
extern uint32_t fake_pmu_counts[8];
extern int fake_pmu_enabled;
extern uint32_t fake_pmu_counter_mask;
extern int fake_pmu_event[8];
extern int fake_pmu_start_event;
extern int fake_pmu_stop_event;

static jmp_buf escape; /* where a fault "resets" to */

void hil_log(int level, const char *fmt, ...) {
    va_list args;
    va_start(args, fmt);
    printf("log %d: ", level);
    vprintf(fmt, args);
    putchar('\n');
    va_end(args);
}

void hil_platform_fault(void) {
    puts("fault");
    longjmp(escape, 1);
}

static void fault_inside_init(void) { hil_platform_fault(); }

static const char *event_name(int event) {
    static const char *const names[] = {
        "NO_EVENT", "NPU_IDLE", "NPU_ACTIVE", "AXI0_RD_DATA_BEAT_RECEIVED",
        "AXI0_WR_DATA_BEAT_WRITTEN", "AXI1_RD_DATA_BEAT_RECEIVED", "SRAM_RD_DATA_BEAT_RECEIVED",
        "SRAM_WR_DATA_BEAT_WRITTEN", "EXT_RD_DATA_BEAT_RECEIVED"};
    return event >= 0 && event < (int)(sizeof(names) / sizeof(names[0])) ? names[event] : "?";
}

static int pmu(void) {
    struct ethosu_driver drv;
    ethosu_inference_begin(&drv, NULL);
    printf("begin: enabled %d counters 0x%08lx cycles from %s to %s events", fake_pmu_enabled,
           (unsigned long)fake_pmu_counter_mask, event_name(fake_pmu_start_event),
           event_name(fake_pmu_stop_event));
    for (int i = 0; i < 4; i++) printf(" %s", event_name(fake_pmu_event[i]));
    putchar('\n');
    fake_pmu_cycles = 12345678901ull; /* over 32 bits */
    for (uint32_t i = 0; i < 4; i++) fake_pmu_counts[i] = 1000u * (i + 1);
    ethosu_inference_end(&drv, NULL);
    printf("end: enabled %d\n", fake_pmu_enabled);
    return 0;
}

static int failed_start(void) {
    fake_ethosu_init_result = -3;
    printf("start: %d\n", hil_npu_start());
    if (setjmp(escape) == 0) {
        EthosUBackend_execute_begin();
        puts("the delegate went on");
    }
    return 0;
}

static int faulted_start(void) {
    fake_ethosu_init_hook = fault_inside_init;
    if (setjmp(escape) == 0) hil_npu_start();
    fake_ethosu_init_hook = NULL;
    printf("start after the reset: %d\n", hil_npu_start());
    return 0;
}

int main(int argc, char **argv) {
    const char *what = argc > 1 ? argv[1] : "";
    if (strcmp(what, "pmu") == 0) return pmu();
    if (strcmp(what, "failed-start") == 0) return failed_start();
    if (strcmp(what, "faulted-start") == 0) return faulted_start();
    fprintf(stderr, "usage: harness pmu | failed-start | faulted-start\n");
    return 2;
}
