/* The ExecuTorch engine: a .pte received into the model pool becomes a Program (read in place
 * through the engine's own loader over that pool, no copy), its "forward" method is loaded with allocators carved
 * from the platform's pools, and each run binds the inputs and executes.
 *
 * Every allocator records its high-water mark, which the host reads as the model's memory
 * use per pool. Inputs are bound with set_input() before every execute(): memory planning may
 * reuse an input's buffer for activations, so a bound input does not survive a run. */
#include <cinttypes>
#include <cstring>
#include <new>

#include <executorch/runtime/core/data_loader.h>
#include <executorch/runtime/core/freeable_buffer.h>
#include <executorch/runtime/core/hierarchical_allocator.h>
#include <executorch/runtime/core/memory_allocator.h>
#include <executorch/runtime/executor/memory_manager.h>
#include <executorch/runtime/executor/method.h>
#include <executorch/runtime/executor/program.h>
#include <executorch/runtime/platform/platform.h>
#include <executorch/runtime/platform/runtime.h>
#ifdef HIL_WITH_ETDUMP
#include <cstdlib>

#include <executorch/devtools/etdump/etdump_flatcc.h>
#endif

#include "../platform/platform.h"
#include "../protocol/reply.h" /* hil_log */
#include "../protocol/wire.h"
#include "engine.h"

#ifndef HIL_EXECUTORCH_VERSION
#define HIL_EXECUTORCH_VERSION "unknown"
#endif
#ifndef HIL_MAX_PLANNED_BUFFERS
#define HIL_MAX_PLANNED_BUFFERS 16
#endif
/* The ETDump builder's own buffer, carved from the model pool (0: it grows on the heap, as on
 * posix; a bare-metal build sets a size, its flatcc builder then never calls malloc). */
#ifndef HIL_ETDUMP_BUILDER_BYTES
#define HIL_ETDUMP_BUILDER_BYTES 0
#endif
/* ETDumpGen asserts (aborts) on a static builder buffer of 128 KiB + 256 bytes or less
 * (measured on ExecuTorch 1.5: "minimum size of 131328"). */
static_assert(HIL_ETDUMP_BUILDER_BYTES == 0 || HIL_ETDUMP_BUILDER_BYTES > 131328,
              "HIL_ETDUMP_BUILDER_BYTES: ExecuTorch's ETDump builder needs more than 131328 bytes");

namespace {

using executorch::aten::ScalarType;
using executorch::aten::Tensor;
using executorch::aten::TensorImpl;
using executorch::runtime::DataLoader;
using executorch::runtime::Error;
using executorch::runtime::EventTracer;
using executorch::runtime::FreeableBuffer;
using executorch::runtime::EValue;
using executorch::runtime::HierarchicalAllocator;
using executorch::runtime::MemoryAllocator;
using executorch::runtime::MemoryManager;
using executorch::runtime::Method;
using executorch::runtime::MethodMeta;
using executorch::runtime::Program;
using executorch::runtime::Result;
using executorch::runtime::Span;

/* printf's %lu on every target: size_t and uint64_t differ in width between them. */
inline unsigned long UL(uint64_t v) { return static_cast<unsigned long>(v); }

/* Storage for an object built later and destroyed early, without heap or exceptions. */
template <typename T>
class Slot {
 public:
    template <typename... Args>
    T &emplace(Args &&...args) {
        reset();
        T *object = new (storage_) T(static_cast<Args &&>(args)...);
        live_ = true;
        return *object;
    }
    void reset() {
        if (live_) get().~T();
        live_ = false;
    }
    T &get() { return *reinterpret_cast<T *>(storage_); }
    bool live() const { return live_; }

