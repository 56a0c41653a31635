/* The runner itself (PROTOCOL.md, "Handshake" and "Faults, reset, diagnostics"): HELLO,
 * RESET, ECHO, DEBUG, MEM_STATS, LINK_STATS, FAULT_REPORT. Models are in load.c and
 * load_file.c, runs in run.c. */
#include <string.h>

#include "../platform/file.h"
#include "../platform/platform.h"
#include "codec.h"
#include "handlers.h"
#include "held.h"
#include "reply.h"
#include "state.h"

#ifndef HIL_BUILD_ID
#define HIL_BUILD_ID "dev"
#endif
/* Requests the platform can take unanswered without losing bytes: a process reading a pty
 * or socket has the kernel's buffer behind it; a polled UART has one byte. */
#ifndef HIL_RX_WINDOW
#define HIL_RX_WINDOW 1
#endif

void hil_cmd_hello(hil_server_t *s, hil_reader_t *r) {
    uint16_t major = hil_rd_u16(r);
    uint16_t minor = hil_rd_u16(r);
    if (r->bad) {
        hil_refuse(s, HIL_ERR_BAD_REQUEST, 0, 0, "HELLO needs the host's protocol version");
        return;
    }
    if (major != HIL_PROTOCOL_MAJOR) {
        hil_refuse(s, HIL_ERR_VERSION_MISMATCH,
                   (uint64_t)HIL_PROTOCOL_MAJOR << 16 | HIL_PROTOCOL_MINOR,
                   (uint64_t)major << 16 | minor, "runner speaks protocol %d.%d, host speaks %u.%u",
                   HIL_PROTOCOL_MAJOR, HIL_PROTOCOL_MINOR, major, minor);
        return;
    }
    hil_pool_stat_t pools[8];
    size_t n_pools = s->engine->pool_stats(pools, 8);
    hil_writer_t w = hil_reply_writer(s);
    hil_wr_u16(&w, HIL_PROTOCOL_MAJOR);
    hil_wr_u16(&w, HIL_PROTOCOL_MINOR);
    hil_wr_u32(&w, (uint32_t)s->max_payload);
    hil_wr_u64(&w, hil_clock_hz());
    hil_wr_u8(&w, hil_clock_kind());
    hil_wr_u8(&w, s->engine->id);
    uint8_t flags = s->holds_model ? HIL_HELLO_HOLDS_MODEL : 0;
#ifdef HIL_DEBUG_COMMANDS
    flags |= HIL_HELLO_DEBUG;
#endif
#ifdef HIL_FILE_LOAD
    if (hil_file_available()) flags |= HIL_HELLO_FILE_LOAD;
#endif
    if (s->engine->trace_begin != NULL) flags |= HIL_HELLO_TRACE;
    const char *planted = s->engine->planted_fault != NULL ? s->engine->planted_fault : "";
    if (planted[0] != '\0') flags |= HIL_HELLO_PLANTED_FAULT;
    hil_wr_u8(&w, flags);
    hil_wr_u8(&w, (uint8_t)n_pools);
    hil_wr_u16(&w, HIL_RX_WINDOW);
    hil_wr_u16(&w, 0);
    hil_wr_bytes(&w, s->held_hash, 32);
    hil_wr_str8(&w, HIL_BUILD_ID);
    hil_wr_str8(&w, s->engine->runtime_version());
    hil_wr_str8(&w, hil_platform_name());
    hil_wr_str8(&w, s->engine->name);
    for (size_t i = 0; i < n_pools; i++) {
        hil_wr_str8(&w, pools[i].name);
        hil_wr_u64(&w, pools[i].size);
    }
    /* 1.4: after the pools, where a 1.3 host has stopped reading, so it reads its fields as
     * before; "" when no kernel is wrong on purpose */
    hil_wr_str8(&w, planted);
    hil_reply(s, HIL_CMD_HELLO | HIL_REPLY, (uint32_t)w.used);
}

