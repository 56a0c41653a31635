/* SHA-256 as specified in FIPS 180-4. The portable version runs everywhere (Cortex-M
 * included); a host build that found OpenSSL uses its SHA extensions instead, because a
 * model transfer over a pty moves about 100 MB/s and the portable hash would eat a fifth of
 * that. */
#include "sha256.h"

#include <string.h>

#ifdef HIL_HAVE_OPENSSL
#include <openssl/evp.h>

void hil_sha256_init(hil_sha256_t *ctx) {
    memset(ctx, 0, sizeof(*ctx));
    EVP_MD_CTX *md = EVP_MD_CTX_new();
    EVP_DigestInit_ex(md, EVP_sha256(), NULL);
    ctx->accel = md;
}

void hil_sha256_update(hil_sha256_t *ctx, const void *data, size_t len) {
    EVP_DigestUpdate((EVP_MD_CTX *)ctx->accel, data, len);
    ctx->length += len;
}

void hil_sha256_final(hil_sha256_t *ctx, uint8_t digest[32]) {
    unsigned int size = 32;
    EVP_DigestFinal_ex((EVP_MD_CTX *)ctx->accel, digest, &size);
    EVP_MD_CTX_free((EVP_MD_CTX *)ctx->accel);
    ctx->accel = NULL;
}

#else

#include "sha256_constants.h"

static inline uint32_t rotr(uint32_t x, unsigned n) { return (x >> n) | (x << (32u - n)); }

static void compress(uint32_t state[8], const uint8_t *block) {
    uint32_t w[64];
    for (int i = 0; i < 16; i++) {
        w[i] = (uint32_t)block[4 * i] << 24 | (uint32_t)block[4 * i + 1] << 16 |
               (uint32_t)block[4 * i + 2] << 8 | (uint32_t)block[4 * i + 3];
    }
    for (int i = 16; i < 64; i++) {
        uint32_t s0 = rotr(w[i - 15], 7) ^ rotr(w[i - 15], 18) ^ (w[i - 15] >> 3);
        uint32_t s1 = rotr(w[i - 2], 17) ^ rotr(w[i - 2], 19) ^ (w[i - 2] >> 10);
        w[i] = w[i - 16] + s0 + w[i - 7] + s1;
    }
    uint32_t a = state[0], b = state[1], c = state[2], d = state[3];
    uint32_t e = state[4], f = state[5], g = state[6], h = state[7];
    for (int i = 0; i < 64; i++) {
        uint32_t t1 = h + (rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25)) + ((e & f) ^ (~e & g)) +
                      hil_sha256_k[i] + w[i];
        uint32_t t2 = (rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22)) + ((a & b) ^ (a & c) ^ (b & c));
        h = g;
        g = f;
        f = e;
        e = d + t1;
        d = c;
        c = b;
        b = a;
        a = t1 + t2;
    }
    state[0] += a;
    state[1] += b;
    state[2] += c;
    state[3] += d;
    state[4] += e;
    state[5] += f;
    state[6] += g;
    state[7] += h;
}

void hil_sha256_init(hil_sha256_t *ctx) {
    static const uint32_t initial[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                                        0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
    memset(ctx, 0, sizeof(*ctx));
    memcpy(ctx->state, initial, sizeof(initial));
}

void hil_sha256_update(hil_sha256_t *ctx, const void *data, size_t len) {
    const uint8_t *p = (const uint8_t *)data;
    ctx->length += len;
    if (ctx->fill > 0) {
        size_t take = 64 - ctx->fill < len ? 64 - ctx->fill : len;
        memcpy(ctx->block + ctx->fill, p, take);
        ctx->fill += take;
        p += take;
        len -= take;
        if (ctx->fill < 64) {
            return;
        }
        compress(ctx->state, ctx->block);
        ctx->fill = 0;
    }
#ifdef HIL_SHA256_BLOCKS_ACCEL
    if (len >= 64 && hil_sha256_blocks_accel(ctx->state, p, len / 64)) {
        p += len / 64 * 64;
        len %= 64;
    }
#endif
    while (len >= 64) {
        compress(ctx->state, p);
        p += 64;
        len -= 64;
    }
    memcpy(ctx->block, p, len);
    ctx->fill = len;
}

void hil_sha256_final(hil_sha256_t *ctx, uint8_t digest[32]) {
    uint64_t bits = ctx->length * 8u;
    ctx->block[ctx->fill++] = 0x80;
    if (ctx->fill > 56) {
        memset(ctx->block + ctx->fill, 0, 64 - ctx->fill);
        compress(ctx->state, ctx->block);
        ctx->fill = 0;
    }
    memset(ctx->block + ctx->fill, 0, 56 - ctx->fill);
    for (int i = 0; i < 8; i++) {
        ctx->block[56 + i] = (uint8_t)(bits >> (56 - 8 * i));
    }
    compress(ctx->state, ctx->block);
    for (int i = 0; i < 8; i++) {
        digest[4 * i] = (uint8_t)(ctx->state[i] >> 24);
        digest[4 * i + 1] = (uint8_t)(ctx->state[i] >> 16);
        digest[4 * i + 2] = (uint8_t)(ctx->state[i] >> 8);
        digest[4 * i + 3] = (uint8_t)ctx->state[i];
    }
}

#endif
