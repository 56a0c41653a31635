/* The echo engine: a model is any bytes, each input comes back as the output of the same
 * index. It exercises everything a real engine run needs from the link (chunked transfer,
 * hash check, inputs, the timing loop, outputs) with no runtime at all, so a new board's
 * UART, clock and memory map can be brought up before ExecuTorch is built for it. */
#include <string.h>

#include "../platform/platform.h"
#include "engine.h"

typedef struct {
    hil_tensor_desc_t desc;
    uint8_t *in;
    uint8_t *out;
    uint64_t capacity;
} echo_tensor_t;

static struct {
    size_t model_size;
    size_t io_used;
    size_t io_peak;
    size_t count;
    echo_tensor_t tensors[HIL_MAX_TENSORS];
} echo;

static const char *echo_version(void) { return "none (echo engine)"; }

static int echo_init(hil_error_t *err) {
    (void)err;
    memset(&echo, 0, sizeof(echo));
    return 0;
}

static uint8_t *echo_model_buffer(size_t *capacity) {
    hil_pool_t pool = hil_platform_pool(HIL_POOL_MODEL);
    *capacity = pool.size;
    return pool.base;
}

static void echo_unload(void) {
    memset(&echo, 0, sizeof(echo));
}

static int echo_load(size_t size, hil_error_t *err) {
    (void)err;
    echo_unload();
    echo.model_size = size;
    return 0;
}

static size_t echo_count(void) { return echo.count; }

static int echo_input_desc(size_t index, hil_tensor_desc_t *out) {
    if (index >= echo.count) return -1;
    *out = echo.tensors[index].desc;
    return 0;
}

static uint8_t *echo_input_buffer(size_t index, const hil_tensor_desc_t *desc, hil_error_t *err) {
    hil_pool_t pool = hil_platform_pool(HIL_POOL_IO);
    echo_tensor_t *t = &echo.tensors[index];
    if (t->in == NULL || t->capacity < desc->nbytes) {
        size_t need = (size_t)(2 * ((desc->nbytes + 15u) & ~(uint64_t)15u));
        if (need > pool.size - echo.io_used) {
            hil_error_set(err, 10 /* OUT_OF_MEMORY */, need, pool.size - echo.io_used,
                          "input %u needs %u bytes of the io pool, %u are free", (unsigned)index,
                          (unsigned)need, (unsigned)(pool.size - echo.io_used));
            return NULL;
        }
        t->in = pool.base + echo.io_used;
        t->out = t->in + need / 2;
        t->capacity = need / 2;
        echo.io_used += need;
        if (echo.io_used > echo.io_peak) echo.io_peak = echo.io_used;
    }
    t->desc = *desc;
    if (index + 1 > echo.count) echo.count = index + 1;
    return t->in;
}

static int echo_execute(hil_error_t *err) {
    (void)err;
    for (size_t i = 0; i < echo.count; i++) {
        echo_tensor_t *t = &echo.tensors[i];
        if (t->in != NULL) memcpy(t->out, t->in, (size_t)t->desc.nbytes);
    }
    return 0;
}

static int echo_output(size_t index, hil_tensor_desc_t *desc, const uint8_t **data) {
    if (index >= echo.count || echo.tensors[index].out == NULL) return -1;
    *desc = echo.tensors[index].desc;
    *data = echo.tensors[index].out;
    return 0;
}

static size_t echo_pool_stats(hil_pool_stat_t *out, size_t max) {
    if (max < 2) return 0;
    out[0].name = "model";
    out[0].size = hil_platform_pool(HIL_POOL_MODEL).size;
    out[0].peak = echo.model_size;
    out[1].name = "io";
    out[1].size = hil_platform_pool(HIL_POOL_IO).size;
    out[1].peak = echo.io_peak;
    return 2;
}

const hil_engine_t hil_echo_engine = {
    "echo", 0 /* HIL_ENGINE_ECHO */, echo_version, echo_init, echo_model_buffer, echo_load,
    echo_unload, echo_count, echo_count, echo_input_desc, echo_input_buffer, echo_execute,
    echo_output, echo_pool_stats, NULL, NULL, NULL, /* no ETDump: nothing to trace */
    "",                                            /* no kernels, none planted */
};
