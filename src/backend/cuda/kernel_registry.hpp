// The CUDA backend's op → kernel-factory table. The ops of the first release are listed in
// cuda_backend.cpp; each op family then registers (or replaces) its entries from its own file.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>

#include "backend/backend.hpp"

namespace loom::backend::cuda {

class CudaBackend;
using KernelFactory = std::unique_ptr<OpKernel> (*)(const KernelSpec&, CudaBackend&);
using KernelTable = std::map<std::string, KernelFactory, std::less<>>;

void register_elementwise_kernels(KernelTable& table);  // registry_elementwise.cpp
void register_conv_kernels(KernelTable& table);         // registry_conv.cpp
void register_reduce_kernels(KernelTable& table);       // registry_reduce.cpp
void register_shape_kernels(KernelTable& table);        // registry_shape.cpp
void register_recurrent_kernels(KernelTable& table);    // registry_recurrent.cpp (also MatMul/Gemm)

}  // namespace loom::backend::cuda
