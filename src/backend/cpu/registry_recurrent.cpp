// CPU kernels of the recurrent family added for ONNX models (see kernel_registry.hpp).
#include "backend/cpu/kernel_registry.hpp"

namespace loom::backend::cpu {

void register_recurrent_kernels(KernelTable&) {}

}  // namespace loom::backend::cpu
