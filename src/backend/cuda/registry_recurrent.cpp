// CUDA kernels of the recurrent family: LSTM and GRU (see kernel_registry.hpp).
#include "backend/cuda/cuda_op_kernel.hpp"
#include "backend/cuda/kernel_registry.hpp"

namespace loom::backend::cuda {

std::unique_ptr<OpKernel> create_gru_kernel(const KernelSpec& spec, CudaBackend& backend);  // gru.cpp

void register_recurrent_kernels(CudaKernelRegistry& registry) {
  registry.add("LSTM", create_lstm_kernel);
  registry.add("GRU", create_gru_kernel);
}

}  // namespace loom::backend::cuda
