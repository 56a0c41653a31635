/* The runner's files on bare metal are the host's, through semihosting (platform/file.h):
 * LOAD_FILE reads a model straight from the host's disk into the model pool. Under QEMU that
 * moves about 50 MiB/s, where the emulated UART moves 15 KiB/s. Offered in the handshake only
 * while semihosting is served (semihost.h). */
#include <stdio.h>
#include <string.h>

#include "../file.h"
#include "semihost.h"

int hil_file_available(void) { return hil_semihost_available(); }

int hil_file_open(const char *path, uint64_t *size, char *why, size_t why_cap) {
    if (!hil_semihost_available()) {
        snprintf(why, why_cap, "semihosting is not served (no debugger or emulator answers it)");
        return -1;
    }
    int handle = hil_semihost_open(path, strlen(path));
    if (handle < 0) {
        snprintf(why, why_cap, "the host refused to open it (semihosting errno %d)",
                 hil_semihost_errno());
        return -1;
    }
    long length = hil_semihost_flen(handle);
    if (length < 0) {
        hil_semihost_close(handle);
        snprintf(why, why_cap, "the host cannot tell its length (semihosting errno %d)",
                 hil_semihost_errno());
        return -1;
    }
    *size = (uint64_t)length;
    return handle;
}

long hil_file_read(int handle, uint8_t *buf, size_t cap, char *why, size_t why_cap) {
    long n = hil_semihost_read(handle, buf, cap);
    if (n < 0) snprintf(why, why_cap, "semihosting read failed (errno %d)", hil_semihost_errno());
    return n;
}

void hil_file_close(int handle) { hil_semihost_close(handle); }
