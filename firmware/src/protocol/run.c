/* Inputs, timed runs and outputs (PROTOCOL.md, "Inputs, runs, outputs"). */
#include <string.h>

#include "../platform/platform.h"
#include "codec.h"
#include "handlers.h"
#include "reply.h"
#include "state.h"

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

void hil_cmd_set_input(hil_server_t *s, hil_reader_t *r) {
    hil_tensor_desc_t d = {0};
    uint8_t index = hil_rd_u8(r);
    read_desc(r, &d);
    uint64_t offset = hil_rd_u64(r);
    size_t n = r->left;
    const uint8_t *data = hil_rd_take(r, n);
    if (r->bad || index >= HIL_MAX_TENSORS || d.ndim > HIL_MAX_DIMS) {
        hil_refuse(s, HIL_ERR_BAD_REQUEST, index, d.ndim, "malformed SET_INPUT");
        return;
    }
    if (!s->holds_model) {
        hil_refuse(s, HIL_ERR_NO_MODEL, 0, 0, "SET_INPUT before a model was loaded");
        return;
    }
    if (offset == 0) {
        hil_error_t err = {0};
        uint8_t *buf = s->engine->input_buffer(index, &d, &err);
        if (buf == NULL) {
            hil_reply_error(s, &err);
            return;
        }
        s->input_buf[index] = buf;
        s->input_size[index] = d.nbytes;
        s->input_received[index] = 0;
    }
    if (s->input_buf[index] == NULL || offset != s->input_received[index] ||
        offset + n > s->input_size[index]) {
        hil_refuse(s, HIL_ERR_SEQUENCE, s->input_received[index], offset,
                   "input %u: data at offset %lu does not follow the %lu bytes received",
                   index, (unsigned long)offset, (unsigned long)s->input_received[index]);
        return;
    }
    memcpy(s->input_buf[index] + offset, data, n);
    s->input_received[index] += n;
    hil_writer_t w = hil_reply_writer(s);
    hil_wr_u64(&w, s->input_received[index]);
    hil_reply(s, HIL_CMD_SET_INPUT | HIL_REPLY, (uint32_t)w.used);
}

static uint64_t us_to_ticks(uint64_t us, uint64_t hz) {
    return (us / 1000000u) * hz + (us % 1000000u) * hz / 1000000u;
}

void hil_cmd_run(hil_server_t *s, hil_reader_t *r) {
    uint32_t warmup = hil_rd_u32(r);
    uint32_t min_runs = hil_rd_u32(r);
    uint32_t max_runs = hil_rd_u32(r);
    (void)hil_rd_u32(r);
    uint64_t min_time_us = hil_rd_u64(r);
    uint64_t max_time_us = hil_rd_u64(r);
    if (r->bad || min_runs == 0) {
        hil_refuse(s, HIL_ERR_BAD_REQUEST, 0, 0, "malformed RUN");
        return;
    }
    if (!s->holds_model) {
        hil_refuse(s, HIL_ERR_NO_MODEL, 0, 0, "RUN before a model was loaded");
        return;
    }
    for (size_t i = 0; i < s->engine->num_inputs() && i < HIL_MAX_TENSORS; i++) {
        if (s->input_buf[i] == NULL || s->input_received[i] != s->input_size[i]) {
            hil_refuse(s, HIL_ERR_BAD_INPUT, i, s->input_received[i], "input %u was not set",
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
    uint8_t *out = hil_reply_payload(s);
    hil_error_t err = {0};

    hil_send_progress(s, 0); /* received: the host now waits with the run timeout */
    if (!s->tracing) { /* `--inject hang@N` counts the judged runs, not explaining ones */
        s->runs++;
#ifdef HIL_DEBUG_COMMANDS
        int injected = hil_platform_injected_fault(s->runs);
        if (injected != 0) s->debug_arm = injected;
#endif
    }
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
            hil_reply_error(s, &err);
            return;
        }
    }
    uint32_t n = 0;
    uint64_t start = hil_clock_ticks();
    for (;;) {
        uint64_t t0 = hil_clock_ticks();
        if (s->engine->execute(&err) != 0) {
            hil_reply_error(s, &err);
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
            hil_send_progress(s, n);
            last_progress = t1;
        }
    }
    hil_put_u32(out, n);
    hil_put_u32(out + 4, warmup);
    hil_put_u64(out + 8, hz);
    out[16] = hil_clock_kind();
    memset(out + 17, 0, header - 17);
    hil_reply(s, HIL_CMD_RUN | HIL_REPLY, header + 8u * n);
}

void hil_cmd_get_output(hil_server_t *s, hil_reader_t *r) {
    uint8_t index = hil_rd_u8(r);
    (void)hil_rd_take(r, 3);
    uint64_t offset = hil_rd_u64(r);
    uint32_t max_len = hil_rd_u32(r);
    if (r->bad) {
        hil_refuse(s, HIL_ERR_BAD_REQUEST, 0, 0, "malformed GET_OUTPUT");
        return;
    }
    hil_tensor_desc_t d = {0};
    const uint8_t *data = NULL;
    if (!s->holds_model || index >= s->engine->num_outputs() ||
        s->engine->output(index, &d, &data) != 0 || data == NULL) {
        hil_refuse(s, HIL_ERR_BAD_REQUEST, index, s->engine->num_outputs(),
                   "no output %u (the model has %u; did RUN succeed?)", index,
                   (unsigned)s->engine->num_outputs());
        return;
    }
    if (offset > d.nbytes) {
        hil_refuse(s, HIL_ERR_BAD_REQUEST, offset, d.nbytes, "output offset beyond its size");
        return;
    }
    hil_writer_t w = hil_reply_writer(s);
    hil_write_desc(&w, &d);
    hil_wr_u64(&w, offset);
    uint64_t n = d.nbytes - offset;
    if (n > max_len) n = max_len;
    if (n > w.cap - w.used) n = w.cap - w.used;
    hil_wr_bytes(&w, data + offset, (size_t)n);
    hil_reply(s, HIL_CMD_GET_OUTPUT | HIL_REPLY, (uint32_t)w.used);
}
