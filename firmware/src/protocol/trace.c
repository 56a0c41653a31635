/* An explaining run's ETDump (PROTOCOL.md, "Traces"): TRACE starts or stops ExecuTorch's
 * recorder on the held model, GET_TRACE hands out what it recorded in pieces, each with the
 * CRC-32 of the whole part so the host knows the pieces it joined are the runner's bytes. */
#include "codec.h"
#include "crc32.h"
#include "handlers.h"
#include "held.h"
#include "reply.h"
#include "state.h"

enum { TRACE_STOP = 0, TRACE_START = 1 };

static int refuse_untraceable(hil_server_t *s) {
    if (s->engine->trace_begin != NULL) return 0;
    hil_refuse(s, HIL_ERR_UNSUPPORTED, 0, 0,
               "this runner was built without ExecuTorch's ETDump (engine %s)", s->engine->name);
    return 1;
}

void hil_cmd_trace(hil_server_t *s, hil_reader_t *r) {
    uint8_t mode = hil_rd_u8(r);
    (void)hil_rd_take(r, 3);
    uint64_t debug_bytes = hil_rd_u64(r);
    if (r->bad || mode > TRACE_START) {
        hil_refuse(s, HIL_ERR_BAD_REQUEST, mode, 0, "malformed TRACE");
        return;
    }
    if (refuse_untraceable(s)) return;
    if (!s->holds_model) {
        hil_refuse(s, HIL_ERR_NO_MODEL, 0, 0, "TRACE before a model was loaded");
        return;
    }
    hil_error_t err = {0};
    int failed = mode == TRACE_START ? s->engine->trace_begin(debug_bytes, &err)
                                     : s->engine->trace_end(&err);
    hil_clear_inputs(s); /* the model was loaded again: its inputs are set again */
    s->trace_crc_known = 0;
    s->tracing = mode == TRACE_START && !failed;
    if (failed) {
        hil_reply_error(s, &err);
        return;
    }
    hil_writer_t w = hil_reply_writer(s);
    hil_wr_u8(&w, mode);
    hil_reply(s, HIL_CMD_TRACE | HIL_REPLY, (uint32_t)w.used);
}

void hil_cmd_get_trace(hil_server_t *s, hil_reader_t *r) {
    uint8_t part = hil_rd_u8(r);
    (void)hil_rd_take(r, 3);
    uint64_t offset = hil_rd_u64(r);
    uint32_t max_len = hil_rd_u32(r);
    if (r->bad || part > HIL_TRACE_DEBUG) {
        hil_refuse(s, HIL_ERR_BAD_REQUEST, part, 0, "malformed GET_TRACE");
        return;
    }
    if (refuse_untraceable(s)) return;
    const uint8_t *data = NULL;
    size_t size = 0;
    hil_error_t err = {0};
    if (s->engine->trace_part(part, &data, &size, &err) != 0) {
        hil_reply_error(s, &err);
        return;
    }
    if (offset > size) {
        hil_refuse(s, HIL_ERR_BAD_REQUEST, offset, size, "trace offset beyond its size");
        return;
    }
    if (!(s->trace_crc_known & (1u << part))) {
        s->trace_crc[part] = size > 0 ? hil_crc32(0, data, size) : 0;
        s->trace_crc_known |= (uint8_t)(1u << part);
    }
    hil_writer_t w = hil_reply_writer(s);
    hil_wr_u64(&w, size);
    hil_wr_u32(&w, s->trace_crc[part]);
    hil_wr_u64(&w, offset);
    uint64_t n = size - offset;
    if (n > max_len) n = max_len;
    if (n > w.cap - w.used) n = w.cap - w.used;
    hil_wr_bytes(&w, data + offset, (size_t)n);
    hil_reply(s, HIL_CMD_GET_TRACE | HIL_REPLY, (uint32_t)w.used);
}
