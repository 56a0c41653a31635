/* How a handler answers: exactly one reply or ERROR frame per request, built in place in the
 * server's reply buffer (kept whole, so the loop can send a repeated request the same bytes).
 * Besides replies, the runner sends frames of its own from separate buffers: LOG (hil_log,
 * used by every layer, engines and platforms too), PROGRESS, NAK and FAULT. */
#ifndef HIL_REPLY_H
#define HIL_REPLY_H

#include <stddef.h>
#include <stdint.h>

#include "../engine/engine.h"
#include "../platform/platform.h"
#include "codec.h"
#include "state.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The server whose link carries LOG, PROGRESS and FAULT frames; NULL: hil_log logs locally. */
void hil_reply_attach(hil_server_t *s);

/* The reply under construction: write the payload here (or through a writer), then send it. */
uint8_t *hil_reply_payload(hil_server_t *s);
hil_writer_t hil_reply_writer(hil_server_t *s);
void hil_reply(hil_server_t *s, uint8_t type, uint32_t len);
/* A tensor as replies describe it: dtype, ndim, dims, dim_order, nbytes. */
void hil_write_desc(hil_writer_t *w, const hil_tensor_desc_t *d);

/* Refuse the request with an ERROR frame: an error the engine filled in, or one formatted here
 * (hil_error_set in engine.h fills one without sending it). */
void hil_reply_error(hil_server_t *s, const hil_error_t *err);
void hil_refuse(hil_server_t *s, uint16_t code, uint64_t a, uint64_t b, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 5, 6)))
#endif
    ;

/* The request being handled is still alive: `done` runs (RUN) or MiB read (LOAD_FILE). */
void hil_send_progress(hil_server_t *s, uint32_t done);
/* A request of `type` arrived corrupted: the host sends it again. */
void hil_send_nak(uint8_t type, uint16_t seq);
/* The platform's fault hook: the fault as a FAULT frame, sent at once from the handler. */
void hil_send_fault(const hil_fault_t *fault);

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
