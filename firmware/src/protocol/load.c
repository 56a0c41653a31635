/* Model transfer (PROTOCOL.md, "Models"): LOAD_BEGIN, LOAD_CHUNK, LOAD_END. Chunks land in
 * the engine's model buffer in order; only bytes that passed their frame's CRC are counted and
 * hashed, and the model is taken only when its hash is the announced one. */
#include <string.h>

#include "../platform/platform.h"
#include "codec.h"
#include "digest.h"
#include "handlers.h"
#include "held.h"
#include "reply.h"
#include "state.h"

void hil_cmd_load_begin(hil_server_t *s, hil_reader_t *r) {
    const uint8_t *hash = hil_rd_take(r, 32);
    uint64_t size = hil_rd_u64(r);
    if (r->bad) {
        hil_refuse(s, HIL_ERR_BAD_REQUEST, 0, 0, "LOAD_BEGIN needs a sha256 and a size");
        return;
    }
    hil_writer_t w = hil_reply_writer(s);
    if (s->holds_model && memcmp(hash, s->held_hash, 32) == 0) {
        hil_wr_u8(&w, 1); /* already held: nothing to send */
        hil_wr_u32(&w, 0);
        hil_write_method(s, &w);
        hil_reply(s, HIL_CMD_LOAD_BEGIN | HIL_REPLY, (uint32_t)w.used);
        return;
    }
    size_t capacity = 0;
    (void)s->engine->model_buffer(&capacity);
    if (size > capacity) {
        hil_refuse(s, HIL_ERR_TOO_LARGE, size, capacity,
                   "model of %lu bytes does not fit the %lu-byte model pool",
                   (unsigned long)size, (unsigned long)capacity);
        return;
    }
    hil_soft_reset(s); /* the model buffer is about to be overwritten */
    memset(s->held_hash, 0, sizeof(s->held_hash));
    memcpy(s->load_hash, hash, 32);
    s->load_size = size;
    s->load_received = 0;
    s->loading = 1;
    hil_digest_begin();
    hil_log(HIL_LOG_INFO, "receiving a model of %lu bytes", (unsigned long)size);
    hil_wr_u8(&w, 0);
    hil_wr_u32(&w, (uint32_t)(s->max_payload - 8));
    hil_reply(s, HIL_CMD_LOAD_BEGIN | HIL_REPLY, (uint32_t)w.used);
}

void hil_cmd_load_chunk(hil_server_t *s, hil_reader_t *r) {
    uint64_t offset = hil_rd_u64(r);
    size_t n = r->left;
    const uint8_t *data = hil_rd_take(r, n);
    if (r->bad || !s->loading) {
        hil_refuse(s, HIL_ERR_SEQUENCE, s->load_received, offset, "LOAD_CHUNK outside a transfer");
        return;
    }
    if (offset > s->load_received || offset + n > s->load_size) {
        hil_refuse(s, HIL_ERR_SEQUENCE, s->load_received, offset,
                   "chunk at offset %lu, but %lu of %lu bytes have arrived",
                   (unsigned long)offset, (unsigned long)s->load_received,
                   (unsigned long)s->load_size);
        return;
    }
    /* A chunk overlapping what already arrived is a retransmission: keep only the new part. */
    uint64_t skip = s->load_received - offset;
    s->chunk_bytes += n;
    if (skip < n) {
        s->model_bytes += n - skip;
        size_t capacity = 0;
        uint8_t *model = s->engine->model_buffer(&capacity);
        memcpy(model + s->load_received, data + skip, (size_t)(n - skip));
        hil_digest_add(model + s->load_received, (size_t)(n - skip)); /* hashed from the pool */
        s->load_received += n - skip;
    }
    hil_writer_t w = hil_reply_writer(s);
    hil_wr_u64(&w, s->load_received);
    hil_reply(s, HIL_CMD_LOAD_CHUNK | HIL_REPLY, (uint32_t)w.used);
}

void hil_cmd_load_end(hil_server_t *s, hil_reader_t *r) {
    (void)r;
    if (!s->loading || s->load_received != s->load_size) {
        hil_refuse(s, HIL_ERR_SEQUENCE, s->load_received, s->load_size,
                   "LOAD_END after %lu of %lu bytes", (unsigned long)s->load_received,
                   (unsigned long)s->load_size);
        return;
    }
    s->loading = 0;
    uint8_t digest[32];
    hil_digest_finish(digest);
    if (memcmp(digest, s->load_hash, 32) != 0) {
        hil_refuse(s, HIL_ERR_HASH_MISMATCH, s->load_size, 0,
                   "the %lu bytes received do not have the announced sha256",
                   (unsigned long)s->load_size);
        return;
    }
    hil_error_t err = {0};
    if (s->engine->load((size_t)s->load_size, &err) != 0) {
        hil_reply_error(s, &err);
        return;
    }
    s->holds_model = 1;
    memcpy(s->held_hash, s->load_hash, 32);
    s->loads++;
    hil_clear_inputs(s);
    hil_writer_t w = hil_reply_writer(s);
    hil_write_method(s, &w);
    size_t n_in = s->engine->num_inputs(), n_out = s->engine->num_outputs();
    hil_log(HIL_LOG_INFO, "model loaded: %u inputs, %u outputs", (unsigned)n_in, (unsigned)n_out);
    hil_reply(s, HIL_CMD_LOAD_END | HIL_REPLY, (uint32_t)w.used);
}
