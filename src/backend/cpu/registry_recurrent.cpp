// CPU kernels of the recurrent family added for ONNX models (see kernel_registry.hpp).
#include "backend/cpu/gru.hpp"
#include "backend/cpu/kernel_registry.hpp"

namespace loom::backend::cpu {

void register_recurrent_kernels(KernelTable& table) { table["GRU"] = make_gru_kernel; }

}  // namespace loom::backend::cpu
