// CUDA kernels of the recurrent family added for ONNX models (see kernel_registry.hpp).
#include "backend/cuda/kernel_registry.hpp"

namespace loom::backend::cuda {

std::unique_ptr<OpKernel> create_gru_kernel(const KernelSpec& spec, CudaBackend& backend);  // gru.cpp

void register_recurrent_kernels(KernelTable& table) { table["GRU"] = create_gru_kernel; }

}  // namespace loom::backend::cuda
