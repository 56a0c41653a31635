/* CRC-32 (IEEE 802.3, the polynomial of zlib and Python's zlib.crc32), used to check every
 * frame. */
#ifndef HIL_CRC32_H
#define HIL_CRC32_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Continue a CRC: start with crc = 0, feed pieces in order. */
uint32_t hil_crc32(uint32_t crc, const void *data, size_t len);

#ifdef __cplusplus
}
#endif

#endif