 private:
    alignas(T) unsigned char storage_[sizeof(T)];
    bool live_ = false;
};

/* The program's bytes where they were received: every segment is a view into the model pool,
 * nothing is copied or freed (the pool outlives the program). A bare-metal ExecuTorch
 * install need not carry the data-loader extension for this. */
class PoolDataLoader final : public DataLoader {
 public:
    PoolDataLoader(const uint8_t *data, size_t size) : data_(data), size_(size) {}
    Result<FreeableBuffer> load(size_t offset, size_t size, const SegmentInfo &) const override {
        if (offset > size_ || size > size_ - offset) return Error::InvalidArgument;
        return FreeableBuffer(data_ + offset, size, nullptr);
    }
    Error load_into(size_t offset, size_t size, const SegmentInfo &, void *buffer) const override {
        if (buffer == nullptr || offset > size_ || size > size_ - offset) return Error::InvalidArgument;
        std::memcpy(buffer, data_ + offset, size);
        return Error::Ok;
    }
    Result<size_t> size() const override { return size_; }

 private:
    const uint8_t *data_;
    size_t size_;
};

/* A bump allocator over one platform pool that remembers its peak and its last refusal. */
class PoolAllocator : public MemoryAllocator {
 public:
    PoolAllocator(const hil_pool_t &pool)
        : MemoryAllocator(static_cast<uint32_t>(pool.size > UINT32_MAX ? UINT32_MAX : pool.size),
                          pool.base) {}
    void *allocate(size_t size, size_t alignment = kDefaultAlignment) override {
        void *p = MemoryAllocator::allocate(size, alignment);
        if (p == nullptr) {
            refused_ = size;
        } else if (used_size() > peak_) {
            peak_ = used_size();
        }
        return p;
    }
    size_t peak() const { return peak_; }
    size_t refused() const { return refused_; }

 private:
    size_t peak_ = 0;
    size_t refused_ = 0;
};

struct Input {
    uint8_t *data;
    size_t capacity;
    hil_tensor_desc_t desc;
    TensorImpl::SizesType sizes[HIL_MAX_DIMS];
    TensorImpl::DimOrderType dim_order[HIL_MAX_DIMS];
    TensorImpl::StridesType strides[HIL_MAX_DIMS];
};

#ifdef HIL_WITH_ETDUMP
/* An explaining run's recorder: the ETDump of the runs since trace_begin, and the debug buffer
 * its intermediate outputs are written to (in the model pool, behind the model). */
struct Trace {
    Slot<executorch::etdump::ETDumpGen> recorder;
    bool active = false;
    bool finished = false; /* the ETDump was taken from the builder (result below) */
    executorch::etdump::ETDumpResult result = {nullptr, 0};
    uint8_t *debug = nullptr;
};
#endif

struct State {
    size_t model_size = 0;
    Slot<PoolDataLoader> loader;
    Slot<Program> program;
    Slot<PoolAllocator> method_pool;
    Slot<PoolAllocator> temp_pool;
    Slot<HierarchicalAllocator> planned;
    Slot<MemoryManager> memory;
    Slot<Method> method;
    Span<uint8_t> planned_spans[HIL_MAX_PLANNED_BUFFERS];
    size_t planned_used = 0;
    size_t io_used = 0;
    size_t num_inputs = 0;
    size_t num_outputs = 0;
    Input inputs[HIL_MAX_TENSORS];
    Slot<TensorImpl> input_impls[HIL_MAX_TENSORS];
    /* peaks of the previous method survive its unload until the next load */
    size_t method_peak = 0;
    size_t temp_peak = 0;
    /* the operator load_method could not find a kernel for, from its log line */
    char missing_op[96] = "";
    long missing_index = -1;
#ifdef HIL_WITH_ETDUMP
    Trace trace;
#endif
};

State *g_state;
alignas(State) unsigned char g_state_storage[sizeof(State)];

/* ExecuTorch names an operator it has no kernel for only in its log ("Missing operator:
 * [index] name"); the engine keeps the name for the typed error load_method's failure gets. */
void note_missing_operator(const char *message, size_t length) {
    static const char prefix[] = "Missing operator: [";
    const size_t n = sizeof(prefix) - 1;
    if (g_state == nullptr || length <= n || std::strncmp(message, prefix, n) != 0) return;
    size_t i = n;
    long index = 0;
    while (i < length && message[i] >= '0' && message[i] <= '9') index = index * 10 + (message[i++] - '0');
    if (i + 2 > length || message[i] != ']' || message[i + 1] != ' ') return;
    i += 2;
    size_t name_len = length - i;
    while (name_len > 0 && (message[i + name_len - 1] == '\n' || message[i + name_len - 1] == '\r')) name_len--;
    if (name_len >= sizeof(g_state->missing_op)) name_len = sizeof(g_state->missing_op) - 1;
    std::memcpy(g_state->missing_op, message + i, name_len);
    g_state->missing_op[name_len] = '\0';
    g_state->missing_index = index;
}

et_timestamp_t pal_ticks() { return hil_clock_ticks(); }

et_tick_ratio_t pal_ticks_to_ns() {
    /* ticks * numerator / denominator = ns; clock_hz ticks a second */
    uint64_t hz = hil_clock_hz();
    return {1000000000u, hz == 0 ? 1u : hz};
}

void forward_log(et_timestamp_t, et_pal_log_level_t level, const char *file, const char *,
                 size_t line, const char *message, size_t length) {
    note_missing_operator(message, length);
    int ours = level == kError || level == kFatal ? HIL_LOG_ERROR
               : level == kInfo                   ? HIL_LOG_INFO
                                                  : HIL_LOG_DEBUG;
    while (length > 0 && (message[length - 1] == '\n' || message[length - 1] == '\r')) length--;
    const char *base = std::strrchr(file, '/');
    hil_log(ours, "executorch %s:%u: %.*s", base ? base + 1 : file, static_cast<unsigned>(line),
            static_cast<int>(length), message);
}

uint8_t *take(size_t &used, const hil_pool_t &pool, size_t size) {
    size_t start = (used + 63u) & ~static_cast<size_t>(63u);
    if (pool.base == nullptr || start > pool.size || size > pool.size - start) return nullptr;
    used = start + size;
    return pool.base + start;
}

void describe(hil_tensor_desc_t *out, ScalarType type, Span<const int32_t> sizes,
              Span<const uint8_t> order, size_t nbytes) {
    std::memset(out, 0, sizeof(*out));
    out->dtype = static_cast<uint8_t>(type);
    out->ndim = static_cast<uint8_t>(sizes.size() > HIL_MAX_DIMS ? HIL_MAX_DIMS : sizes.size());
    for (size_t i = 0; i < out->ndim; i++) {
        out->dims[i] = sizes[i];
        out->dim_order[i] = i < order.size() ? order[i] : static_cast<uint8_t>(i);
    }
    out->nbytes = nbytes;
}

const char *et_version() { return HIL_EXECUTORCH_VERSION; }

}  // namespace

