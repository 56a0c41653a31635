/* The SHA-256 of a model as it is received.
 *
 * Where the platform has threads (posix), the hashing runs on a worker while the link keeps
 * receiving: it was the largest cost on the transfer's critical path, and the runner's one
 * thread spent it between reads. Elsewhere (bare metal) it runs inline. Bytes handed to
 * hil_digest_add must stay where they are until hil_digest_finish (they are the model pool),
 * and only bytes that passed their frame's CRC are handed over, in order. */
#ifndef HIL_DIGEST_H
#define HIL_DIGEST_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

void hil_digest_begin(void); /* also ends a digest that was never finished */
void hil_digest_add(const uint8_t *data, size_t len);
void hil_digest_finish(uint8_t digest[32]);

#ifdef __cplusplus
}
#endif

#endif
