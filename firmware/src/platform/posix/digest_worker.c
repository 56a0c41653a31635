/* hil_digest_* on a worker thread (see digest.h): hil_digest_add queues a range and returns;
 * the worker hashes ranges in order; begin and finish wait until it has caught up. */
#include <pthread.h>

#include "../../protocol/digest.h"
#include "../../protocol/sha256.h"

#define SLOTS 64

static struct {
    pthread_mutex_t lock;
    pthread_cond_t work;    /* a range was queued */
    pthread_cond_t settled; /* a range was hashed */
    const uint8_t *data[SLOTS];
    size_t len[SLOTS];
    size_t head;
    size_t count; /* queued, including the one being hashed */
    int started;
    int live;
    pthread_t thread;
    hil_sha256_t ctx;
} D = {.lock = PTHREAD_MUTEX_INITIALIZER,
       .work = PTHREAD_COND_INITIALIZER,
       .settled = PTHREAD_COND_INITIALIZER};

static void *hash_ranges(void *unused) {
    (void)unused;
    pthread_mutex_lock(&D.lock);
    for (;;) {
        while (D.count == 0) pthread_cond_wait(&D.work, &D.lock);
        const uint8_t *data = D.data[D.head];
        size_t len = D.len[D.head];
        pthread_mutex_unlock(&D.lock);
        hil_sha256_update(&D.ctx, data, len); /* nobody else touches ctx while count > 0 */
        pthread_mutex_lock(&D.lock);
        D.head = (D.head + 1) % SLOTS;
        D.count--;
        pthread_cond_broadcast(&D.settled);
    }
    return NULL;
}

/* Caller holds the lock. */
static void wait_caught_up(void) {
    while (D.count > 0) pthread_cond_wait(&D.settled, &D.lock);
}

void hil_digest_begin(void) {
    pthread_mutex_lock(&D.lock);
    if (!D.started) {
        D.started = pthread_create(&D.thread, NULL, hash_ranges, NULL) == 0;
    }
    wait_caught_up();
    uint8_t unused[32];
    if (D.live) hil_sha256_final(&D.ctx, unused);
    hil_sha256_init(&D.ctx);
    D.live = 1;
    pthread_mutex_unlock(&D.lock);
}

void hil_digest_add(const uint8_t *data, size_t len) {
    pthread_mutex_lock(&D.lock);
    if (!D.started) { /* no thread could be made: hash here */
        hil_sha256_update(&D.ctx, data, len);
        pthread_mutex_unlock(&D.lock);
        return;
    }
    while (D.count == SLOTS) pthread_cond_wait(&D.settled, &D.lock);
    size_t tail = (D.head + D.count) % SLOTS;
    D.data[tail] = data;
    D.len[tail] = len;
    D.count++;
    pthread_cond_signal(&D.work);
    pthread_mutex_unlock(&D.lock);
}

void hil_digest_finish(uint8_t digest[32]) {
    pthread_mutex_lock(&D.lock);
    wait_caught_up();
    hil_sha256_final(&D.ctx, digest);
    D.live = 0;
    pthread_mutex_unlock(&D.lock);
}
