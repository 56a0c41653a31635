/* SHA-256 blocks with the Armv8 Cryptography Extension (the Pi 5's Cortex-A76 has it), for the
 * runner on aarch64 Linux: a model read from disk or received over the link is hashed about
 * five times faster than by the portable code (and under qemu-user too, whose helpers for
 * these instructions are native code). Chosen at run time from the kernel's HWCAP, so the
 * same runner still works on a CPU without the extension (the portable code takes over). */
#include <arm_neon.h>
#include <asm/hwcap.h>
#include <sys/auxv.h>

#include "sha256.h"
#include "sha256_constants.h"

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
            uint32x4_t wk = vaddq_u32(m0, vld1q_u32(hil_sha256_k + 4 * group));
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
