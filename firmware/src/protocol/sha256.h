/* SHA-256, the identity of a model: the runner verifies a loaded model against the hash the
 * host announced, and reports the hash it holds so an unchanged model is never sent again. */
#ifndef HIL_SHA256_H
#define HIL_SHA256_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    uint32_t state[8];
    uint64_t length; /* bytes hashed so far */
    uint8_t block[64];
    size_t fill;
    void *accel; /* an accelerated context where one is available (HIL_HAVE_OPENSSL) */
} hil_sha256_t;

void hil_sha256_init(hil_sha256_t *ctx);
void hil_sha256_update(hil_sha256_t *ctx, const void *data, size_t len);
void hil_sha256_final(hil_sha256_t *ctx, uint8_t digest[32]);

#ifdef HIL_SHA256_BLOCKS_ACCEL
/* Hash whole 64-byte blocks with the CPU's SHA-256 instructions; 0 (nothing done) when the
 * CPU has none. sha256_armv8.c, aarch64 Linux builds. */
int hil_sha256_blocks_accel(uint32_t state[8], const uint8_t *data, size_t blocks);
#endif

#ifdef __cplusplus
}
#endif

#endif
