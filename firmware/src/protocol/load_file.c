/* LOAD_FILE (PROTOCOL.md 1.1): make the runner hold the model in a file on its own disk.
 *
 *   request: sha256[32] | size u64 | path_len u16 | path (no NUL)
 *   reply:   held u8 (1: it held that model already, nothing was read) | method (as LOAD_END)
 *
 * The file is read into the model pool and hashed on the way; it is taken only when its size
 * and sha256 are the announced ones, so a stale or damaged copy on the disk is refused with
 * ERR_HASH_MISMATCH and the host copies it again. PROGRESS frames keep the host waiting while
 * a big model is read. */
#include <string.h>

#include "../platform/file.h"
#include "../platform/platform.h"
#include "codec.h"
#include "handlers.h"
#include "held.h"
#include "reply.h"
#include "sha256.h"
#include "state.h"

#define PATH_CAP 1024u
#define READ_STEP (4u << 20)

void hil_cmd_load_file(hil_server_t *s, hil_reader_t *r) {
    const uint8_t *hash = hil_rd_take(r, 32);
    uint64_t size = hil_rd_u64(r);
    uint16_t path_len = hil_rd_u16(r);
    const uint8_t *path_bytes = hil_rd_take(r, path_len);
    char path[PATH_CAP];
    if (r->bad || path_len == 0 || path_len >= PATH_CAP) {
        hil_refuse(s, HIL_ERR_BAD_REQUEST, path_len, PATH_CAP,
                   "LOAD_FILE needs a sha256, a size and a path shorter than %u bytes", PATH_CAP);
        return;
    }
    memcpy(path, path_bytes, path_len);
    path[path_len] = '\0';
    if (s->holds_model && memcmp(hash, s->held_hash, 32) == 0) {
        hil_reply_loaded(s, HIL_CMD_LOAD_FILE | HIL_REPLY, 1);
        return;
    }
    size_t capacity = 0;
    uint8_t *model = s->engine->model_buffer(&capacity);
    if (size > capacity || model == NULL) {
        hil_refuse(s, HIL_ERR_TOO_LARGE, size, capacity,
                   "model of %lu bytes does not fit the %lu-byte model pool", (unsigned long)size,
                   (unsigned long)capacity);
        return;
    }
    char why[128] = "";
    uint64_t on_disk = 0;
    int file = hil_file_open(path, &on_disk, why, sizeof(why));
    if (file < 0) {
        hil_refuse(s, HIL_ERR_LOAD_FAILED, 0, 0, "cannot open %s: %s", path, why);
        return;
    }
    if (on_disk != size) {
        hil_file_close(file);
        hil_refuse(s, HIL_ERR_HASH_MISMATCH, on_disk, size,
                   "%s holds %lu bytes, not the %lu announced", path, (unsigned long)on_disk,
                   (unsigned long)size);
        return;
    }
    hil_soft_reset(s); /* the model buffer is about to be overwritten */
    memset(s->held_hash, 0, sizeof(s->held_hash));
    hil_sha256_t sha;
    hil_sha256_init(&sha);
    uint64_t done = 0, hz = hil_clock_hz();
    uint64_t last_progress = hil_clock_ticks();
    while (done < size) {
        size_t step = size - done < READ_STEP ? (size_t)(size - done) : READ_STEP;
        long n = hil_file_read(file, model + done, step, why, sizeof(why));
        if (n <= 0) {
            hil_file_close(file);
            hil_refuse(s, HIL_ERR_LOAD_FAILED, done, size, "reading %s failed: %s", path,
                       n == 0 ? "the file ended early" : why);
            return;
        }
        hil_sha256_update(&sha, model + done, (size_t)n);
        done += (uint64_t)n;
        uint64_t now = hil_clock_ticks();
        if (now - last_progress >= hz / 4u) {
            hil_send_progress(s, (uint32_t)(done >> 20));
            last_progress = now;
        }
    }
    hil_file_close(file);
    uint8_t digest[32];
    hil_sha256_final(&sha, digest);
    if (memcmp(digest, hash, 32) != 0) {
        hil_refuse(s, HIL_ERR_HASH_MISMATCH, size, 0, "%s does not have the announced sha256",
                   path);
        return;
    }
    hil_error_t err = {0};
    if (s->engine->load((size_t)size, &err) != 0) {
        hil_reply_error(s, &err);
        return;
    }
    s->holds_model = 1;
    memcpy(s->held_hash, hash, 32);
    s->file_bytes += size;
    s->loads++;
    hil_log(HIL_LOG_INFO, "model loaded from %s (%lu bytes)", path, (unsigned long)size);
    hil_reply_loaded(s, HIL_CMD_LOAD_FILE | HIL_REPLY, 0);
}
