// Launchers for the pointwise ops: Relu, Sigmoid, Tanh, Gelu, and Add/Mul with numpy broadcasting.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "loom/tensor.hpp"

namespace loom::kernels {

enum class UnaryOp { relu, sigmoid, tanh, gelu_erf, gelu_tanh };

// y[i] = op(x[i]) for i < n. dtype f32 or f16; f16 is computed in f32. x may equal y.
void launch_unary(UnaryOp op, const void* x, void* y, DType dtype, std::size_t n, cudaStream_t stream);

enum class BinaryOp { add, mul };

inline constexpr int kMaxBroadcastRank = 8;

// The output's dims and, per input, the element stride along each output dim (0 where that input
// is broadcast). Host code builds it (coalesced) from the ONNX shapes.
struct BroadcastLayout {
  int rank = 0;
  std::int64_t dims[kMaxBroadcastRank] = {};
  std::int64_t a_strides[kMaxBroadcastRank] = {};
  std::int64_t b_strides[kMaxBroadcastRank] = {};
};

// c = a op b, elementwise over `layout`. dtype f32, f16, i32 or i64. `same_shape` selects the flat
// fast path (both inputs dense with the output's shape).
void launch_binary(BinaryOp op, const void* a, const void* b, void* c, DType dtype,
                   const BroadcastLayout& layout, bool same_shape, cudaStream_t stream);

}  // namespace loom::kernels
