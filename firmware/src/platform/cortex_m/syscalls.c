/* The little newlib needs from a bare-metal program (we link with -nostartfiles and no
 * rdimon: rdimon's _sbrk refuses a heap placed above the stack, and its I/O would make every
 * printf a semihosting call). The heap runs between linker symbols. */
#include <errno.h>
#include <malloc.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

#include "semihost.h"

extern uint8_t __heap_start, __heap_end;
static uint8_t *heap_top = &__heap_start;

void *__dso_handle = 0;
void _init(void) {}
void _fini(void) {}

void *_sbrk(ptrdiff_t increment) {
    if (increment < 0 || (size_t)(&__heap_end - heap_top) < (size_t)increment) {
        errno = ENOMEM;
        return (void *)-1;
    }
    uint8_t *previous = heap_top;
    heap_top += increment;
    return previous;
}

int _write(int fd, const char *data, int len) {
    (void)fd;
#ifdef HIL_SEMIHOSTING
    char piece[129];
    for (int done = 0; done < len; done += 128) {
        int n = len - done < 128 ? len - done : 128;
        for (int i = 0; i < n; i++) piece[i] = data[done + i];
        piece[n] = 0;
        hil_semihost_write0(piece);
    }
#else
    (void)data;
#endif
    return len;
}

/* newlib-nano's aligned_alloc calls posix_memalign, which nano leaves out; flatcc's runtime
 * (the ETDump builder's fallback allocator) reaches it. nano's memalign does the work. */
int posix_memalign(void **out, size_t alignment, size_t size) {
    void *p = memalign(alignment, size);
    if (p == NULL) return ENOMEM;
    *out = p;
    return 0;
}

int _read(int fd, char *data, int len) { (void)fd; (void)data; (void)len; return 0; }
int _close(int fd) { (void)fd; return -1; }
int _lseek(int fd, int offset, int whence) { (void)fd; (void)offset; (void)whence; return 0; }
int _isatty(int fd) { (void)fd; return 1; }
int _fstat(int fd, struct stat *st) { (void)fd; st->st_mode = S_IFCHR; return 0; }
int _getpid(void) { return 1; }
int _kill(int pid, int sig) { (void)pid; (void)sig; errno = EINVAL; return -1; }

/* exit() and abort() (newlib's abort ends here) are a crash of the runner: a fault, so the
 * host gets the registers and the runner resets for the next case, instead of a stopped
 * emulator or a core spinning where nobody sees it. */
void _exit(int status) {
    (void)status;
    __asm__ volatile("udf #1");
    for (;;) {
    }
}
