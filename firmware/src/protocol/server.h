/* The protocol server: receives requests, answers them through an engine, and keeps the
 * promises of PROTOCOL.md (a repeated request gets the same reply without running twice, a
 * corrupted request gets a NAK, every reply is one frame).
 *
 * protocol/ reads top-down; each file includes only the headers of the layers under it:
 *   server.c     the request loop (repeats, NAKs, engine start, fault hook)
 *   commands.c   the dispatch table: request type -> handler
 *   handlers.h   the handlers: info.c, load.c, load_file.c, run.c, trace.c
 *   held.c       the held model: its method on the wire, forgetting it
 *   reply.c      how a handler answers; LOG, PROGRESS, NAK and FAULT frames; hil_log
 *   state.h      the server's data (hil_server_t)
 *   frame, codec, wire, crc32, sha256, digest: framing, fields, checksums */
#ifndef HIL_SERVER_H
#define HIL_SERVER_H

#include <stddef.h>
#include <stdint.h>

#include "../engine/engine.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Serve until the link closes. `rx_buf`/`tx_buf` are the two frame buffers. */
int hil_server_run(const hil_engine_t *engine, uint8_t *rx_buf, size_t rx_cap, uint8_t *tx_buf,
                   size_t tx_cap, uint32_t gap_ms);

#ifdef __cplusplus
}
#endif

#endif