#ifdef HIL_PLANTED_FAULT
extern "C" void hil_plant_fault(void); /* planted_fault.cpp: test builds only */
#define HIL_ET_PLANTED HIL_PLANTED_FAULT
#else
#define HIL_ET_PLANTED ""
#endif

namespace {

int et_init(hil_error_t *) {
    executorch::runtime::runtime_init();
    g_state = new (g_state_storage) State();
    executorch::runtime::register_pal(executorch::runtime::PalImpl::create(
        nullptr, nullptr, pal_ticks, pal_ticks_to_ns, forward_log, nullptr, nullptr, __FILE__));
#ifdef HIL_PLANTED_FAULT
    hil_plant_fault();
#endif
    return 0;
}

uint8_t *et_model_buffer(size_t *capacity) {
    hil_pool_t pool = hil_platform_pool(HIL_POOL_MODEL);
    *capacity = pool.size;
    return pool.base;
}

/* The method and program go, the model's bytes stay in the pool (a trace reloads them). */
void unload_program() {
    State &s = *g_state;
    for (auto &impl : s.input_impls) impl.reset();
    s.method.reset();
    s.memory.reset();
    s.planned.reset();
    if (s.method_pool.live()) s.method_peak = s.method_pool.get().peak();
    if (s.temp_pool.live()) s.temp_peak = s.temp_pool.get().peak();
    s.method_pool.reset();
    s.temp_pool.reset();
    s.program.reset();
    s.loader.reset();
    s.planned_used = s.io_used = 0;
    s.num_inputs = s.num_outputs = 0;
    s.model_size = 0;
}

/* load_method found no kernel for an operator: name it, and where kernels come from. */
int fail_missing_operator(State &s, hil_error_t *err) {
    const char *name = s.missing_op[0] ? s.missing_op : "(unnamed: see the runner's log)";
    hil_error_set(err, HIL_ERR_MISSING_OPERATOR, static_cast<uint64_t>(s.missing_index < 0 ? 0 : s.missing_index), 0,
                  "missing operator %s: this runner's ExecuTorch (%s) has no kernel for it", name,
                  HIL_EXECUTORCH_VERSION);
    unload_program();
    return -1;
}

int fail(hil_error_t *err, uint16_t code, uint64_t a, uint64_t b, const char *what, Error e) {
    hil_error_set(err, code, a, b, "%s: %s (ExecuTorch error 0x%x)", what,
                  executorch::runtime::to_string(e), static_cast<unsigned>(e));
    unload_program();
    return -1;
}

int plan_memory(State &s, const MethodMeta &meta, hil_error_t *err) {
    hil_pool_t pool = hil_platform_pool(HIL_POOL_PLANNED);
    size_t n = meta.num_memory_planned_buffers();
    if (n > HIL_MAX_PLANNED_BUFFERS) {
        hil_error_set(err, HIL_ERR_LOAD_FAILED, n, HIL_MAX_PLANNED_BUFFERS,
                      "the method has %u memory-planned buffers, this runner handles %u",
                      static_cast<unsigned>(n), HIL_MAX_PLANNED_BUFFERS);
        return -1;
    }
    size_t needed = 0;
    for (size_t i = 0; i < n; i++) needed += static_cast<size_t>(meta.memory_planned_buffer_size(i).get()) + 64u;
    for (size_t i = 0; i < n; i++) {
        size_t size = static_cast<size_t>(meta.memory_planned_buffer_size(i).get());
        uint8_t *buffer = take(s.planned_used, pool, size);
        if (buffer == nullptr) {
            hil_error_set(err, HIL_ERR_OUT_OF_MEMORY, needed, pool.size,
                          "memory-planned buffers need %lu bytes, the planned pool has %lu",
                          UL(needed), UL(pool.size));
            return -1;
        }
        s.planned_spans[i] = Span<uint8_t>(buffer, size);
    }
    s.planned.emplace(Span<Span<uint8_t>>(s.planned_spans, n));
    return 0;
}

int prepare_inputs(State &s, const MethodMeta &meta, hil_error_t *err) {
    hil_pool_t io = hil_platform_pool(HIL_POOL_IO);
    s.num_inputs = meta.num_inputs();
    s.num_outputs = meta.num_outputs();
    if (s.num_inputs > HIL_MAX_TENSORS || s.num_outputs > HIL_MAX_TENSORS) {
        hil_error_set(err, HIL_ERR_LOAD_FAILED, s.num_inputs, s.num_outputs,
                      "the method has %lu inputs and %lu outputs; this runner handles %d each",
                      UL(s.num_inputs), UL(s.num_outputs), HIL_MAX_TENSORS);
        return -1;
    }
    for (size_t i = 0; i < s.num_inputs; i++) {
        auto info = meta.input_tensor_meta(i);
        if (!info.ok()) {
            hil_error_set(err, HIL_ERR_LOAD_FAILED, i, 0,
                          "input %lu is not a tensor; the runner feeds tensors only", UL(i));
            return -1;
        }
        Input &in = s.inputs[i];
        describe(&in.desc, info->scalar_type(), info->sizes(), info->dim_order(), info->nbytes());
        in.capacity = info->nbytes();
        in.data = take(s.io_used, io, in.capacity);
        if (in.data == nullptr) {
            hil_error_set(err, HIL_ERR_OUT_OF_MEMORY, s.io_used + in.capacity, io.size,
                          "inputs need %lu bytes, the io pool has %lu", UL(s.io_used + in.capacity),
                          UL(io.size));
            return -1;
        }
    }
    return 0;
}

/* The `size` model bytes in the pool made runnable, with `tracer` attached (or none). */
int load_program(size_t size, EventTracer *tracer, hil_error_t *err) {
    unload_program();
    State &s = *g_state;
    size_t capacity = 0;
    uint8_t *model = et_model_buffer(&capacity);
    s.loader.emplace(model, size);
    Result<Program> program = Program::load(&s.loader.get());
    if (!program.ok()) {
        return fail(err, HIL_ERR_LOAD_FAILED, size, 0, "not a loadable .pte", program.error());
    }
    s.program.emplace(static_cast<Program &&>(program.get()));
    /* "forward" when the program has it (every export does), else its first method. */
    const char *name = "forward";
    if (!s.program.get().method_meta(name).ok()) {
        Result<const char *> first = s.program.get().get_method_name(0);
        if (!first.ok()) return fail(err, HIL_ERR_LOAD_FAILED, 0, 0, "the program has no method", first.error());
        name = first.get();
    }
    Result<MethodMeta> meta = s.program.get().method_meta(name);
    if (!meta.ok()) return fail(err, HIL_ERR_LOAD_FAILED, 0, 0, "method metadata", meta.error());
    if (plan_memory(s, meta.get(), err) != 0 || prepare_inputs(s, meta.get(), err) != 0) {
        unload_program();
        return -1;
    }
    s.missing_op[0] = '\0';
    s.missing_index = -1;
    s.method_pool.emplace(hil_platform_pool(HIL_POOL_METHOD));
    s.temp_pool.emplace(hil_platform_pool(HIL_POOL_TEMP));
    s.memory.emplace(&s.method_pool.get(), &s.planned.get(), &s.temp_pool.get());
    Result<Method> method = s.program.get().load_method(name, &s.memory.get(), tracer);
    if (!method.ok()) {
        if (method.error() == Error::MemoryAllocationFailed) {
            size_t refused = s.method_pool.get().refused();
            return fail(err, HIL_ERR_OUT_OF_MEMORY, refused, s.method_pool.get().size(),
                        "the method allocator ran out of its pool", method.error());
        }
        if (method.error() == Error::OperatorMissing) return fail_missing_operator(s, err);
        return fail(err, HIL_ERR_LOAD_FAILED, 0, 0, "load_method failed", method.error());
    }
    s.method.emplace(static_cast<Method &&>(method.get()));
    s.model_size = size;
    return 0;
}

#ifdef HIL_WITH_ETDUMP
void trace_drop(State &s) {
    Trace &t = s.trace;
    if (t.finished && HIL_ETDUMP_BUILDER_BYTES == 0) std::free(t.result.buf);  /* heap-built */
    t.recorder.reset();
    t.active = t.finished = false;
    t.result = {nullptr, 0};
    t.debug = nullptr;
}
#else
void trace_drop(State &) {}
#endif

int et_load(size_t size, hil_error_t *err) {
    trace_drop(*g_state);
    return load_program(size, nullptr, err);
}

void et_unload() {
    trace_drop(*g_state);
    unload_program();
}

#ifdef HIL_WITH_ETDUMP
using executorch::etdump::ETDumpGen;

/* After a failed traced load the runner keeps holding the model, as the judged runs had it. */
int reload_plain(State &s, size_t size) {
    hil_error_t ignored = {};
    trace_drop(s);
    return load_program(size, nullptr, &ignored);
}

int et_trace_begin(uint64_t debug_bytes, hil_error_t *err) {
    State &s = *g_state;
    const size_t size = s.model_size;
    if (size == 0 || !s.method.live()) {
        hil_error_set(err, HIL_ERR_NO_MODEL, 0, 0, "TRACE before a model was loaded");
        return -1;
    }
    trace_drop(s);
    hil_pool_t pool = hil_platform_pool(HIL_POOL_MODEL);
    size_t used = size;
    uint8_t *builder = HIL_ETDUMP_BUILDER_BYTES > 0 ? take(used, pool, HIL_ETDUMP_BUILDER_BYTES) : nullptr;
    uint8_t *debug = debug_bytes > 0 ? take(used, pool, static_cast<size_t>(debug_bytes)) : nullptr;
    if ((HIL_ETDUMP_BUILDER_BYTES > 0 && builder == nullptr) || (debug_bytes > 0 && debug == nullptr)) {
        size_t free_bytes = pool.size > size ? pool.size - size : 0;
        hil_error_set(err, HIL_ERR_OUT_OF_MEMORY, debug_bytes + HIL_ETDUMP_BUILDER_BYTES, free_bytes,
                      "the ETDump needs %lu bytes behind the model, the model pool has %lu free",
                      UL(debug_bytes + HIL_ETDUMP_BUILDER_BYTES), UL(free_bytes));
        return -1;
    }
    Trace &t = s.trace;
    ETDumpGen &recorder = builder != nullptr
                              ? t.recorder.emplace(Span<uint8_t>(builder, static_cast<size_t>(HIL_ETDUMP_BUILDER_BYTES)))
                              : t.recorder.emplace();
    if (debug != nullptr) {
        if (!recorder.set_debug_buffer(Span<uint8_t>(debug, static_cast<size_t>(debug_bytes))).ok()) {
            hil_error_set(err, HIL_ERR_OUT_OF_MEMORY, debug_bytes, 0, "the ETDump refused the debug buffer");
            trace_drop(s);
            return -1;
        }
        recorder.set_event_tracer_debug_level(
            executorch::runtime::EventTracerDebugLogLevel::kIntermediateOutputs);
        t.debug = debug;
    }
    t.active = true;
    if (load_program(size, &recorder, err) != 0) {
        reload_plain(s, size);
        return -1;
    }
    hil_log(HIL_LOG_INFO, "trace: ETDump on%s", debug != nullptr ? ", with intermediate outputs" : "");
    return 0;
}

int et_trace_part(uint8_t part, const uint8_t **data, size_t *size, hil_error_t *err) {
    Trace &t = g_state->trace;
    if (!t.active) {
        hil_error_set(err, HIL_ERR_BAD_REQUEST, part, 0, "no trace: start one with TRACE first");
        return -1;
    }
    if (part == HIL_TRACE_ETDUMP) {
        if (!t.finished) {
            t.result = t.recorder.get().get_etdump_data();
            t.finished = true;
        }
        *data = static_cast<const uint8_t *>(t.result.buf);
        *size = t.result.size;
        return 0;
    }
    if (part == HIL_TRACE_DEBUG) {
        auto *sink = t.recorder.get().get_data_sink();
        *data = t.debug;
        *size = t.debug != nullptr && sink != nullptr ? sink->get_used_bytes() : 0;
        return 0;
    }
    hil_error_set(err, HIL_ERR_BAD_REQUEST, part, 0, "no trace part %u (0 ETDump, 1 debug buffer)",
                  static_cast<unsigned>(part));
    return -1;
}

int et_trace_end(hil_error_t *err) {
    State &s = *g_state;
    if (!s.trace.active) return 0;
    trace_drop(s);
    return load_program(s.model_size, nullptr, err);
}
#define HIL_ET_TRACE et_trace_begin, et_trace_part, et_trace_end
#else
#define HIL_ET_TRACE nullptr, nullptr, nullptr
#endif

size_t et_num_inputs() { return g_state->num_inputs; }
size_t et_num_outputs() { return g_state->num_outputs; }

int et_input_desc(size_t index, hil_tensor_desc_t *out) {
    if (index >= g_state->num_inputs) return -1;
    *out = g_state->inputs[index].desc;
    return 0;
}

uint8_t *et_input_buffer(size_t index, const hil_tensor_desc_t *desc, hil_error_t *err) {
    State &s = *g_state;
    if (index >= s.num_inputs) {
        hil_error_set(err, HIL_ERR_BAD_INPUT, index, s.num_inputs,
                      "input %lu: the model has %lu inputs", UL(index), UL(s.num_inputs));
        return nullptr;
    }
    Input &in = s.inputs[index];
    if (desc->dtype != in.desc.dtype || desc->nbytes > in.capacity || desc->ndim != in.desc.ndim) {
        hil_error_set(err, HIL_ERR_BAD_INPUT, desc->nbytes, in.capacity,
                      "input %lu: got dtype %u, %u dims, %lu bytes; the model takes dtype %u, "
                      "%u dims, %lu bytes",
                      UL(index), desc->dtype, desc->ndim, UL(desc->nbytes), in.desc.dtype,
                      in.desc.ndim, UL(in.capacity));
        return nullptr;
    }
    in.desc = *desc;
    /* Strides follow from the sizes and the memory order, innermost dimension first. */
    int64_t stride = 1;
    for (int k = static_cast<int>(desc->ndim) - 1; k >= 0; k--) {
        uint8_t d = desc->dim_order[k];
        in.strides[d] = static_cast<TensorImpl::StridesType>(stride);
        stride *= desc->dims[d];
    }
    for (size_t k = 0; k < desc->ndim; k++) {
        in.sizes[k] = desc->dims[k];
        in.dim_order[k] = desc->dim_order[k];
    }
    s.input_impls[index].emplace(static_cast<ScalarType>(desc->dtype), desc->ndim, in.sizes, in.data,
                                 in.dim_order, in.strides);
    return in.data;
}

int et_execute(hil_error_t *err) {
    State &s = *g_state;
    Method &method = s.method.get();
    for (size_t i = 0; i < s.num_inputs; i++) {
        if (!s.input_impls[i].live()) {
            hil_error_set(err, HIL_ERR_BAD_INPUT, i, 0, "input %lu was not set", UL(i));
            return -1;
        }
        Error e = method.set_input(EValue(Tensor(&s.input_impls[i].get())), i);
        if (e != Error::Ok) {
            hil_error_set(err, HIL_ERR_BAD_INPUT, i, static_cast<uint64_t>(e),
                          "set_input(%lu) refused: %s (ExecuTorch error 0x%x)", UL(i),
                          executorch::runtime::to_string(e), static_cast<unsigned>(e));
            return -1;
        }
    }
    Error e = method.execute();
    if (e != Error::Ok) {
        hil_error_set(err, HIL_ERR_RUN_FAILED, static_cast<uint64_t>(e), 0,
                      "execute() failed: %s (ExecuTorch error 0x%x)",
                      executorch::runtime::to_string(e), static_cast<unsigned>(e));
        return -1;
    }
    return 0;
}

int et_output(size_t index, hil_tensor_desc_t *desc, const uint8_t **data) {
    State &s = *g_state;
    if (!s.method.live() || index >= s.num_outputs) return -1;
    const EValue &value = s.method.get().get_output(index);
    if (!value.isTensor()) return -1;
    Tensor t = value.toTensor();
    describe(desc, t.scalar_type(), Span<const int32_t>(t.sizes().data(), t.sizes().size()),
             Span<const uint8_t>(t.dim_order().data(), t.dim_order().size()), t.nbytes());
    *data = static_cast<const uint8_t *>(t.const_data_ptr());
    return 0;
}

size_t et_pool_stats(hil_pool_stat_t *out, size_t max) {
    State &s = *g_state;
    if (max < HIL_POOL_COUNT) return 0;
    size_t method_peak = s.method_pool.live() ? s.method_pool.get().peak() : s.method_peak;
    size_t temp_peak = s.temp_pool.live() ? s.temp_pool.get().peak() : s.temp_peak;
    const char *names[HIL_POOL_COUNT] = {"model", "method", "planned", "temp", "io"};
    size_t peaks[HIL_POOL_COUNT] = {s.model_size, method_peak, s.planned_used, temp_peak, s.io_used};
    for (int i = 0; i < HIL_POOL_COUNT; i++) {
        out[i].name = names[i];
        out[i].size = hil_platform_pool(static_cast<hil_pool_id_t>(i)).size;
        out[i].peak = peaks[i];
    }
    return HIL_POOL_COUNT;
}

}  // namespace

extern "C" const hil_engine_t hil_executorch_engine = {
    "executorch",  HIL_ENGINE_EXECUTORCH, et_version,      et_init,    et_model_buffer,
    et_load,       et_unload,             et_num_inputs,   et_num_outputs, et_input_desc,
    et_input_buffer, et_execute,          et_output,       et_pool_stats,  HIL_ET_TRACE,
    HIL_ET_PLANTED,
};
