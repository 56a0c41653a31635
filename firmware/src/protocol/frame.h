/* Framing: turning a byte stream that may carry garbage, lost bytes or flipped bits into
 * whole, checked frames, and frames back into bytes.
 *
 *   offset  size  field
 *   0       2     magic A5 5A
 *   2       1     type
 *   3       1     flags (0)
 *   4       2     seq
 *   6       4     payload length
 *   10      2     low 16 bits of CRC-32 over bytes 0..9 (a header check, so a corrupted
 *                 length never makes the receiver wait for bytes that will not come)
 *   12      n     payload
 *   12+n    4     CRC-32 over bytes 0..12+n-1
 */
#ifndef HIL_FRAME_H
#define HIL_FRAME_H

#include <stddef.h>
#include <stdint.h>

#include "wire.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    uint8_t type;
    uint16_t seq;
    uint32_t len;
    const uint8_t *payload; /* valid until the next hil_rx_next() */
} hil_frame_t;

typedef enum {
    HIL_RX_FRAME,   /* a checked frame is in `frame` */
    HIL_RX_CORRUPT, /* a frame with a valid header failed its CRC; `frame` has type and seq */
    HIL_RX_IDLE,    /* nothing arrived within the wait */
    HIL_RX_CLOSED   /* the link is gone */
} hil_rx_status_t;

typedef struct {
    uint8_t *buf;
    size_t cap;
    size_t start; /* first unconsumed byte */
    size_t fill;  /* end of received bytes */
    size_t max_payload;
    uint32_t gap_ms;     /* a partial frame silent this long is given up */
    size_t pending;      /* bytes of the frame last returned, consumed on the next call */
    uint64_t garbage;    /* bytes skipped while hunting for a frame */
} hil_rx_t;

/* `buf` must hold at least max_payload + HIL_FRAME_OVERHEAD bytes. */
void hil_rx_init(hil_rx_t *rx, uint8_t *buf, size_t cap, size_t max_payload, uint32_t gap_ms);
hil_rx_status_t hil_rx_next(hil_rx_t *rx, hil_frame_t *frame, uint32_t idle_ms);

/* Fill in header and trailer around a payload already placed at frame + HIL_HEADER_SIZE.
 * Returns the frame's total size. */
size_t hil_frame_seal(uint8_t *frame, uint8_t type, uint16_t seq, uint32_t len);

#ifdef __cplusplus
}
#endif

#endif
