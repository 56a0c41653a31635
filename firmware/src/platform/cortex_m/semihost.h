/* Arm semihosting: the debugger or emulator serves these calls (QEMU with
 * -semihosting-config enable=on,target=native, an FVP). Used for the log console, exit codes
 * and LOAD_FILE. A `bkpt 0xAB` nobody answers is a HardFault, so every call first asks
 * hil_semihost_available():
 *   - builds without HIL_SEMIHOSTING (HIL_SEMIHOSTING=OFF) contain no semihosting call;
 *   - HIL_SEMIHOSTING_WHEN_DEBUGGED (AUTO) calls only while DHCSR.C_DEBUGEN says a debugger
 *     is attached;
 *   - a call that faults anyway is caught by the fault handler (hil_semihost_fault_recover),
 *     which turns semihosting off for good and resumes after the call with an error result. */
#ifndef HIL_SEMIHOST_H
#define HIL_SEMIHOST_H

#include <stddef.h>
#include <stdint.h>

int hil_semihost_available(void);
void hil_semihost_write0(const char *text);
void hil_semihost_exit(int status) __attribute__((noreturn));

/* Files on the host, for LOAD_FILE: handle >= 0 or -1. */
int hil_semihost_open(const char *path, size_t path_len);
long hil_semihost_flen(int handle);
/* Bytes read (0 at the end), or -1. */
long hil_semihost_read(int handle, void *buf, size_t len);
void hil_semihost_close(int handle);
int hil_semihost_errno(void);

/* From the fault handler: 1 if the fault was a semihosting call nobody served (the call now
 * returns -1, semihosting is off, the handler returns to the caller), else 0. */
int hil_semihost_fault_recover(uint32_t *frame);

#endif
