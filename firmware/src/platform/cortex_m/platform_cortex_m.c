/* The bare-metal platform: the link is CMSDK UART0, the clock is SysTick cycles, the pools
 * are static arrays the linker script places (large ones in DDR), and log lines go to the
 * semihosting console when a debugger or emulator serves it. */
#include <stdio.h>
#include <string.h>

#include "../../protocol/wire.h"
#include "../platform.h"
#include "armv8m.h"
#include "boards/board.h"
#include "cmsdk_uart.h"
#include "semihost.h"
#ifdef HIL_ETHOS_U
#include "ethos_u/npu.h"
#endif

#ifndef HIL_CPU_NAME
#define HIL_CPU_NAME "cortex-m"
#endif
#ifndef HIL_UART_BAUD
#define HIL_UART_BAUD 115200u
#endif
/* Pool sizes and the section (region) of each come from the board's table in
 * cmake/boards.cmake, or from the device file's defines; these defaults are for a build
 * outside it. */
#ifndef HIL_POOL_MODEL_SIZE
#define HIL_POOL_MODEL_SIZE (8u << 20)
#endif
#ifndef HIL_POOL_METHOD_SIZE
#define HIL_POOL_METHOD_SIZE (1u << 20)
#endif
#ifndef HIL_POOL_PLANNED_SIZE
#define HIL_POOL_PLANNED_SIZE (8u << 20)
#endif
#ifndef HIL_POOL_TEMP_SIZE
#define HIL_POOL_TEMP_SIZE (1u << 20)
#endif
#ifndef HIL_POOL_IO_SIZE
#define HIL_POOL_IO_SIZE (1u << 20)
#endif
#ifndef HIL_POOL_MODEL_SECTION
#define HIL_POOL_MODEL_SECTION ".pool.ddr"
#endif
#ifndef HIL_POOL_METHOD_SECTION
#define HIL_POOL_METHOD_SECTION ".pool.ddr"
#endif
#ifndef HIL_POOL_PLANNED_SECTION
#define HIL_POOL_PLANNED_SECTION ".pool.ddr"
#endif
#ifndef HIL_POOL_TEMP_SECTION
#define HIL_POOL_TEMP_SECTION ".pool.ddr"
#endif
#ifndef HIL_POOL_IO_SECTION
#define HIL_POOL_IO_SECTION ".pool.ddr"
#endif

void hil_clock_init(void);
uint64_t hil_cycle_count(void);

#define POOL(name, size, where) \
    static uint8_t name[size] __attribute__((section(where "." #name), aligned(64)))
POOL(pool_model, HIL_POOL_MODEL_SIZE, HIL_POOL_MODEL_SECTION);
POOL(pool_method, HIL_POOL_METHOD_SIZE, HIL_POOL_METHOD_SECTION);
POOL(pool_planned, HIL_POOL_PLANNED_SIZE, HIL_POOL_PLANNED_SECTION);
POOL(pool_temp, HIL_POOL_TEMP_SIZE, HIL_POOL_TEMP_SECTION);
POOL(pool_io, HIL_POOL_IO_SIZE, HIL_POOL_IO_SECTION);

/* The board facts this build was made with, kept in the image where tools (and the test of
 * the memory maps) can read them: UART0, the CPU clock, the NPU's base and interrupt. */
__attribute__((used, section(".hil_facts"))) const uint32_t hil_board_facts[4] = {
    HIL_UART0_BASE, HIL_CPU_HZ,
#ifdef HIL_NPU_BASE
    HIL_NPU_BASE, HIL_NPU_IRQ,
#else
    0, 0,
#endif
};

int hil_platform_init(int argc, char **argv) {
    (void)argc;
    (void)argv;
    hil_uart_init(HIL_UART0_BASE, HIL_CPU_HZ, HIL_UART_BAUD);
    hil_clock_init();
    hil_fault_t last;
    hil_platform_last_fault(&last);
    if (last.valid) hil_platform_log(HIL_LOG_WARN, "booted after a fault (FAULT_REPORT has it)");
#ifdef HIL_ETHOS_U
    (void)hil_npu_start(); /* a failure is logged; the link still comes up (ethos_u/npu.h) */
#endif
    return 0;
}

int hil_link_read(uint8_t *buf, size_t cap, uint32_t timeout_ms) {
    uint64_t deadline = hil_cycle_count() + (uint64_t)timeout_ms * (HIL_CPU_HZ / 1000u);
    size_t n = 0;
    for (;;) {
        int c = hil_uart_getc();
        if (c >= 0) {
            buf[n++] = (uint8_t)c;
            if (n == cap) return (int)n;
            continue;
        }
        if (n > 0) return (int)n; /* hand over what came; the next byte may be a while */
        if (hil_cycle_count() >= deadline) return 0;
    }
}

int hil_link_write(const uint8_t *buf, size_t len) {
    hil_uart_write(buf, (uint32_t)len);
    return 0;
}

uint64_t hil_clock_ticks(void) { return hil_cycle_count(); }
uint64_t hil_clock_hz(void) { return HIL_CPU_HZ; }
uint8_t hil_clock_kind(void) { return HIL_CLOCK_CYCLES; }

hil_pool_t hil_platform_pool(hil_pool_id_t id) {
    static uint8_t *const bases[HIL_POOL_COUNT] = {pool_model, pool_method, pool_planned,
                                                   pool_temp, pool_io};
    static const size_t sizes[HIL_POOL_COUNT] = {sizeof(pool_model), sizeof(pool_method),
                                                 sizeof(pool_planned), sizeof(pool_temp),
                                                 sizeof(pool_io)};
    hil_pool_t pool = {bases[id], sizes[id]};
    return pool;
}

const char *hil_platform_name(void) { return HIL_CPU_NAME "/" HIL_BOARD_NAME; }

int hil_platform_engine_choice(int compiled_default) { return compiled_default; }

void hil_platform_log(int level, const char *line) {
#ifdef HIL_SEMIHOSTING
    if (!hil_semihost_available()) return;
    static const char *const names[] = {"debug", "info", "warn", "error"};
    char text[300];
    snprintf(text, sizeof(text), "[hil %s] %s\n", names[level & 3], line);
    hil_semihost_write0(text);
#else
    (void)level;
    (void)line;
#endif
}

void hil_platform_reset(void) {
    hil_dsb();
    SCB_AIRCR = AIRCR_VECTKEY | AIRCR_SYSRESETREQ;
    hil_dsb();
    for (;;) {
    }
}

void hil_platform_hang(void) {
    for (;;) {
        __asm__ volatile("wfi");
    }
}

void hil_platform_fault(void) { __asm__ volatile("udf #0"); }

int hil_platform_injected_fault(uint32_t run) {
    (void)run;
    return 0;
}
