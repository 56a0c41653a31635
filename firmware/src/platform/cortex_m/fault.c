/* Fault capture: any HardFault, MemManage, BusFault, UsageFault or SecureFault lands here.
 *
 * The entry finds the exception frame the core stacked (on MSP or PSP, as EXC_RETURN says),
 * the C part records the fault status registers and the stacked registers in memory that
 * survives a reset (.noinit), hands the record to the protocol layer (which sends a FAULT
 * frame down the UART at once), then resets the system so the runner comes back and the host
 * can read the record again with FAULT_REPORT. */
#include <stdint.h>
#include <string.h>

#include "../platform.h"
#include "armv8m.h"
#include "semihost.h"

#define FAULT_MAGIC 0x46415531u /* "FAU1" */

enum { F_EXC, F_CFSR, F_HFSR, F_MMFAR, F_BFAR, F_SFSR, F_R0, F_R1, F_R2, F_R3, F_R12, F_LR,
       F_PC, F_XPSR, F_EXC_RETURN, F_COUNT };
static const char *const field_names[F_COUNT] = {
    "exception", "cfsr", "hfsr", "mmfar", "bfar", "sfsr", "r0", "r1",
    "r2",        "r3",   "r12",  "lr",    "pc",   "xpsr", "exc_return",
};

static struct {
    uint32_t magic;
    uint32_t values[F_COUNT];
} fault_record __attribute__((section(".noinit")));

static hil_fault_hook_t fault_hook;

void hil_platform_set_fault_hook(hil_fault_hook_t hook) { fault_hook = hook; }

void hil_platform_last_fault(hil_fault_t *out) {
    memset(out, 0, sizeof(*out));
    if (fault_record.magic != FAULT_MAGIC) return;
    out->valid = 1;
    out->kind = "cortex-m fault";
    out->count = F_COUNT;
    for (int i = 0; i < F_COUNT; i++) {
        out->fields[i].name = field_names[i];
        out->fields[i].value = fault_record.values[i];
    }
}

void hil_platform_clear_fault(void) { fault_record.magic = 0; }

__attribute__((used)) void hil_fault_capture(const uint32_t *frame, uint32_t exc_return) {
    uint32_t ipsr;
    __asm__ volatile("mrs %0, ipsr" : "=r"(ipsr));
    uint32_t *v = fault_record.values;
    v[F_EXC] = ipsr & 0x1FFu;
    v[F_CFSR] = SCB_CFSR;
    v[F_HFSR] = SCB_HFSR;
    v[F_MMFAR] = SCB_MMFAR;
    v[F_BFAR] = SCB_BFAR;
    v[F_SFSR] = SCB_SFSR;
    for (int i = 0; i < 8; i++) v[F_R0 + i] = frame[i]; /* r0-r3, r12, lr, pc, xPSR */
    v[F_EXC_RETURN] = exc_return;
    fault_record.magic = FAULT_MAGIC;

    hil_fault_t fault;
    hil_platform_last_fault(&fault);
    if (fault_hook) fault_hook(&fault);
    hil_platform_log(HIL_LOG_ERROR, "fault: report sent, resetting");
    hil_dsb();
    SCB_AIRCR = AIRCR_VECTKEY | AIRCR_SYSRESETREQ;
    hil_dsb();
    for (;;) {
    }
}

/* First: was it a semihosting call nobody serves (semihost.h)? Then it returns to the
 * caller with an error result; every other fault is captured and resets. */
__attribute__((naked)) void hil_fault_entry(void) {
    __asm__ volatile(
        "tst lr, #4      \n"
        "ite eq          \n"
        "mrseq r0, msp   \n"
        "mrsne r0, psp   \n"
        "push {r0, lr}   \n"
        "bl hil_semihost_fault_recover \n"
        "mov r2, r0      \n"
        "pop {r0, lr}    \n"
        "cbz r2, 1f      \n"
        "bx lr           \n"
        "1:              \n"
        "mov r1, lr      \n"
        "b hil_fault_capture \n");
}
