/* CRC-32, slicing-by-8: eight table lookups per 8 input bytes. Frames on the host link are
 * up to a megabyte and the check sits on the transfer's critical path, so the simple
 * byte-at-a-time loop (about 400 MB/s) would cost a visible share of pty throughput.
 * Where zlib is available (HIL_HAVE_ZLIB) its carry-less-multiply version is used instead. */
#include "crc32.h"

#ifdef HIL_HAVE_ZLIB
#include <zlib.h>

uint32_t hil_crc32(uint32_t crc, const void *data, size_t len) {
    const unsigned char *p = (const unsigned char *)data;
    /* zlib takes uInt lengths; feed very large buffers in pieces. */
    while (len > 0) {
        uInt piece = len > 0x40000000u ? 0x40000000u : (uInt)len;
        crc = (uint32_t)crc32((uLong)crc, p, piece);
        p += piece;
        len -= piece;
    }
    return crc;
}

#else

static uint32_t table[8][256];
static int table_ready;

static void build_table(void) {
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++) {
            c = (c & 1u) ? (c >> 1) ^ 0xEDB88320u : c >> 1;
        }
        table[0][i] = c;
    }
    for (uint32_t i = 0; i < 256; i++) {
        for (int t = 1; t < 8; t++) {
            table[t][i] = (table[t - 1][i] >> 8) ^ table[0][table[t - 1][i] & 0xFFu];
        }
    }
    table_ready = 1;
}

uint32_t hil_crc32(uint32_t crc, const void *data, size_t len) {
    const uint8_t *p = (const uint8_t *)data;
    if (!table_ready) {
        build_table();
    }
    crc = ~crc;
    while (len > 0 && ((uintptr_t)p & 3u) != 0) {
        crc = (crc >> 8) ^ table[0][(crc ^ *p++) & 0xFFu];
        len--;
    }
    while (len >= 8) {
        /* Assemble words byte by byte: correct on any endianness and alignment. */
        uint32_t lo = crc ^ ((uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
                             (uint32_t)p[3] << 24);
        uint32_t hi = (uint32_t)p[4] | (uint32_t)p[5] << 8 | (uint32_t)p[6] << 16 |
                      (uint32_t)p[7] << 24;
        crc = table[7][lo & 0xFFu] ^ table[6][(lo >> 8) & 0xFFu] ^ table[5][(lo >> 16) & 0xFFu] ^
              table[4][lo >> 24] ^ table[3][hi & 0xFFu] ^ table[2][(hi >> 8) & 0xFFu] ^
              table[1][(hi >> 16) & 0xFFu] ^ table[0][hi >> 24];
        p += 8;
        len -= 8;
    }
    while (len-- > 0) {
        crc = (crc >> 8) ^ table[0][(crc ^ *p++) & 0xFFu];
    }
    return ~crc;
}

#endif
