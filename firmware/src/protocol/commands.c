/* One handler per request type (PROTOCOL.md, "Commands"). Each parses its payload with a
 * bounds-checked reader, asks the engine, and answers with exactly one reply or error frame. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "../platform/platform.h"
#include "codec.h"
#include "digest.h"
#include "server.h"

#ifndef HIL_BUILD_ID
#define HIL_BUILD_ID "dev"
#endif
/* Requests the platform can take unanswered without losing bytes: a process reading a pty
 * or socket has the kernel's buffer behind it; a polled UART has one byte. */
#ifndef HIL_RX_WINDOW
#define HIL_RX_WINDOW 1
#endif

void hil_error_set(hil_error_t *err, uint16_t code, uint64_t a, uint64_t b, const char *fmt, ...) {
    err->code = code;
    err->a = a;
    err->b = b;
    va_list args;
    va_start(args, fmt);
    vsnprintf(err->text, sizeof(err->text), fmt, args);
    va_end(args);
}

static void refuse(hil_server_t *s, uint16_t code, uint64_t a, uint64_t b, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
static void refuse(hil_server_t *s, uint16_t code, uint64_t a, uint64_t b, const char *fmt, ...) {
    hil_error_t err;
    err.code = code;
    err.a = a;
    err.b = b;
    va_list args;
    va_start(args, fmt);
    vsnprintf(err.text, sizeof(err.text), fmt, args);
    va_end(args);
    hil_server_error(s, &err);
}

static hil_writer_t writer(hil_server_t *s) {
    hil_writer_t w = {hil_server_payload(s), 0, s->max_payload, 0};
    return w;
}

static void write_desc(hil_writer_t *w, const hil_tensor_desc_t *d) {
    hil_wr_u8(w, d->dtype);
    hil_wr_u8(w, d->ndim);
    for (uint8_t i = 0; i < d->ndim; i++) {
        hil_wr_u32(w, (uint32_t)d->dims[i]);
    }
    hil_wr_bytes(w, d->dim_order, d->ndim);
    hil_wr_u64(w, d->nbytes);
}

/* The loaded method's inputs and outputs, as LOAD_END (and LOAD_BEGIN of a held model) report. */
static void write_method(hil_server_t *s, hil_writer_t *w) {
    size_t n_in = s->engine->num_inputs(), n_out = s->engine->num_outputs();
    hil_wr_u8(w, (uint8_t)n_in);
    hil_wr_u8(w, (uint8_t)n_out);
    for (size_t i = 0; i < n_in + n_out; i++) {
        hil_tensor_desc_t d = {0};
        if (i < n_in) {
            s->engine->input_desc(i, &d);
        } else {
            const uint8_t *unused;
            s->engine->output(i - n_in, &d, &unused);
        }
        write_desc(w, &d);
    }
}

/* A model is now held (LOAD_FILE, load_file.c): forget old inputs, reply `held` + method. */
void hil_server_reply_loaded(hil_server_t *s, uint8_t type, uint8_t held) {
    if (!held) {
        memset(s->input_buf, 0, sizeof(s->input_buf));
        memset(s->input_size, 0, sizeof(s->input_size));
        memset(s->input_received, 0, sizeof(s->input_received));
    }
    hil_writer_t w = writer(s);
    hil_wr_u8(&w, held);
    write_method(s, &w);
    hil_server_reply(s, type, (uint32_t)w.used);
}

static void clear_inputs(hil_server_t *s) {
    memset(s->input_buf, 0, sizeof(s->input_buf));
    memset(s->input_size, 0, sizeof(s->input_size));
    memset(s->input_received, 0, sizeof(s->input_received));
}

void hil_server_soft_reset(hil_server_t *s) {
    s->engine->unload();
    s->loading = 0;
    s->holds_model = 0;
    clear_inputs(s);
    s->debug_arm = 0;
}

static void cmd_hello(hil_server_t *s, hil_reader_t *r) {
    uint16_t major = hil_rd_u16(r);
    uint16_t minor = hil_rd_u16(r);
    if (r->bad) {
        refuse(s, HIL_ERR_BAD_REQUEST, 0, 0, "HELLO needs the host's protocol version");
        return;
    }
    if (major != HIL_PROTOCOL_MAJOR) {
        refuse(s, HIL_ERR_VERSION_MISMATCH, (uint64_t)HIL_PROTOCOL_MAJOR << 16 | HIL_PROTOCOL_MINOR,
               (uint64_t)major << 16 | minor, "runner speaks protocol %d.%d, host speaks %u.%u",
               HIL_PROTOCOL_MAJOR, HIL_PROTOCOL_MINOR, major, minor);
        return;
    }
    hil_pool_stat_t pools[8];
    size_t n_pools = s->engine->pool_stats(pools, 8);
    hil_writer_t w = writer(s);
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
    flags |= HIL_HELLO_FILE_LOAD;
#endif
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
    hil_server_reply(s, HIL_CMD_HELLO | HIL_REPLY, (uint32_t)w.used);
}

static void cmd_load_begin(hil_server_t *s, hil_reader_t *r) {
    const uint8_t *hash = hil_rd_take(r, 32);
    uint64_t size = hil_rd_u64(r);
    if (r->bad) {
        refuse(s, HIL_ERR_BAD_REQUEST, 0, 0, "LOAD_BEGIN needs a sha256 and a size");
        return;
    }
    hil_writer_t w = writer(s);
    if (s->holds_model && memcmp(hash, s->held_hash, 32) == 0) {
        hil_wr_u8(&w, 1); /* already held: nothing to send */
        hil_wr_u32(&w, 0);
        write_method(s, &w);
        hil_server_reply(s, HIL_CMD_LOAD_BEGIN | HIL_REPLY, (uint32_t)w.used);
        return;
    }
    size_t capacity = 0;
    (void)s->engine->model_buffer(&capacity);
    if (size > capacity) {
        refuse(s, HIL_ERR_TOO_LARGE, size, capacity,
               "model of %lu bytes does not fit the %lu-byte model pool",
               (unsigned long)size, (unsigned long)capacity);
        return;
    }
    hil_server_soft_reset(s); /* the model buffer is about to be overwritten */
    memset(s->held_hash, 0, sizeof(s->held_hash));
    memcpy(s->load_hash, hash, 32);
    s->load_size = size;
    s->load_received = 0;
    s->loading = 1;
    hil_digest_begin();
    hil_log(HIL_LOG_INFO, "receiving a model of %lu bytes", (unsigned long)size);
    hil_wr_u8(&w, 0);
    hil_wr_u32(&w, (uint32_t)(s->max_payload - 8));
    hil_server_reply(s, HIL_CMD_LOAD_BEGIN | HIL_REPLY, (uint32_t)w.used);
}

static void cmd_load_chunk(hil_server_t *s, hil_reader_t *r) {
    uint64_t offset = hil_rd_u64(r);
    size_t n = r->left;
    const uint8_t *data = hil_rd_take(r, n);
    if (r->bad || !s->loading) {
        refuse(s, HIL_ERR_SEQUENCE, s->load_received, offset, "LOAD_CHUNK outside a transfer");
        return;
    }
    if (offset > s->load_received || offset + n > s->load_size) {
        refuse(s, HIL_ERR_SEQUENCE, s->load_received, offset,
               "chunk at offset %lu, but %lu of %lu bytes have arrived",
               (unsigned long)offset, (unsigned long)s->load_received,
               (unsigned long)s->load_size);
        return;
    }
    /* A chunk overlapping what already arrived is a retransmission: keep only the new part. */
    uint64_t skip = s->load_received - offset;
    if (skip < n) {
        size_t capacity = 0;
        uint8_t *model = s->engine->model_buffer(&capacity);
        memcpy(model + s->load_received, data + skip, (size_t)(n - skip));
        hil_digest_add(model + s->load_received, (size_t)(n - skip)); /* hashed from the pool */
        s->load_received += n - skip;
    }
    hil_writer_t w = writer(s);
    hil_wr_u64(&w, s->load_received);
    hil_server_reply(s, HIL_CMD_LOAD_CHUNK | HIL_REPLY, (uint32_t)w.used);
}

static void cmd_load_end(hil_server_t *s) {
    if (!s->loading || s->load_received != s->load_size) {
        refuse(s, HIL_ERR_SEQUENCE, s->load_received, s->load_size,
               "LOAD_END after %lu of %lu bytes", (unsigned long)s->load_received,
               (unsigned long)s->load_size);
        return;
    }
    s->loading = 0;
    uint8_t digest[32];
    hil_digest_finish(digest);
    if (memcmp(digest, s->load_hash, 32) != 0) {
        refuse(s, HIL_ERR_HASH_MISMATCH, s->load_size, 0,
               "the %lu bytes received do not have the announced sha256",
               (unsigned long)s->load_size);
        return;
    }
    hil_error_t err = {0};
    if (s->engine->load((size_t)s->load_size, &err) != 0) {
        hil_server_error(s, &err);
        return;
    }
    s->holds_model = 1;
    memcpy(s->held_hash, s->load_hash, 32);
    clear_inputs(s);
    hil_writer_t w = writer(s);
    write_method(s, &w);
    size_t n_in = s->engine->num_inputs(), n_out = s->engine->num_outputs();
    hil_log(HIL_LOG_INFO, "model loaded: %u inputs, %u outputs", (unsigned)n_in, (unsigned)n_out);
    hil_server_reply(s, HIL_CMD_LOAD_END | HIL_REPLY, (uint32_t)w.used);
}

static void read_desc(hil_reader_t *r, hil_tensor_desc_t *d) {
    d->dtype = hil_rd_u8(r);
    d->ndim = hil_rd_u8(r);
    if (d->ndim > HIL_MAX_DIMS) {
        r->bad = 1;
        return;
    }
    for (uint8_t i = 0; i < d->ndim; i++) {
        d->dims[i] = (int32_t)hil_rd_u32(r);
    }
    for (uint8_t i = 0; i < d->ndim; i++) {
        d->dim_order[i] = hil_rd_u8(r);
    }
    d->nbytes = hil_rd_u64(r);
}

static void cmd_set_input(hil_server_t *s, hil_reader_t *r) {
    hil_tensor_desc_t d = {0};
    uint8_t index = hil_rd_u8(r);
    read_desc(r, &d);
    uint64_t offset = hil_rd_u64(r);
    size_t n = r->left;
    const uint8_t *data = hil_rd_take(r, n);
    if (r->bad || index >= HIL_MAX_TENSORS || d.ndim > HIL_MAX_DIMS) {
        refuse(s, HIL_ERR_BAD_REQUEST, index, d.ndim, "malformed SET_INPUT");
        return;
    }
    if (!s->holds_model) {
        refuse(s, HIL_ERR_NO_MODEL, 0, 0, "SET_INPUT before a model was loaded");
        return;
    }
    if (offset == 0) {
        hil_error_t err = {0};
        uint8_t *buf = s->engine->input_buffer(index, &d, &err);
        if (buf == NULL) {
            hil_server_error(s, &err);
            return;
        }
        s->input_buf[index] = buf;
        s->input_size[index] = d.nbytes;
        s->input_received[index] = 0;
    }
    if (s->input_buf[index] == NULL || offset != s->input_received[index] ||
        offset + n > s->input_size[index]) {
        refuse(s, HIL_ERR_SEQUENCE, s->input_received[index], offset,
               "input %u: data at offset %lu does not follow the %lu bytes received",
               index, (unsigned long)offset, (unsigned long)s->input_received[index]);
        return;
    }
    memcpy(s->input_buf[index] + offset, data, n);
    s->input_received[index] += n;
    hil_writer_t w = writer(s);
    hil_wr_u64(&w, s->input_received[index]);
    hil_server_reply(s, HIL_CMD_SET_INPUT | HIL_REPLY, (uint32_t)w.used);
}

static uint64_t us_to_ticks(uint64_t us, uint64_t hz) {
    return (us / 1000000u) * hz + (us % 1000000u) * hz / 1000000u;
}

static void cmd_run(hil_server_t *s, hil_reader_t *r) {
    uint32_t warmup = hil_rd_u32(r);
    uint32_t min_runs = hil_rd_u32(r);
    uint32_t max_runs = hil_rd_u32(r);
    (void)hil_rd_u32(r);
    uint64_t min_time_us = hil_rd_u64(r);
    uint64_t max_time_us = hil_rd_u64(r);
    if (r->bad || min_runs == 0) {
        refuse(s, HIL_ERR_BAD_REQUEST, 0, 0, "malformed RUN");
        return;
    }
    if (!s->holds_model) {
        refuse(s, HIL_ERR_NO_MODEL, 0, 0, "RUN before a model was loaded");
        return;
    }
    for (size_t i = 0; i < s->engine->num_inputs() && i < HIL_MAX_TENSORS; i++) {
        if (s->input_buf[i] == NULL || s->input_received[i] != s->input_size[i]) {
            refuse(s, HIL_ERR_BAD_INPUT, i, s->input_received[i], "input %u was not set",
                   (unsigned)i);
            return;
        }
    }
    const uint32_t header = 24;
    uint32_t capacity = (uint32_t)((s->max_payload - header) / 8u);
    if (max_runs > capacity) max_runs = capacity;
    if (min_runs > max_runs) min_runs = max_runs;
    uint64_t hz = hil_clock_hz();
    uint64_t min_ticks = us_to_ticks(min_time_us, hz), max_ticks = us_to_ticks(max_time_us, hz);
    uint8_t *out = hil_server_payload(s);
    hil_error_t err = {0};

    hil_server_progress(s, 0); /* received: the host now waits with the run timeout */
    s->runs++;
#ifdef HIL_DEBUG_COMMANDS
    int injected = hil_platform_injected_fault(s->runs);
    if (injected != 0) s->debug_arm = injected;
#endif
    hil_log(HIL_LOG_INFO, "run: %lu warm-up, %lu..%lu runs", (unsigned long)warmup,
            (unsigned long)min_runs, (unsigned long)max_runs);
    if (s->debug_arm == HIL_DEBUG_HANG) {
        hil_platform_hang();
    } else if (s->debug_arm == HIL_DEBUG_FAULT) {
        hil_platform_fault();
    }
    uint64_t last_progress = hil_clock_ticks();
    for (uint32_t i = 0; i < warmup; i++) {
        if (s->engine->execute(&err) != 0) {
            hil_server_error(s, &err);
            return;
        }
    }
    uint32_t n = 0;
    uint64_t start = hil_clock_ticks();
    for (;;) {
        uint64_t t0 = hil_clock_ticks();
        if (s->engine->execute(&err) != 0) {
            hil_server_error(s, &err);
            return;
        }
        uint64_t t1 = hil_clock_ticks();
        hil_put_u64(out + header + 8u * n, t1 - t0);
        n++;
        uint64_t elapsed = t1 - start;
        if ((n >= min_runs && elapsed >= min_ticks) || n >= max_runs ||
            (n >= min_runs && elapsed >= max_ticks)) {
            break;
        }
        if (t1 - last_progress >= hz / 4u) {
            hil_server_progress(s, n);
            last_progress = t1;
        }
    }
    hil_put_u32(out, n);
    hil_put_u32(out + 4, warmup);
    hil_put_u64(out + 8, hz);
    out[16] = hil_clock_kind();
    memset(out + 17, 0, header - 17);
    hil_server_reply(s, HIL_CMD_RUN | HIL_REPLY, header + 8u * n);
}

static void cmd_get_output(hil_server_t *s, hil_reader_t *r) {
    uint8_t index = hil_rd_u8(r);
    (void)hil_rd_take(r, 3);
    uint64_t offset = hil_rd_u64(r);
    uint32_t max_len = hil_rd_u32(r);
    if (r->bad) {
        refuse(s, HIL_ERR_BAD_REQUEST, 0, 0, "malformed GET_OUTPUT");
        return;
    }
    hil_tensor_desc_t d = {0};
    const uint8_t *data = NULL;
    if (!s->holds_model || index >= s->engine->num_outputs() ||
        s->engine->output(index, &d, &data) != 0 || data == NULL) {
        refuse(s, HIL_ERR_BAD_REQUEST, index, s->engine->num_outputs(),
               "no output %u (the model has %u; did RUN succeed?)", index,
               (unsigned)s->engine->num_outputs());
        return;
    }
    if (offset > d.nbytes) {
        refuse(s, HIL_ERR_BAD_REQUEST, offset, d.nbytes, "output offset beyond its size");
        return;
    }
    hil_writer_t w = writer(s);
    write_desc(&w, &d);
    hil_wr_u64(&w, offset);
    uint64_t n = d.nbytes - offset;
    if (n > max_len) n = max_len;
    if (n > w.cap - w.used) n = w.cap - w.used;
    hil_wr_bytes(&w, data + offset, (size_t)n);
    hil_server_reply(s, HIL_CMD_GET_OUTPUT | HIL_REPLY, (uint32_t)w.used);
}

static void cmd_mem_stats(hil_server_t *s) {
    hil_pool_stat_t pools[8];
    size_t n = s->engine->pool_stats(pools, 8);
    hil_writer_t w = writer(s);
    hil_wr_u8(&w, (uint8_t)n);
    for (size_t i = 0; i < n; i++) {
        hil_wr_str8(&w, pools[i].name);
        hil_wr_u64(&w, pools[i].size);
        hil_wr_u64(&w, pools[i].peak);
    }
    hil_server_reply(s, HIL_CMD_MEM_STATS | HIL_REPLY, (uint32_t)w.used);
}

static void cmd_fault_report(hil_server_t *s, hil_reader_t *r) {
    uint8_t clear = r->left ? hil_rd_u8(r) : 0;
    hil_fault_t fault;
    memset(&fault, 0, sizeof(fault));
    hil_platform_last_fault(&fault);
    hil_writer_t w = writer(s);
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
    hil_server_reply(s, HIL_CMD_FAULT_REPORT | HIL_REPLY, (uint32_t)w.used);
}

static void cmd_debug(hil_server_t *s, hil_reader_t *r) {
    uint8_t op = hil_rd_u8(r);
    uint8_t when_running = r->left ? hil_rd_u8(r) : 0;
#ifdef HIL_DEBUG_COMMANDS
    if (op != HIL_DEBUG_HANG && op != HIL_DEBUG_FAULT) {
        refuse(s, HIL_ERR_BAD_REQUEST, op, 0, "unknown debug op %u", op);
        return;
    }
    if (when_running) {
        s->debug_arm = op; /* trigger inside the next RUN, as a model that hangs or faults */
        hil_server_reply(s, HIL_CMD_DEBUG | HIL_REPLY, 0);
        return;
    }
    hil_log(HIL_LOG_WARN, "debug: %s now, as asked", op == HIL_DEBUG_HANG ? "hanging" : "faulting");
    if (op == HIL_DEBUG_HANG) {
        hil_platform_hang();
    }
    hil_platform_fault();
#else
    (void)when_running;
    refuse(s, HIL_ERR_UNSUPPORTED, op, 0, "this runner was built without debug commands");
#endif
}

void hil_server_dispatch(hil_server_t *s, const hil_frame_t *frame) {
    hil_reader_t r = {frame->payload, frame->len, 0};
    switch (frame->type) {
    case HIL_CMD_HELLO: cmd_hello(s, &r); break;
    case HIL_CMD_LOAD_BEGIN: cmd_load_begin(s, &r); break;
    case HIL_CMD_LOAD_CHUNK: cmd_load_chunk(s, &r); break;
    case HIL_CMD_LOAD_END: cmd_load_end(s); break;
#ifdef HIL_FILE_LOAD
    case HIL_CMD_LOAD_FILE: hil_cmd_load_file(s, &r); break;
#endif
    case HIL_CMD_SET_INPUT: cmd_set_input(s, &r); break;
    case HIL_CMD_RUN: cmd_run(s, &r); break;
    case HIL_CMD_GET_OUTPUT: cmd_get_output(s, &r); break;
    case HIL_CMD_MEM_STATS: cmd_mem_stats(s); break;
    case HIL_CMD_FAULT_REPORT: cmd_fault_report(s, &r); break;
    case HIL_CMD_ECHO:
        memcpy(hil_server_payload(s), frame->payload, frame->len);
        hil_server_reply(s, HIL_CMD_ECHO | HIL_REPLY, frame->len);
        break;
    case HIL_CMD_RESET:
        hil_log(HIL_LOG_INFO, "reset requested");
        hil_server_reply(s, HIL_CMD_RESET | HIL_REPLY, 0);
        hil_server_soft_reset(s);
        memset(s->held_hash, 0, sizeof(s->held_hash));
        hil_platform_reset(); /* the fault record survives: the host may still ask for it */
        break;
    case HIL_CMD_DEBUG: cmd_debug(s, &r); break;
    default:
        refuse(s, HIL_ERR_UNKNOWN_COMMAND, frame->type, 0, "unknown request type 0x%02x",
               frame->type);
    }
}
