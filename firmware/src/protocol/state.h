/* The protocol server's state: what the layers above share about the link, the last reply, a
 * model transfer, the held model's inputs and the link statistics. Data only; the functions
 * that work on it are in the layers above (reply.h, held.h, handlers.h, server.h). */
#ifndef HIL_STATE_H
#define HIL_STATE_H

#include <stddef.h>
#include <stdint.h>

#include "../engine/engine.h"
#include "frame.h"

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

    int tracing; /* the ETDump recorder is on (TRACE): RUNs explain, they are not counted */
    /* the CRC-32 of each trace part (GET_TRACE), computed once per trace */
    uint32_t trace_crc[2];
    uint8_t trace_crc_known; /* bit per part */
    uint32_t runs; /* RUN requests served since start, traced ones left out */

    /* what reached the runner since it started, counted here (LINK_STATS): the host's
     * memory of what it sent is not evidence that nothing moved */
    uint64_t frames_in;   /* request frames, repeats included */
    uint64_t bytes_in;    /* their bytes on the wire */
    uint64_t chunk_bytes; /* LOAD_CHUNK data, retransmissions included */
    uint64_t model_bytes; /* model bytes written into the pool from the link */
    uint64_t file_bytes;  /* model bytes read from a file (LOAD_FILE) */
    uint32_t loads;       /* models made runnable */
} hil_server_t;

#endif
