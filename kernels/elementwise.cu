// Pointwise kernels: activations (f32/f16, computed in f32) and broadcasting Add/Mul.
#include "elementwise.cuh"

#include <type_traits>

#include "common.cuh"

namespace loom::kernels {
namespace {

template <UnaryOp Op>
__device__ __forceinline__ float apply_unary(float x) {
  if constexpr (Op == UnaryOp::relu) {
    return x > 0.0f ? x : 0.0f;
  } else if constexpr (Op == UnaryOp::sigmoid) {
    return 1.0f / (1.0f + expf(-x));
  } else if constexpr (Op == UnaryOp::tanh) {
    return tanhf(x);
  } else if constexpr (Op == UnaryOp::gelu_erf) {
    return 0.5f * x * (1.0f + erff(x * 0.70710678118654752f));
  } else {
    // ONNX Gelu approximate="tanh": sqrt(2/pi) = 0.7978845608...
    const float inner = 0.79788456080286536f * (x + 0.044715f * x * x * x);
    return 0.5f * x * (1.0f + tanhf(inner));
  }
}

template <UnaryOp Op, class T>
__global__ void unary_kernel(const T* x, T* y, std::int64_t n) {
  for (std::int64_t i = global_thread_index(); i < n; i += grid_stride())
    y[i] = from_float<T>(apply_unary<Op>(to_float(x[i])));
}

template <UnaryOp Op>
void launch_unary_typed(const void* x, void* y, DType dtype, std::int64_t n, cudaStream_t stream) {
  const unsigned grid = grid_for(n);
  if (dtype == DType::f32)
    unary_kernel<Op, float><<<grid, kBlockThreads, 0, stream>>>(static_cast<const float*>(x),
                                                                static_cast<float*>(y), n);
  else if (dtype == DType::f16)
    unary_kernel<Op, __half><<<grid, kBlockThreads, 0, stream>>>(static_cast<const __half*>(x),
                                                                 static_cast<__half*>(y), n);
  else
    throw_unhandled_dtype("launch_unary", dtype);
}

// Integers use their own arithmetic (wrapping as in C++ for unsigned; ONNX leaves overflow open);
// floats go through f32.
template <BinaryOp Op, class T>
__device__ __forceinline__ T apply_binary(T a, T b) {
  if constexpr (std::is_same_v<T, __half>) {
    const float fa = __half2float(a), fb = __half2float(b);
    return __float2half_rn(Op == BinaryOp::add ? fa + fb : fa * fb);
  } else {
    return Op == BinaryOp::add ? a + b : a * b;
  }
}

template <BinaryOp Op, class T>
__global__ void binary_same_shape_kernel(const T* a, const T* b, T* c,
                                         std::int64_t n) {
  for (std::int64_t i = global_thread_index(); i < n; i += grid_stride()) c[i] = apply_binary<Op>(a[i], b[i]);
}

template <BinaryOp Op, class T>
__global__ void binary_broadcast_kernel(const T* a, const T* b, T* c,
                                        BroadcastLayout layout, std::int64_t n) {
  for (std::int64_t i = global_thread_index(); i < n; i += grid_stride()) {
    std::int64_t rest = i, a_offset = 0, b_offset = 0;
#pragma unroll
    for (int d = kMaxBroadcastRank - 1; d >= 0; --d) {
      if (d >= layout.rank) continue;
      const std::int64_t coord = rest % layout.dims[d];
      rest /= layout.dims[d];
      a_offset += coord * layout.a_strides[d];
      b_offset += coord * layout.b_strides[d];
    }
    c[i] = apply_binary<Op>(a[a_offset], b[b_offset]);
  }
}

template <BinaryOp Op, class T>
void launch_binary_typed(const void* a, const void* b, void* c, const BroadcastLayout& layout, bool same_shape,
                         std::int64_t n, cudaStream_t stream) {
  const unsigned grid = grid_for(n);
  const T* ta = static_cast<const T*>(a);
  const T* tb = static_cast<const T*>(b);
  T* tc = static_cast<T*>(c);
  if (same_shape)
    binary_same_shape_kernel<Op, T><<<grid, kBlockThreads, 0, stream>>>(ta, tb, tc, n);
  else
    binary_broadcast_kernel<Op, T><<<grid, kBlockThreads, 0, stream>>>(ta, tb, tc, layout, n);
}

template <BinaryOp Op>
void launch_binary_op(const void* a, const void* b, void* c, DType dtype, const BroadcastLayout& layout,
                      bool same_shape, std::int64_t n, cudaStream_t stream) {
  switch (dtype) {
    case DType::f32: return launch_binary_typed<Op, float>(a, b, c, layout, same_shape, n, stream);
    case DType::f16: return launch_binary_typed<Op, __half>(a, b, c, layout, same_shape, n, stream);
    case DType::i32: return launch_binary_typed<Op, std::int32_t>(a, b, c, layout, same_shape, n, stream);
    case DType::i64: return launch_binary_typed<Op, std::int64_t>(a, b, c, layout, same_shape, n, stream);
    default: throw_unhandled_dtype("launch_binary", dtype);
  }
}

}  // namespace

void launch_unary(UnaryOp op, const void* x, void* y, DType dtype, std::size_t n, cudaStream_t stream) {
  if (n == 0) return;
  const auto count = static_cast<std::int64_t>(n);
  switch (op) {
    case UnaryOp::relu: return launch_unary_typed<UnaryOp::relu>(x, y, dtype, count, stream);
    case UnaryOp::sigmoid: return launch_unary_typed<UnaryOp::sigmoid>(x, y, dtype, count, stream);
    case UnaryOp::tanh: return launch_unary_typed<UnaryOp::tanh>(x, y, dtype, count, stream);
    case UnaryOp::gelu_erf: return launch_unary_typed<UnaryOp::gelu_erf>(x, y, dtype, count, stream);
    case UnaryOp::gelu_tanh: return launch_unary_typed<UnaryOp::gelu_tanh>(x, y, dtype, count, stream);
  }
}

void launch_binary(BinaryOp op, const void* a, const void* b, void* c, DType dtype,
                   const BroadcastLayout& layout, bool same_shape, cudaStream_t stream) {
  std::int64_t n = 1;
  for (int d = 0; d < layout.rank; ++d) n *= layout.dims[d];
  if (n == 0) return;
  if (op == BinaryOp::add)
    launch_binary_op<BinaryOp::add>(a, b, c, dtype, layout, same_shape, n, stream);
  else
    launch_binary_op<BinaryOp::mul>(a, b, c, dtype, layout, same_shape, n, stream);
}

}  // namespace loom::kernels
