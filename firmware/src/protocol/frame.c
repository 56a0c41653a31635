/* Frame receiver and sealer. The receiver keeps one linear buffer and a start offset, so
 * skipping a garbage byte is an increment, and the buffer is compacted only when more bytes
 * must be read. A frame is returned in place (no copy); a frame whose header checks out but
 * whose CRC does not is reported with its seq, so the server can ask for it again at once. */
#include "frame.h"

#include <string.h>

#include "../platform/platform.h"
#include "crc32.h"

void hil_rx_init(hil_rx_t *rx, uint8_t *buf, size_t cap, size_t max_payload, uint32_t gap_ms) {
    memset(rx, 0, sizeof(*rx));
    rx->buf = buf;
    rx->cap = cap;
    rx->max_payload = max_payload;
    rx->gap_ms = gap_ms;
}

static int header_ok(const uint8_t *h, size_t max_payload) {
    uint16_t check = (uint16_t)hil_crc32(0, h, 10);
    return hil_get_u16(h + 10) == check && hil_get_u32(h + 6) <= max_payload;
}

/* Skip forward to the next candidate magic. */
static void skip(hil_rx_t *rx, size_t n) {
    rx->start += n;
    rx->garbage += n;
    const uint8_t *hit = rx->start < rx->fill
                             ? memchr(rx->buf + rx->start, HIL_MAGIC0, rx->fill - rx->start)
                             : NULL;
    size_t next = hit ? (size_t)(hit - rx->buf) : rx->fill;
    rx->garbage += next - rx->start;
    rx->start = next;
}

/* Look for a complete frame in the buffered bytes. Returns FRAME, CORRUPT, or IDLE when more
 * bytes are needed; *partial says whether a header-valid frame is waiting for its tail. */
static hil_rx_status_t scan(hil_rx_t *rx, hil_frame_t *frame, int *partial) {
    *partial = 0;
    while (rx->start < rx->fill) {
        uint8_t *p = rx->buf + rx->start;
        size_t avail = rx->fill - rx->start;
        if (p[0] != HIL_MAGIC0) {
            skip(rx, 0);
            continue;
        }
        if (avail < 2) {
            return HIL_RX_IDLE;
        }
        if (p[1] != HIL_MAGIC1) {
            skip(rx, 1);
            continue;
        }
        if (avail < HIL_HEADER_SIZE) {
            return HIL_RX_IDLE;
        }
        if (!header_ok(p, rx->max_payload)) {
            skip(rx, 1);
            continue;
        }
        uint32_t len = hil_get_u32(p + 6);
        size_t total = HIL_FRAME_OVERHEAD + (size_t)len;
        frame->type = p[2];
        frame->seq = hil_get_u16(p + 4);
        frame->len = len;
        frame->payload = p + HIL_HEADER_SIZE;
        if (avail < total) {
            *partial = 1;
            return HIL_RX_IDLE;
        }
        uint32_t crc = hil_crc32(0, p, HIL_HEADER_SIZE + len);
        if (crc != hil_get_u32(p + HIL_HEADER_SIZE + len)) {
            /* Resume the hunt just past this magic: a retransmission may start inside the
             * span this frame claimed, if bytes of it were lost on the way. */
            skip(rx, 1);
            return HIL_RX_CORRUPT;
        }
        rx->pending = total;
        return HIL_RX_FRAME;
    }
    return HIL_RX_IDLE;
}

hil_rx_status_t hil_rx_next(hil_rx_t *rx, hil_frame_t *frame, uint32_t idle_ms) {
    rx->start += rx->pending;
    rx->pending = 0;
    for (;;) {
        int partial = 0;
        hil_rx_status_t status = scan(rx, frame, &partial);
        if (status != HIL_RX_IDLE) {
            return status;
        }
        if (rx->start > 0) { /* compact before reading more */
            memmove(rx->buf, rx->buf + rx->start, rx->fill - rx->start);
            rx->fill -= rx->start;
            rx->start = 0;
        }
        int n = hil_link_read(rx->buf + rx->fill, rx->cap - rx->fill, partial ? rx->gap_ms : idle_ms);
        if (n < 0) {
            return HIL_RX_CLOSED;
        }
        if (n > 0) {
            rx->fill += (size_t)n;
            continue;
        }
        if (!partial) {
            return HIL_RX_IDLE;
        }
        /* The tail of a frame never came (bytes were dropped): give it up and say which
         * request it was, so the sender repeats it without waiting for its own timeout. */
        skip(rx, 1);
        return HIL_RX_CORRUPT;
    }
}

size_t hil_frame_seal(uint8_t *frame, uint8_t type, uint16_t seq, uint32_t len) {
    frame[0] = HIL_MAGIC0;
    frame[1] = HIL_MAGIC1;
    frame[2] = type;
    frame[3] = 0;
    hil_put_u16(frame + 4, seq);
    hil_put_u32(frame + 6, len);
    hil_put_u16(frame + 10, (uint16_t)hil_crc32(0, frame, 10));
    hil_put_u32(frame + HIL_HEADER_SIZE + len, hil_crc32(0, frame, HIL_HEADER_SIZE + len));
    return HIL_FRAME_OVERHEAD + len;
}
