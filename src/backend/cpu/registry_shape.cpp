// CPU kernels of the shape family added for ONNX models (see kernel_registry.hpp).
#include "backend/cpu/kernel_registry.hpp"

namespace loom::backend::cpu {

void register_shape_kernels(KernelTable&) {}

}  // namespace loom::backend::cpu
