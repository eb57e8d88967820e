// Launchers for the pointwise math ops: unary activations and math, and the broadcasting binary
// ops (arithmetic, Min/Max, PRelu, comparison, logic, Pow). Float math runs in f32 whatever the
// storage (f32 or f16); integer math wraps on overflow as two's complement.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "loom/tensor.hpp"

namespace loom::kernels {

enum class UnaryOp {
  relu,
  sigmoid,
  tanh,
  gelu_erf,
  gelu_tanh,
  leaky_relu,    // alpha
  elu,           // alpha
  hard_sigmoid,  // alpha, beta
  hard_swish,
  erf,
  softplus,
  sqrt,
  reciprocal,
  exp,
  log,
  neg,
  abs,          // also i32, i64
  logical_not,  // bool only
};

// The float attributes some unary ops take (LeakyRelu/Elu alpha, HardSigmoid alpha and beta).
struct UnaryParams {
  float alpha = 0.0f;
  float beta = 0.0f;
};

// y[i] = op(x[i]) for i < n; x may equal y. dtype f32 or f16 for every op; i32 and i64 too for
// relu, neg and abs; bool (one byte) for logical_not.
void launch_unary(UnaryOp op, const void* x, void* y, DType dtype, std::size_t n, cudaStream_t stream,
                  UnaryParams params = {});

enum class BinaryOp {
  add,
  mul,
  sub,
  div,
  min,
  max,    // f32, f16, i32, i64; output as input
  prelu,  // f32, f16: a < 0 ? b * a : a
  equal,  // f32, f16, i32, i64, bool -> bool
  less,
  greater,
  less_equal,
  greater_equal,  // f32, f16, i32, i64 -> bool
  logical_and,
  logical_or,
  logical_xor,  // bool -> bool
};

inline constexpr int kMaxBroadcastRank = 8;

// The output's dims and, per input, the element stride along each output dim (0 where that input
// is broadcast). Host code builds it (coalesced) from the ONNX shapes.
struct BroadcastLayout {
  int rank = 0;
  std::int64_t dims[kMaxBroadcastRank] = {};
  std::int64_t a_strides[kMaxBroadcastRank] = {};
  std::int64_t b_strides[kMaxBroadcastRank] = {};
};

// c = a op b, elementwise over `layout`. `dtype` is the inputs' dtype (see BinaryOp for which);
// c is bool (one byte per element) for comparisons and logic, else `dtype`. `same_shape` selects
// the flat fast path (both inputs dense with the output's shape). c may alias a when a is dense
// with the output's shape (Min/Max fold into their output this way).
void launch_binary(BinaryOp op, const void* a, const void* b, void* c, DType dtype, const BroadcastLayout& layout,
                   bool same_shape, cudaStream_t stream);

// c = a ^ b over `layout`, c with a's dtype. a and b each f32, f16, i32 or i64. Float bases use
// powf; integer bases raise exactly by squaring an integer exponent (wrapping; negative exponents
// truncate 1/a^|b|) or truncate pow(double) of a float exponent, saturating.
void launch_pow(const void* a, DType a_dtype, const void* b, DType b_dtype, void* c, const BroadcastLayout& layout,
                cudaStream_t stream);

}  // namespace loom::kernels
