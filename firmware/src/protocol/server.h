/* The protocol server: receives requests, answers them through an engine, and keeps the
 * promises of PROTOCOL.md (a repeated request gets the same reply without running twice, a
 * corrupted request gets a NAK, every reply is one frame). */
#ifndef HIL_SERVER_H
#define HIL_SERVER_H

#include <stddef.h>
#include <stdint.h>

#include "../engine/engine.h"
#include "codec.h"
#include "frame.h"
#include "sha256.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    const hil_engine_t *engine;
    hil_rx_t rx;
    uint8_t *tx;           /* the last reply, kept whole so a repeated request is answered */
    size_t tx_cap;
    size_t tx_len;
    size_t max_payload;
    int has_last;
    uint8_t last_type;
    uint16_t last_seq;
    uint16_t current_seq;  /* the request being handled (progress and fault frames name it) */

    /* model transfer */
    int loading;
    uint64_t load_size;
    uint64_t load_received;
    uint8_t load_hash[32];
    int holds_model;
    uint8_t held_hash[32];

    /* inputs of the held model as the host set them */
    uint8_t *input_buf[HIL_MAX_TENSORS];
    uint64_t input_size[HIL_MAX_TENSORS];
    uint64_t input_received[HIL_MAX_TENSORS];

    int debug_arm; /* HIL_DEBUG_* to trigger inside the next RUN, 0 for none */
    uint32_t runs; /* RUN requests served since start */

    /* what reached the runner since it started, counted here (LINK_STATS): the host's
     * memory of what it sent is not evidence that nothing moved */
    uint64_t frames_in;   /* request frames, repeats included */
    uint64_t bytes_in;    /* their bytes on the wire */
    uint64_t chunk_bytes; /* LOAD_CHUNK data, retransmissions included */
    uint64_t model_bytes; /* model bytes written into the pool from the link */
    uint64_t file_bytes;  /* model bytes read from a file (LOAD_FILE) */
    uint32_t loads;       /* models made runnable */
} hil_server_t;

/* Serve until the link closes. `buf`/`cap` is the memory for both frame buffers. */
int hil_server_run(const hil_engine_t *engine, uint8_t *rx_buf, size_t rx_cap, uint8_t *tx_buf,
                   size_t tx_cap, uint32_t gap_ms);

/* The reply under construction: write the payload here, then call hil_server_reply(). */
uint8_t *hil_server_payload(hil_server_t *s);
void hil_server_reply(hil_server_t *s, uint8_t type, uint32_t len);
void hil_server_error(hil_server_t *s, const hil_error_t *err);
void hil_server_progress(hil_server_t *s, uint32_t runs_done);

/* One request: `frame` is a checked frame of a request type. Defined in commands.c. */
void hil_server_dispatch(hil_server_t *s, const hil_frame_t *frame);
#ifdef HIL_FILE_LOAD
/* LOAD_FILE, on platforms with a file system (load_file.c). */
void hil_cmd_load_file(hil_server_t *s, hil_reader_t *r);
#endif
void hil_server_soft_reset(hil_server_t *s);
/* Reply to a request that left a model held: `held` (1: it was held before) + the method. */
void hil_server_reply_loaded(hil_server_t *s, uint8_t type, uint8_t held);

/* printf-style log line to the local sink and, as a LOG frame, to the host. */
void hil_log(int level, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

#ifdef __cplusplus
}
#endif

#endif
