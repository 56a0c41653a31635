/* The posix platform: the runner as a process on a host or a Linux board (the Pi).
 *
 * The link is the process's stdin/stdout (the virtual board hands it a pty master there), a
 * tty device (--tty), or an inherited descriptor (--fd). Whatever it is, it is put in raw mode,
 * because a line discipline that echoes or translates bytes would corrupt every frame. Log
 * lines go to stderr, which the host keeps as the board's log. A fatal signal is reported as
 * a fault frame before the process dies, so the host can tell a crash from a lost link. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <termios.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

#include "../../protocol/wire.h"
#include "../platform.h"

static struct {
    int in_fd;
    int out_fd;
    int engine; /* -1: the build's default */
    int quiet;
    int inject_op;
    uint32_t inject_run;
    hil_pool_t pools[HIL_POOL_COUNT];
    size_t pool_size[HIL_POOL_COUNT];
    hil_fault_t fault;
    hil_fault_hook_t fault_hook;
} P = {0, 1, -1, 0, 0, 0, {{0}}, {0}, {0}, NULL};

static const char *const pool_names[HIL_POOL_COUNT] = {"model", "method", "planned", "temp", "io"};

static size_t parse_size(const char *text) {
    char *end = NULL;
    unsigned long long value = strtoull(text, &end, 10);
    switch (end && *end ? *end : ' ') {
    case 'k': case 'K': value <<= 10; break;
    case 'm': case 'M': value <<= 20; break;
    case 'g': case 'G': value <<= 30; break;
    default: break;
    }
    return (size_t)value;
}

static void usage(void) {
    fprintf(stderr,
            "usage: hil-runner [--stdio | --tty PATH | --fd N] [--engine executorch|echo]\n"
            "                  [--pool NAME=SIZE]... [--inject hang@N | fault@N] [--quiet]\n"
            "  pools: model, method, planned, temp, io; sizes take K, M, G suffixes\n"
            "  --inject: hang or fault at the start of the N-th RUN (fault-injection tests)\n");
}

static int make_raw(int fd) {
    struct termios t;
    if (!isatty(fd)) return 0;
    if (tcgetattr(fd, &t) != 0) return -1;
    cfmakeraw(&t);
    t.c_cc[VMIN] = 1;
    t.c_cc[VTIME] = 0;
    return tcsetattr(fd, TCSANOW, &t);
}

static void on_fatal(int signo, siginfo_t *info, void *context) {
    ucontext_t *uc = (ucontext_t *)context;
    uint64_t pc = 0;
#if defined(__x86_64__)
    pc = (uint64_t)uc->uc_mcontext.gregs[REG_RIP];
#elif defined(__aarch64__)
    pc = (uint64_t)uc->uc_mcontext.pc;
#else
    (void)uc;
#endif
    P.fault.valid = 1;
    P.fault.kind = "signal";
    P.fault.count = 4;
    P.fault.fields[0] = (hil_fault_field_t){"signal", (uint64_t)signo};
    P.fault.fields[1] = (hil_fault_field_t){"code", (uint64_t)(int64_t)info->si_code};
    P.fault.fields[2] = (hil_fault_field_t){"address", (uint64_t)(uintptr_t)info->si_addr};
    P.fault.fields[3] = (hil_fault_field_t){"pc", pc};
    static const char line[] = "hil-runner: fatal signal, fault report sent\n";
    (void)!write(2, line, sizeof(line) - 1);
    if (P.fault_hook) P.fault_hook(&P.fault);
    /* Linger before dying: a pty drops unread bytes when its master closes, and the host
     * should read the report rather than only see the link hang up. */
    struct timespec linger = {0, 300 * 1000 * 1000};
    nanosleep(&linger, NULL);
    raise(signo); /* SA_RESETHAND restored the default action: die with the same signal */
}

static void install_fault_handlers(void) {
    static uint8_t alt_stack[64 * 1024];
    stack_t ss = {.ss_sp = alt_stack, .ss_size = sizeof(alt_stack), .ss_flags = 0};
    sigaltstack(&ss, NULL);
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_sigaction = on_fatal;
    sa.sa_flags = SA_SIGINFO | SA_RESETHAND | SA_ONSTACK;
    const int fatal[] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT};
    for (size_t i = 0; i < sizeof(fatal) / sizeof(fatal[0]); i++) sigaction(fatal[i], &sa, NULL);
    signal(SIGPIPE, SIG_IGN); /* a closed link is an error return, not a silent death */
}

