/* The request loop and the frames the server sends. Commands live in commands.c. */
#include "server.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "../platform/platform.h"
#include "crc32.h"

#define AUX_CAP 320u   /* LOG, PROGRESS and NAK frames: never the reply buffer */
#define LINE_CAP 256u

static hil_server_t *g_server; /* for hil_log() and the fault hook, which have no context */
static uint8_t aux_frame[AUX_CAP];
static uint8_t fault_frame[512]; /* separate: a fault may interrupt a send from aux_frame */

static void send_aux(uint8_t *frame, uint8_t type, uint16_t seq, const void *payload, uint32_t len) {
    memcpy(frame + HIL_HEADER_SIZE, payload, len);
    size_t total = hil_frame_seal(frame, type, seq, len);
    (void)hil_link_write(frame, total);
}

uint8_t *hil_server_payload(hil_server_t *s) { return s->tx + HIL_HEADER_SIZE; }

void hil_server_reply(hil_server_t *s, uint8_t type, uint32_t len) {
    s->tx_len = hil_frame_seal(s->tx, type, s->current_seq, len);
    (void)hil_link_write(s->tx, s->tx_len);
}

void hil_server_error(hil_server_t *s, const hil_error_t *err) {
    uint8_t *p = hil_server_payload(s);
    size_t text = strnlen(err->text, sizeof(err->text));
    hil_put_u16(p, err->code);
    hil_put_u16(p + 2, 0);
    hil_put_u64(p + 4, err->a);
    hil_put_u64(p + 12, err->b);
    hil_put_u16(p + 20, (uint16_t)text);
    memcpy(p + 22, err->text, text);
    hil_log(HIL_LOG_WARN, "refused request 0x%02x: %s", s->last_type, err->text);
    hil_server_reply(s, HIL_MSG_ERROR, (uint32_t)(22 + text));
}

void hil_server_progress(hil_server_t *s, uint32_t runs_done) {
    uint8_t payload[4];
    hil_put_u32(payload, runs_done);
    send_aux(aux_frame, HIL_MSG_PROGRESS, s->current_seq, payload, sizeof(payload));
}

void hil_log(int level, const char *fmt, ...) {
    char line[LINE_CAP];
    va_list args;
    va_start(args, fmt);
    int n = vsnprintf(line + 1, sizeof(line) - 1, fmt, args);
    va_end(args);
    if (n < 0) {
        return;
    }
    size_t len = (size_t)n < sizeof(line) - 2 ? (size_t)n : sizeof(line) - 2;
    hil_platform_log(level, line + 1);
    if (g_server != NULL) {
        line[0] = (char)level;
        send_aux(aux_frame, HIL_MSG_LOG, 0, line, (uint32_t)(len + 1));
    }
}

/* Encode a fault as a FAULT frame and send it right away; runs in the fault handler, so it
 * uses its own buffer and nothing that allocates. */
static void report_fault(const hil_fault_t *fault) {
    uint8_t *p = fault_frame + HIL_HEADER_SIZE;
    size_t cap = sizeof(fault_frame) - HIL_FRAME_OVERHEAD;
    size_t n = 0;
    size_t kind = strlen(fault->kind);
    p[n++] = 1;
    p[n++] = (uint8_t)kind;
    memcpy(p + n, fault->kind, kind);
    n += kind;
    size_t count_at = n++;
    uint8_t count = 0;
    for (size_t i = 0; i < fault->count; i++) {
        size_t name = strlen(fault->fields[i].name);
        if (n + 1 + name + 8 > cap) {
            break;
        }
        p[n++] = (uint8_t)name;
        memcpy(p + n, fault->fields[i].name, name);
        n += name;
        hil_put_u64(p + n, fault->fields[i].value);
        n += 8;
        count++;
    }
    p[count_at] = count;
    size_t total = hil_frame_seal(fault_frame, HIL_MSG_FAULT, g_server ? g_server->current_seq : 0,
                                  (uint32_t)n);
    (void)hil_link_write(fault_frame, total);
}

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
    hil_server_dispatch(s, frame);
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
    g_server = s;
    hil_platform_set_fault_hook(report_fault);

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
                uint8_t type = frame.type;
                send_aux(aux_frame, HIL_MSG_NAK, frame.seq, &type, 1);
            }
            break;
        case HIL_RX_IDLE:
            break;
        case HIL_RX_CLOSED:
            hil_platform_log(HIL_LOG_INFO, "link closed; runner exits");
            g_server = NULL;
            return 0;
        }
    }
}
