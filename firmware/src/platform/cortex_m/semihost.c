#include "semihost.h"

#include "armv8m.h"

#define SYS_OPEN 0x01
#define SYS_CLOSE 0x02
#define SYS_WRITE0 0x04
#define SYS_READ 0x06
#define SYS_FLEN 0x0C
#define SYS_ERRNO 0x13
#define SYS_EXIT_EXTENDED 0x20
#define ADP_STOPPED_APPLICATION_EXIT 0x20026
#define OPEN_MODE_RB 1 /* fopen's "rb" */

#define BKPT_SEMIHOSTING 0xBEABu  /* the Thumb encoding of bkpt 0xAB */
#define HFSR_DEBUGEVT (1u << 31) /* silicon: a debug event escalated (Armv8-M ARM) */
#define HFSR_FORCED (1u << 30)   /* QEMU 7.2 reports the escalated bkpt as forced */
#define DFSR_BKPT (1u << 1)

static int unserved; /* a call faulted: nobody serves semihosting on this boot */

int hil_semihost_available(void) {
#ifndef HIL_SEMIHOSTING
    return 0;
#else
    if (unserved) return 0;
#ifdef HIL_SEMIHOSTING_WHEN_DEBUGGED
    return (SCB_DHCSR & DHCSR_C_DEBUGEN) != 0;
#else
    return 1;
#endif
#endif
}

#ifdef HIL_SEMIHOSTING
static int semihost_call(int op, const void *arg) {
    if (!hil_semihost_available()) return -1;
    register int r0 __asm__("r0") = op;
    register const void *r1 __asm__("r1") = arg;
    __asm__ volatile("bkpt 0xAB" : "+r"(r0) : "r"(r1) : "memory");
    return r0;
}
#else
static int semihost_call(int op, const void *arg) {
    (void)op;
    (void)arg;
    return -1; /* this build holds no semihosting call (HIL_SEMIHOSTING=OFF) */
}
#endif

int hil_semihost_fault_recover(uint32_t *frame) {
#ifdef HIL_SEMIHOSTING
    uint32_t pc = frame[6];
    uint32_t ipsr;
    __asm__ volatile("mrs %0, ipsr" : "=r"(ipsr));
    uint32_t hfsr = SCB_HFSR & (HFSR_DEBUGEVT | HFSR_FORCED);
    if ((ipsr & 0x1FFu) != 3u || hfsr == 0 || (pc & 1u) != 0) return 0; /* not a HardFault */
    if (*(const volatile uint16_t *)(uintptr_t)pc != BKPT_SEMIHOSTING) return 0;
    unserved = 1;
    SCB_HFSR = hfsr; /* write-one-to-clear */
    SCB_DFSR = DFSR_BKPT;
    frame[0] = (uint32_t)-1; /* the call's result in r0 */
    frame[6] = pc + 2u;      /* past the bkpt */
    return 1;
#else
    (void)frame;
    return 0;
#endif
}

void hil_semihost_write0(const char *text) { (void)semihost_call(SYS_WRITE0, text); }

void hil_semihost_exit(int status) {
    uint32_t args[2] = {ADP_STOPPED_APPLICATION_EXIT, (uint32_t)status};
    (void)semihost_call(SYS_EXIT_EXTENDED, args);
    for (;;) {
    }
}

int hil_semihost_open(const char *path, size_t path_len) {
    uint32_t args[3] = {(uint32_t)(uintptr_t)path, OPEN_MODE_RB, (uint32_t)path_len};
    return semihost_call(SYS_OPEN, args);
}

long hil_semihost_flen(int handle) {
    uint32_t args[1] = {(uint32_t)handle};
    return semihost_call(SYS_FLEN, args);
}

long hil_semihost_read(int handle, void *buf, size_t len) {
    uint32_t args[3] = {(uint32_t)handle, (uint32_t)(uintptr_t)buf, (uint32_t)len};
    int left = semihost_call(SYS_READ, args); /* the bytes it could not read */
    if (left < 0 || (size_t)left > len) return -1;
    return (long)(len - (size_t)left);
}

void hil_semihost_close(int handle) {
    uint32_t args[1] = {(uint32_t)handle};
    (void)semihost_call(SYS_CLOSE, args);
}

int hil_semihost_errno(void) { return semihost_call(SYS_ERRNO, 0); }