int hil_platform_init(int argc, char **argv) {
    static const size_t defaults[HIL_POOL_COUNT] = {1ull << 30, 256ull << 20, 1ull << 30,
                                                    256ull << 20, 256ull << 20};
    memcpy(P.pool_size, defaults, sizeof(defaults));
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *next = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(a, "--stdio") == 0) {
            P.in_fd = 0;
            P.out_fd = 1;
        } else if (strcmp(a, "--tty") == 0 && next) {
            int fd = open(next, O_RDWR | O_NOCTTY);
            if (fd < 0) {
                fprintf(stderr, "hil-runner: cannot open %s: %s\n", next, strerror(errno));
                return 1;
            }
            P.in_fd = P.out_fd = fd;
            i++;
        } else if (strcmp(a, "--fd") == 0 && next) {
            P.in_fd = P.out_fd = atoi(next);
            i++;
        } else if (strcmp(a, "--engine") == 0 && next) {
            P.engine = strcmp(next, "echo") == 0 ? HIL_ENGINE_ECHO : HIL_ENGINE_EXECUTORCH;
            i++;
        } else if (strcmp(a, "--pool") == 0 && next && strchr(next, '=')) {
            const char *eq = strchr(next, '=');
            int found = 0;
            for (int k = 0; k < HIL_POOL_COUNT; k++) {
                if (strncmp(next, pool_names[k], (size_t)(eq - next)) == 0 &&
                    strlen(pool_names[k]) == (size_t)(eq - next)) {
                    P.pool_size[k] = parse_size(eq + 1);
                    found = 1;
                }
            }
            if (!found) {
                usage();
                return 2;
            }
            i++;
        } else if (strcmp(a, "--inject") == 0 && next && strchr(next, '@')) {
#ifndef HIL_DEBUG_COMMANDS
            fprintf(stderr, "hil-runner: --inject needs a test build (HIL_DEBUG_COMMANDS=ON); "
                            "this runner is a release build\n");
            return 2;
#endif
            P.inject_op = strncmp(next, "hang@", 5) == 0    ? HIL_DEBUG_HANG
                          : strncmp(next, "fault@", 6) == 0 ? HIL_DEBUG_FAULT
                                                            : 0;
            P.inject_run = (uint32_t)atoi(strchr(next, '@') + 1);
            if (P.inject_op == 0 || P.inject_run == 0) {
                usage();
                return 2;
            }
            i++;
        } else if (strcmp(a, "--quiet") == 0) {
            P.quiet = 1;
        } else {
            usage();
            return 2;
        }
    }
    if (make_raw(P.in_fd) != 0 || (P.out_fd != P.in_fd && make_raw(P.out_fd) != 0)) {
        fprintf(stderr, "hil-runner: cannot put the link in raw mode: %s\n", strerror(errno));
        return 1;
    }
    int flags = fcntl(P.in_fd, F_GETFL);
    if (flags < 0 || fcntl(P.in_fd, F_SETFL, flags | O_NONBLOCK) != 0) {
        fprintf(stderr, "hil-runner: cannot make the link non-blocking: %s\n", strerror(errno));
        return 1;
    }
    install_fault_handlers();
    return 0;
}

int hil_link_read(uint8_t *buf, size_t cap, uint32_t timeout_ms) {
    /* Read first, wait only when nothing is there: while a model streams in, most reads find
     * data, and a poll() before each would double the system calls on the transfer path. */
    for (int waited = 0;; waited = 1) {
        ssize_t n = read(P.in_fd, buf, cap);
        if (n > 0) return (int)n;
        if (n == 0) return -1; /* end of file: the other side is gone */
        if (errno == EINTR) continue;
        if (errno != EAGAIN && errno != EWOULDBLOCK) return -1; /* EIO: the pty hung up */
        if (waited) return 0;
        struct pollfd pfd = {P.in_fd, POLLIN, 0};
        int ready = poll(&pfd, 1, (int)timeout_ms);
        if (ready < 0 && errno != EINTR) return -1;
        if (ready == 0) return 0;
    }
}

int hil_link_write(const uint8_t *buf, size_t len) {
    while (len > 0) {
        ssize_t n = write(P.out_fd, buf, len);
        if (n < 0) {
            if (errno == EINTR) continue;
            if (errno == EAGAIN) {
                struct pollfd pfd = {P.out_fd, POLLOUT, 0};
                poll(&pfd, 1, 100);
                continue;
            }
            return -1;
        }
        buf += n;
        len -= (size_t)n;
    }
    return 0;
}

uint64_t hil_clock_ticks(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}
uint64_t hil_clock_hz(void) { return 1000000000u; }
uint8_t hil_clock_kind(void) { return HIL_CLOCK_TIME_NS; }

hil_pool_t hil_platform_pool(hil_pool_id_t id) {
    hil_pool_t *pool = &P.pools[id];
    if (pool->base == NULL && P.pool_size[id] > 0) {
        /* Reserved, not committed: pages cost memory only once a model touches them. */
        void *base = mmap(NULL, P.pool_size[id], PROT_READ | PROT_WRITE,
                          MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (base != MAP_FAILED) {
            pool->base = (uint8_t *)base;
            pool->size = P.pool_size[id];
        }
    }
    return *pool;
}

const char *hil_platform_name(void) {
#if defined(__x86_64__)
    return "posix-x86_64";
#elif defined(__aarch64__)
    return "posix-aarch64";
#else
    return "posix";
#endif
}

int hil_platform_engine_choice(int compiled_default) {
    return P.engine >= 0 ? P.engine : compiled_default;
}

void hil_platform_log(int level, const char *line) {
    static const char *const names[] = {"debug", "info", "warn", "error"};
    if (P.quiet && level < HIL_LOG_WARN) return;
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    fprintf(stderr, "[%6ld.%03ld] %s: %s\n", (long)ts.tv_sec, ts.tv_nsec / 1000000L,
            names[level & 3], line);
    fflush(stderr);
}

void hil_platform_last_fault(hil_fault_t *out) { *out = P.fault; }
void hil_platform_clear_fault(void) { memset(&P.fault, 0, sizeof(P.fault)); }
void hil_platform_set_fault_hook(hil_fault_hook_t hook) { P.fault_hook = hook; }

void hil_platform_reset(void) {
    /* A process needs no more than the soft reset the server already did. */
}

int hil_platform_injected_fault(uint32_t run) {
    return run == P.inject_run ? P.inject_op : 0;
}

void hil_platform_hang(void) {
    for (;;) sleep(3600);
}

void hil_platform_fault(void) {
    volatile int *volatile unmapped = (volatile int *)(uintptr_t)16;
    *unmapped = 1; /* a real invalid access: SIGSEGV, as a model bug would cause */
}
