/* The platform layer: everything the protocol and the engines need from the machine they run
 * on. One implementation per platform family: posix/ (a host or Linux board, link on stdio or
 * a tty) and cortex_m/ (bare metal: startup, UART, semihosting, cycle counter, fault capture).
 * The layers above never include a system header that is not in every toolchain. */
#ifndef HIL_PLATFORM_H
#define HIL_PLATFORM_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Memory pools the engines carve their allocations from; sizes are fixed per platform (or
 * per command line on posix) and reported in the handshake. */
typedef enum {
    HIL_POOL_MODEL = 0,   /* the .pte bytes as received */
    HIL_POOL_METHOD = 1,  /* the runtime's method allocator */
    HIL_POOL_PLANNED = 2, /* memory-planned activations */
    HIL_POOL_TEMP = 3,    /* kernel and delegate scratch */
    HIL_POOL_IO = 4,      /* input tensors as sent by the host */
    HIL_POOL_COUNT = 5
} hil_pool_id_t;

typedef struct {
    uint8_t *base;
    size_t size;
} hil_pool_t;

/* One named fact of a fault report (a register, a signal number, an address). */
typedef struct {
    const char *name;
    uint64_t value;
} hil_fault_field_t;

#define HIL_FAULT_MAX_FIELDS 16

typedef struct {
    uint8_t valid;
    const char *kind; /* "signal", "hardfault", ... */
    size_t count;
    hil_fault_field_t fields[HIL_FAULT_MAX_FIELDS];
} hil_fault_t;

enum { HIL_LOG_DEBUG = 0, HIL_LOG_INFO = 1, HIL_LOG_WARN = 2, HIL_LOG_ERROR = 3 };

/* Set up the link, clocks and pools. Returns 0, or nonzero (after printing why) to exit. */
int hil_platform_init(int argc, char **argv);

/* Read up to `cap` bytes, waiting at most `timeout_ms` for the first one.
 * Returns the count, 0 on timeout, or -1 when the link is gone for good. */
int hil_link_read(uint8_t *buf, size_t cap, uint32_t timeout_ms);

/* Write all `len` bytes (blocking). Returns 0, or -1 when the link is gone. */
int hil_link_write(const uint8_t *buf, size_t len);

/* The runner's clock: monotonic ticks and their rate. */
uint64_t hil_clock_ticks(void);
uint64_t hil_clock_hz(void);
uint8_t hil_clock_kind(void); /* HIL_CLOCK_TIME_NS or HIL_CLOCK_CYCLES */

hil_pool_t hil_platform_pool(hil_pool_id_t id);
const char *hil_platform_name(void);
/* Which engine the platform was asked to run (posix: --engine), HIL_ENGINE_*. */
int hil_platform_engine_choice(int compiled_default);

/* Local log sink (stderr, semihosting console); the protocol also forwards lines to the host. */
void hil_platform_log(int level, const char *line);

/* The last fault recorded (survives a reset where the platform can do that). */
void hil_platform_last_fault(hil_fault_t *out);
void hil_platform_clear_fault(void);

/* The fault handler records the fault, then calls this hook (the protocol layer's), which
 * sends a fault frame straight down the link, so the host learns about the fault at once. */
typedef void (*hil_fault_hook_t)(const hil_fault_t *fault);
void hil_platform_set_fault_hook(hil_fault_hook_t hook);

/* Restart the runner (bare metal: a system reset). Returns only where a soft reset suffices. */
void hil_platform_reset(void);

/* Debug commands used by fault-injection tests. */
void hil_platform_hang(void);
void hil_platform_fault(void);
/* A fault the platform was told to inject at the start of RUN number `run` (1-based), as a
 * HIL_DEBUG_* op, or 0. The posix runner takes it from `--inject hang@N` / `fault@N`, so a
 * test can make a runner misbehave inside a suite without talking to it. */
int hil_platform_injected_fault(uint32_t run);

#ifdef __cplusplus
}
#endif

#endif
