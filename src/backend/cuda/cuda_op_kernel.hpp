// The base of every CUDA op kernel and the helpers their constructors share. Constructors parse
// attributes and validate shapes and dtypes (throwing Error(unsupported|shape_mismatch)), so that
// launch() only enqueues work.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include <library_types.h>

#include "backend/backend.hpp"
#include "backend/cuda/cuda_backend.hpp"

namespace loom::backend::cuda {

// run_impl is fixed: make the stream's device current, launch, then check the launch error once
// for the whole op (kernels themselves do not check), naming the node on failure.
class CudaOpKernel : public OpKernel {
 public:
  using OpKernel::OpKernel;

 protected:
  // Enqueues the op on `stream`. inputs[i] is nullptr for an absent optional input, likewise
  // outputs. Library calls (cuBLAS, cuDNN, cudaMemcpyAsync) are checked where they are made.
  virtual void launch(std::span<const void* const> inputs, std::span<void* const> outputs, void* workspace,
                      CudaStream& stream) = 0;

 private:
  void run_impl(std::span<const void* const> inputs, std::span<void* const> outputs, void* workspace,
                Stream& stream) final;
};

// One factory per op family, each in the .cpp named after it. Called with a DeviceGuard held.
std::unique_ptr<OpKernel> create_matmul_kernel(const KernelSpec& spec, CudaBackend& backend);     // gemm.cpp
std::unique_ptr<OpKernel> create_gemm_kernel(const KernelSpec& spec, CudaBackend& backend);       // gemm.cpp
std::unique_ptr<OpKernel> create_conv_kernel(const KernelSpec& spec, CudaBackend& backend);       // conv.cpp
std::unique_ptr<OpKernel> create_batchnorm_kernel(const KernelSpec& spec, CudaBackend& backend);  // batchnorm.cpp
std::unique_ptr<OpKernel> create_unary_kernel(const KernelSpec& spec, CudaBackend& backend);      // elementwise.cpp
std::unique_ptr<OpKernel> create_binary_kernel(const KernelSpec& spec, CudaBackend& backend);     // elementwise.cpp
std::unique_ptr<OpKernel> create_pool_kernel(const KernelSpec& spec, CudaBackend& backend);       // pool.cpp
std::unique_ptr<OpKernel> create_global_average_pool_kernel(const KernelSpec& spec, CudaBackend& backend);  // pool.cpp
std::unique_ptr<OpKernel> create_softmax_kernel(const KernelSpec& spec, CudaBackend& backend);    // softmax.cpp
std::unique_ptr<OpKernel> create_layernorm_kernel(const KernelSpec& spec, CudaBackend& backend);  // layernorm.cpp
std::unique_ptr<OpKernel> create_reshape_kernel(const KernelSpec& spec,
                                                CudaBackend& backend);  // reshape.cpp (also Flatten)
std::unique_ptr<OpKernel> create_transpose_kernel(const KernelSpec& spec, CudaBackend& backend);  // transpose.cpp
std::unique_ptr<OpKernel> create_concat_kernel(const KernelSpec& spec, CudaBackend& backend);     // concat.cpp
std::unique_ptr<OpKernel> create_gather_kernel(const KernelSpec& spec, CudaBackend& backend);     // gather.cpp
std::unique_ptr<OpKernel> create_lstm_kernel(const KernelSpec& spec, CudaBackend& backend);       // lstm.cpp

// --- helpers for kernel constructors ---

// True for the dtypes CUDA kernels compute float ops in.
inline bool is_compute_float(DType dtype) noexcept { return dtype == DType::f32 || dtype == DType::f16; }

// Whether optional input/output `index` exists in the spec (ONNX lets trailing ones be left off).
bool has_input(const KernelSpec& spec, std::size_t index) noexcept;
bool has_output(const KernelSpec& spec, std::size_t index) noexcept;

// Throws unsupported/shape_mismatch when the spec has fewer than `min` or more than `max` inputs
// or outputs, or when one of the first `min` is absent.
void require_arity(const KernelSpec& spec, std::size_t min_inputs, std::size_t max_inputs, std::size_t min_outputs,
                   std::size_t max_outputs);

// The dtype of input 0 when it is f32 or f16, checked equal on the listed inputs and on output 0;
// throws Error(unsupported) otherwise (bf16 included: it is a storage type only here).
DType require_float_dtype(const KernelSpec& spec, std::initializer_list<std::size_t> same_dtype_inputs);

// `axis` in [-rank, rank) made non-negative; throws Error(shape_mismatch) when out of range.
std::size_t normalize_axis(const KernelSpec& spec, std::int64_t axis, std::size_t rank);

// Throws Error(shape_mismatch) when output `index` does not have `expected` shape.
void require_output_shape(const KernelSpec& spec, std::size_t index, const Shape& expected);

// Product of dims [begin, end).
std::int64_t product(const Shape& shape, std::size_t begin, std::size_t end);

// Workspace carving: sizes rounded up to 256 bytes so each piece keeps cudaMalloc's alignment.
inline std::size_t align_bytes(std::size_t bytes) noexcept { return (bytes + 255) / 256 * 256; }

// The cuBLAS / library type for a compute dtype (f32, f16).
cudaDataType_t cuda_data_type(DType dtype);

}  // namespace loom::backend::cuda
