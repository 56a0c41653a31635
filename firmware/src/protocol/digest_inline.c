/* hil_digest_* computed inline (see digest.h). */
#include "digest.h"

#include "sha256.h"

static hil_sha256_t ctx;
static int live;

void hil_digest_begin(void) {
    uint8_t unused[32];
    if (live) hil_sha256_final(&ctx, unused);
    hil_sha256_init(&ctx);
    live = 1;
}

void hil_digest_add(const uint8_t *data, size_t len) { hil_sha256_update(&ctx, data, len); }

void hil_digest_finish(uint8_t digest[32]) {
    hil_sha256_final(&ctx, digest);
    live = 0;
}
