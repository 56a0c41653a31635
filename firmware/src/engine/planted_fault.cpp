/* Tests only (-DHIL_PLANTED_FAULT=aten::add.out): one operator's kernel made wrong on purpose,
 * as a broken kernel port or compiler flag would make it. The registered kernel is wrapped: it
 * computes with its first float input's first element off by one (put back afterwards). The
 * wrong value is made inside the registered function, where ExecuTorch's generated wrapper
 * logs the kernel's output to the ETDump, as a broken kernel's would be: perturbing the output
 * after it returned would not be seen there. hil's tests use such a runner to prove that the
 * device's own ETDump names the operator, while a re-run of the same program on the host's
 * runtime calls it correct. Never in a runner built for a device. */
#include <cstring>

#include <executorch/runtime/kernel/operator_registry.h>

#include "../protocol/reply.h" /* hil_log */
#include "../platform/platform.h"

namespace {

using executorch::aten::ScalarType;
using executorch::runtime::EValue;
using executorch::runtime::Kernel;
using executorch::runtime::KernelRuntimeContext;
using executorch::runtime::OpFunction;
using executorch::runtime::Span;

OpFunction g_right = nullptr;

void wrong(KernelRuntimeContext &context, Span<EValue *> stack) {
    float *first = nullptr;
    for (size_t i = 0; i + 1 < stack.size() && first == nullptr; i++) {
        if (stack[i]->isTensor() && stack[i]->toTensor().scalar_type() == ScalarType::Float &&
            stack[i]->toTensor().numel() > 0) {
            first = stack[i]->toTensor().mutable_data_ptr<float>();
        }
    }
    const float kept = first != nullptr ? first[0] : 0.0f;
    if (first != nullptr) first[0] += 1.0f;
    g_right(context, stack);
    EValue *out = stack[stack.size() - 1];
    bool in_place = out->isTensor() && out->toTensor().const_data_ptr() == first;
    if (first != nullptr && !in_place) first[0] = kept;
}

}  // namespace

extern "C" void hil_plant_fault(void) {
    Span<const Kernel> kernels = executorch::runtime::get_registered_kernels();
    for (const Kernel &kernel : kernels) {
        if (std::strcmp(kernel.name_, HIL_PLANTED_FAULT) != 0) continue;
        /* the registry's table is plain static storage; only a test build writes into it */
        Kernel &planted = const_cast<Kernel &>(kernel);
        g_right = planted.op_;
        planted.op_ = wrong;
        hil_log(HIL_LOG_WARN, "planted fault: %s is wrong on purpose (float input element 0 + 1)",
                HIL_PLANTED_FAULT);
        return;
    }
    hil_log(HIL_LOG_ERROR, "planted fault: no kernel %s is registered", HIL_PLANTED_FAULT);
}
