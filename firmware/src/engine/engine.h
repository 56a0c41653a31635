/* The engine layer: what runs a model. Two implementations share this interface:
 *   executorch_engine.cpp  the ExecuTorch runtime (program, method, memory pools);
 *   echo_engine.c          a diagnostic engine whose outputs are its inputs, for bringing up
 *                          the link of a new board before ExecuTorch is built for it.
 * The protocol layer only moves bytes into and out of the buffers an engine hands out. */
#ifndef HIL_ENGINE_H
#define HIL_ENGINE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define HIL_MAX_DIMS 8
#define HIL_MAX_TENSORS 16

/* dtype codes are ExecuTorch's ScalarType numbers (6 = float32, 4 = int64, ...). */
typedef struct {
    uint8_t dtype;
    uint8_t ndim;
    int32_t dims[HIL_MAX_DIMS];
    uint8_t dim_order[HIL_MAX_DIMS]; /* memory order of the dims, outermost first */
    uint64_t nbytes;
} hil_tensor_desc_t;

/* Why an engine call failed: a protocol error code, two numbers the host puts in its
 * message (sizes, indices) and a line of text. */
typedef struct {
    uint16_t code;
    uint64_t a;
    uint64_t b;
    char text[200];
} hil_error_t;

typedef struct {
    const char *name;
    uint64_t size;
    uint64_t peak;
} hil_pool_stat_t;

typedef struct hil_engine {
    const char *name;
    uint8_t id; /* HIL_ENGINE_* */
    const char *(*runtime_version)(void);
    int (*init)(hil_error_t *err);
    /* Where model bytes are received, and how many fit. */
    uint8_t *(*model_buffer)(size_t *capacity);
    /* Make the `size` bytes in the model buffer runnable. */
    int (*load)(size_t size, hil_error_t *err);
    void (*unload)(void);
    size_t (*num_inputs)(void);
    size_t (*num_outputs)(void);
    int (*input_desc)(size_t index, hil_tensor_desc_t *out);
    /* A buffer for input `index` shaped as `desc` (NULL and err filled if it cannot be). */
    uint8_t *(*input_buffer)(size_t index, const hil_tensor_desc_t *desc, hil_error_t *err);
    /* One timed run: bind the inputs and execute. */
    int (*execute)(hil_error_t *err);
    int (*output)(size_t index, hil_tensor_desc_t *desc, const uint8_t **data);
    size_t (*pool_stats)(hil_pool_stat_t *out, size_t max);
    /* ExecuTorch's ETDump, for an explaining run apart from the judged ones (NULL in builds
     * without it). trace_begin loads the held model again with the ETDump recorder attached,
     * and with debug_bytes > 0 every intermediate output kept in a debug buffer of that size
     * (carved from the model pool behind the model); the host sets the inputs again.
     * trace_part hands out what the runs since recorded: HIL_TRACE_ETDUMP or HIL_TRACE_DEBUG.
     * trace_end loads the model again without the recorder, as the judged runs had it. */
    int (*trace_begin)(uint64_t debug_bytes, hil_error_t *err);
    int (*trace_part)(uint8_t part, const uint8_t **data, size_t *size, hil_error_t *err);
    int (*trace_end)(hil_error_t *err);
    /* The operator whose kernel this build gets wrong on purpose (HIL_PLANTED_FAULT, hil's
     * own tests only), "" in every other build. The engine says it, not the build's options:
     * only the engine that plants it runs with it, and HELLO must tell the host what runs. */
    const char *planted_fault;
} hil_engine_t;

enum { HIL_TRACE_ETDUMP = 0, HIL_TRACE_DEBUG = 1 };

extern const hil_engine_t hil_echo_engine;
#ifdef HIL_WITH_EXECUTORCH
extern const hil_engine_t hil_executorch_engine;
#endif

void hil_error_set(hil_error_t *err, uint16_t code, uint64_t a, uint64_t b, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 5, 6)))
#endif
    ;

#ifdef __cplusplus
}
#endif

#endif
