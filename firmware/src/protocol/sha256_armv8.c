/* SHA-256 blocks with the Armv8 Cryptography Extension (the Pi 5's Cortex-A76 has it), for the
 * runner on aarch64 Linux: a model read from disk or received over the link is hashed about
 * five times faster than by the portable code (and under qemu-user too, whose helpers for
 * these instructions are native code). Chosen at run time from the kernel's HWCAP, so the
 * same runner still works on a CPU without the extension (the portable code takes over). */
#include <arm_neon.h>
#include <asm/hwcap.h>
#include <sys/auxv.h>

#include "sha256.h"

static const uint32_t K[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4,
    0xab1c5ed5, 0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe,
    0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f,
    0x4a7484aa, 0x5cb0a9dc, 0x76f988da, 0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7,
    0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc,
    0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b,
    0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070, 0x19a4c116,
    0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7,
    0xc67178f2,
};

static uint32x4_t load_words(const uint8_t *p) {
    return vreinterpretq_u32_u8(vrev32q_u8(vld1q_u8(p))); /* big-endian message words */
}

int hil_sha256_blocks_accel(uint32_t state[8], const uint8_t *data, size_t blocks) {
    static int available = -1;
    if (available < 0) available = (getauxval(AT_HWCAP) & HWCAP_SHA2) != 0;
    if (!available) return 0;
    uint32x4_t abcd = vld1q_u32(state), efgh = vld1q_u32(state + 4);
    for (; blocks > 0; blocks--, data += 64) {
        uint32x4_t abcd0 = abcd, efgh0 = efgh;
        uint32x4_t m0 = load_words(data), m1 = load_words(data + 16);
        uint32x4_t m2 = load_words(data + 32), m3 = load_words(data + 48);
        for (int group = 0; group < 16; group++) { /* four rounds each */
            uint32x4_t wk = vaddq_u32(m0, vld1q_u32(K + 4 * group));
            uint32x4_t before = abcd;
            abcd = vsha256hq_u32(abcd, efgh, wk);
            efgh = vsha256h2q_u32(efgh, before, wk);
            uint32x4_t next = group < 12 ? vsha256su1q_u32(vsha256su0q_u32(m0, m1), m2, m3) : m3;
            m0 = m1;
            m1 = m2;
            m2 = m3;
            m3 = next;
        }
        abcd = vaddq_u32(abcd, abcd0);
        efgh = vaddq_u32(efgh, efgh0);
    }
    vst1q_u32(state, abcd);
    vst1q_u32(state + 4, efgh);
    return 1;
}