void hil_cmd_reset(hil_server_t *s, hil_reader_t *r) {
    (void)r;
    hil_log(HIL_LOG_INFO, "reset requested");
    hil_reply(s, HIL_CMD_RESET | HIL_REPLY, 0);
    hil_soft_reset(s);
    memset(s->held_hash, 0, sizeof(s->held_hash));
    hil_platform_reset(); /* the fault record survives: the host may still ask for it */
}

void hil_cmd_echo(hil_server_t *s, hil_reader_t *r) {
    memcpy(hil_reply_payload(s), r->p, r->left);
    hil_reply(s, HIL_CMD_ECHO | HIL_REPLY, (uint32_t)r->left);
}

void hil_cmd_debug(hil_server_t *s, hil_reader_t *r) {
    uint8_t op = hil_rd_u8(r);
    uint8_t when_running = r->left ? hil_rd_u8(r) : 0;
#ifdef HIL_DEBUG_COMMANDS
    if (op != HIL_DEBUG_HANG && op != HIL_DEBUG_FAULT) {
        hil_refuse(s, HIL_ERR_BAD_REQUEST, op, 0, "unknown debug op %u", op);
        return;
    }
    if (when_running) {
        s->debug_arm = op; /* trigger inside the next RUN, as a model that hangs or faults */
        hil_reply(s, HIL_CMD_DEBUG | HIL_REPLY, 0);
        return;
    }
    hil_log(HIL_LOG_WARN, "debug: %s now, as asked", op == HIL_DEBUG_HANG ? "hanging" : "faulting");
    if (op == HIL_DEBUG_HANG) {
        hil_platform_hang();
    }
    hil_platform_fault();
#else
    (void)when_running;
    hil_refuse(s, HIL_ERR_UNSUPPORTED, op, 0, "this runner was built without debug commands");
#endif
}

void hil_cmd_mem_stats(hil_server_t *s, hil_reader_t *r) {
    (void)r;
    hil_pool_stat_t pools[8];
    size_t n = s->engine->pool_stats(pools, 8);
    hil_writer_t w = hil_reply_writer(s);
    hil_wr_u8(&w, (uint8_t)n);
    for (size_t i = 0; i < n; i++) {
        hil_wr_str8(&w, pools[i].name);
        hil_wr_u64(&w, pools[i].size);
        hil_wr_u64(&w, pools[i].peak);
    }
    hil_reply(s, HIL_CMD_MEM_STATS | HIL_REPLY, (uint32_t)w.used);
}

void hil_cmd_link_stats(hil_server_t *s, hil_reader_t *r) {
    (void)r;
    hil_writer_t w = hil_reply_writer(s);
    hil_wr_u64(&w, s->frames_in);
    hil_wr_u64(&w, s->bytes_in);
    hil_wr_u64(&w, s->chunk_bytes);
    hil_wr_u64(&w, s->model_bytes);
    hil_wr_u64(&w, s->file_bytes);
    hil_wr_u32(&w, s->loads);
    hil_reply(s, HIL_CMD_LINK_STATS | HIL_REPLY, (uint32_t)w.used);
}

void hil_cmd_fault_report(hil_server_t *s, hil_reader_t *r) {
    uint8_t clear = r->left ? hil_rd_u8(r) : 0;
    hil_fault_t fault;
    memset(&fault, 0, sizeof(fault));
    hil_platform_last_fault(&fault);
    hil_writer_t w = hil_reply_writer(s);
    hil_wr_u8(&w, fault.valid);
    hil_wr_str8(&w, fault.valid && fault.kind ? fault.kind : "");
    hil_wr_u8(&w, (uint8_t)fault.count);
    for (size_t i = 0; i < fault.count; i++) {
        hil_wr_str8(&w, fault.fields[i].name);
        hil_wr_u64(&w, fault.fields[i].value);
    }
    if (clear) {
        hil_platform_clear_fault();
    }
    hil_reply(s, HIL_CMD_FAULT_REPORT | HIL_REPLY, (uint32_t)w.used);
}
