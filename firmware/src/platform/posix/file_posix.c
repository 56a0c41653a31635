/* Files for LOAD_FILE on a posix platform: plain open/read, the reason as strerror's words. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../file.h"

int hil_file_available(void) { return 1; }

int hil_file_open(const char *path, uint64_t *size, char *why, size_t why_cap) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0) {
        snprintf(why, why_cap, "%s", strerror(errno));
        if (fd >= 0) close(fd);
        return -1;
    }
    if (!S_ISREG(st.st_mode)) {
        snprintf(why, why_cap, "not a regular file");
        close(fd);
        return -1;
    }
#ifdef POSIX_FADV_SEQUENTIAL
    (void)posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
#endif
    *size = (uint64_t)st.st_size;
    return fd;
}

long hil_file_read(int handle, uint8_t *buf, size_t cap, char *why, size_t why_cap) {
    for (;;) {
        ssize_t n = read(handle, buf, cap);
        if (n >= 0) return (long)n;
        if (errno == EINTR) continue;
        snprintf(why, why_cap, "%s", strerror(errno));
        return -1;
    }
}

void hil_file_close(int handle) { close(handle); }
