// CPU kernels of the reduce family added for ONNX models (see kernel_registry.hpp).
#include "backend/cpu/kernel_registry.hpp"

namespace loom::backend::cpu {

void register_reduce_kernels(KernelTable&) {}

}  // namespace loom::backend::cpu
