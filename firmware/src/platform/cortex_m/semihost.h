/* Arm semihosting: the debugger or emulator serves these calls (QEMU with
 * -semihosting-config enable=on,target=native). Used for the log console and for exit codes;
 * on a board without a debugger attached a semihosting call would halt, so the platform only
 * uses it when HIL_SEMIHOSTING is defined. */
#ifndef HIL_SEMIHOST_H
#define HIL_SEMIHOST_H

#include <stdint.h>

void hil_semihost_write0(const char *text);
void hil_semihost_exit(int status) __attribute__((noreturn));

#endif
