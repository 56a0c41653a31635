/* Replies, errors and the runner's own frames (reply.h). */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "../platform/platform.h"
#include "codec.h"
#include "frame.h"
#include "reply.h"
#include "state.h"

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

void hil_reply_attach(hil_server_t *s) { g_server = s; }

uint8_t *hil_reply_payload(hil_server_t *s) { return s->tx + HIL_HEADER_SIZE; }

hil_writer_t hil_reply_writer(hil_server_t *s) {
    hil_writer_t w = {hil_reply_payload(s), 0, s->max_payload, 0};
    return w;
}

void hil_reply(hil_server_t *s, uint8_t type, uint32_t len) {
    s->tx_len = hil_frame_seal(s->tx, type, s->current_seq, len);
    (void)hil_link_write(s->tx, s->tx_len);
}

void hil_write_desc(hil_writer_t *w, const hil_tensor_desc_t *d) {
    hil_wr_u8(w, d->dtype);
    hil_wr_u8(w, d->ndim);
    for (uint8_t i = 0; i < d->ndim; i++) {
        hil_wr_u32(w, (uint32_t)d->dims[i]);
    }
    hil_wr_bytes(w, d->dim_order, d->ndim);
    hil_wr_u64(w, d->nbytes);
}

void hil_reply_error(hil_server_t *s, const hil_error_t *err) {
    uint8_t *p = hil_reply_payload(s);
    size_t text = strnlen(err->text, sizeof(err->text));
    hil_put_u16(p, err->code);
    hil_put_u16(p + 2, 0);
    hil_put_u64(p + 4, err->a);
    hil_put_u64(p + 12, err->b);
    hil_put_u16(p + 20, (uint16_t)text);
    memcpy(p + 22, err->text, text);
    hil_log(HIL_LOG_WARN, "refused request 0x%02x: %s", s->last_type, err->text);
    hil_reply(s, HIL_MSG_ERROR, (uint32_t)(22 + text));
}

/* The one formatter behind both error setters: engines fill an error, handlers refuse. */
static void error_vset(hil_error_t *err, uint16_t code, uint64_t a, uint64_t b, const char *fmt,
                       va_list args) {
    err->code = code;
    err->a = a;
    err->b = b;
    vsnprintf(err->text, sizeof(err->text), fmt, args);
}

void hil_error_set(hil_error_t *err, uint16_t code, uint64_t a, uint64_t b, const char *fmt, ...) {
    va_list args;
    va_start(args, fmt);
    error_vset(err, code, a, b, fmt, args);
    va_end(args);
}

void hil_refuse(hil_server_t *s, uint16_t code, uint64_t a, uint64_t b, const char *fmt, ...) {
    hil_error_t err;
    va_list args;
    va_start(args, fmt);
    error_vset(&err, code, a, b, fmt, args);
    va_end(args);
    hil_reply_error(s, &err);
}

void hil_send_progress(hil_server_t *s, uint32_t done) {
    uint8_t payload[4];
    hil_put_u32(payload, done);
    send_aux(aux_frame, HIL_MSG_PROGRESS, s->current_seq, payload, sizeof(payload));
}

void hil_send_nak(uint8_t type, uint16_t seq) { send_aux(aux_frame, HIL_MSG_NAK, seq, &type, 1); }

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

/* Runs in the fault handler, so it uses its own buffer and nothing that allocates. */
void hil_send_fault(const hil_fault_t *fault) {
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
