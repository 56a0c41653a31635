/* Bounds-checked reading and writing of little-endian payload fields. A reader that runs off
 * the end of a request marks itself bad instead of reading past it; the command then answers
 * BAD_REQUEST. */
#ifndef HIL_CODEC_H
#define HIL_CODEC_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "wire.h"

typedef struct {
    const uint8_t *p;
    size_t left;
    int bad;
} hil_reader_t;

typedef struct {
    uint8_t *p;
    size_t used;
    size_t cap;
    int full;
} hil_writer_t;

static inline const uint8_t *hil_rd_take(hil_reader_t *r, size_t n) {
    if (r->bad || r->left < n) {
        r->bad = 1;
        return NULL;
    }
    const uint8_t *at = r->p;
    r->p += n;
    r->left -= n;
    return at;
}
static inline uint8_t hil_rd_u8(hil_reader_t *r) {
    const uint8_t *p = hil_rd_take(r, 1);
    return p ? p[0] : 0;
}
static inline uint16_t hil_rd_u16(hil_reader_t *r) {
    const uint8_t *p = hil_rd_take(r, 2);
    return p ? hil_get_u16(p) : 0;
}
static inline uint32_t hil_rd_u32(hil_reader_t *r) {
    const uint8_t *p = hil_rd_take(r, 4);
    return p ? hil_get_u32(p) : 0;
}
static inline uint64_t hil_rd_u64(hil_reader_t *r) {
    const uint8_t *p = hil_rd_take(r, 8);
    return p ? hil_get_u64(p) : 0;
}

static inline uint8_t *hil_wr_take(hil_writer_t *w, size_t n) {
    if (w->full || w->cap - w->used < n) {
        w->full = 1;
        return NULL;
    }
    uint8_t *at = w->p + w->used;
    w->used += n;
    return at;
}
static inline void hil_wr_u8(hil_writer_t *w, uint8_t v) {
    uint8_t *p = hil_wr_take(w, 1);
    if (p) p[0] = v;
}
static inline void hil_wr_u16(hil_writer_t *w, uint16_t v) {
    uint8_t *p = hil_wr_take(w, 2);
    if (p) hil_put_u16(p, v);
}
static inline void hil_wr_u32(hil_writer_t *w, uint32_t v) {
    uint8_t *p = hil_wr_take(w, 4);
    if (p) hil_put_u32(p, v);
}
static inline void hil_wr_u64(hil_writer_t *w, uint64_t v) {
    uint8_t *p = hil_wr_take(w, 8);
    if (p) hil_put_u64(p, v);
}
static inline void hil_wr_bytes(hil_writer_t *w, const void *data, size_t n) {
    uint8_t *p = hil_wr_take(w, n);
    if (p && n) memcpy(p, data, n);
}
/* A short string: one length byte, then the bytes (cut at 255). */
static inline void hil_wr_str8(hil_writer_t *w, const char *s) {
    size_t n = strlen(s);
    if (n > 255) n = 255;
    hil_wr_u8(w, (uint8_t)n);
    hil_wr_bytes(w, s, n);
}

#endif
