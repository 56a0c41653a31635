/* The request loop. What a request does is the dispatch's business (commands.c); the frames
 * the runner sends are reply.c's. */
#include "server.h"

#include <string.h>

#include "../platform/platform.h"
#include "commands.h"
#include "frame.h"
#include "reply.h"
#include "state.h"

static void handle(hil_server_t *s, const hil_frame_t *frame) {
    if (frame->type & HIL_REPLY) {
        return; /* our own kind of frame looped back, or line noise that happened to check */
    }
    s->frames_in++;
    s->bytes_in += frame->len + HIL_FRAME_OVERHEAD;
    if (s->has_last && frame->seq == s->last_seq && frame->type == s->last_type &&
        frame->type != HIL_CMD_HELLO) {
        /* The host did not get our reply (or it arrived damaged): send the same bytes again,
         * without running the request twice. */
        (void)hil_link_write(s->tx, s->tx_len);
        return;
    }
    s->current_seq = frame->seq;
    s->last_seq = frame->seq;
    s->last_type = frame->type;
    s->has_last = 0; /* until the reply is complete, a repeat must run the request */
    hil_dispatch(s, frame);
    s->has_last = 1;
}

int hil_server_run(const hil_engine_t *engine, uint8_t *rx_buf, size_t rx_cap, uint8_t *tx_buf,
                   size_t tx_cap, uint32_t gap_ms) {
    static hil_server_t server;
    hil_server_t *s = &server;
    memset(s, 0, sizeof(*s));
    s->engine = engine;
    s->tx = tx_buf;
    s->tx_cap = tx_cap;
    s->max_payload = tx_cap - HIL_FRAME_OVERHEAD;
    size_t rx_payload = rx_cap - HIL_FRAME_OVERHEAD;
    hil_rx_init(&s->rx, rx_buf, rx_cap, rx_payload < s->max_payload ? rx_payload : s->max_payload,
                gap_ms);
    hil_reply_attach(s);
    hil_platform_set_fault_hook(hil_send_fault);

    hil_error_t err = {0};
    if (engine->init(&err) != 0) {
        hil_log(HIL_LOG_ERROR, "engine %s failed to start: %s", engine->name, err.text);
        return 1;
    }
    hil_log(HIL_LOG_INFO, "runner ready: engine %s, max payload %u", engine->name,
            (unsigned)s->max_payload);
    for (;;) {
        hil_frame_t frame;
        switch (hil_rx_next(&s->rx, &frame, 1000)) {
        case HIL_RX_FRAME:
            handle(s, &frame);
            break;
        case HIL_RX_CORRUPT:
            if (!(frame.type & HIL_REPLY)) {
                hil_send_nak(frame.type, frame.seq);
            }
            break;
        case HIL_RX_IDLE:
            break;
        case HIL_RX_CLOSED:
            hil_platform_log(HIL_LOG_INFO, "link closed; runner exits");
            hil_reply_attach(NULL);
            return 0;
        }
    }
}
