// Reduce* kernels. When only the trailing merged dim is reduced (the common case: a mean over the
// hidden size, a sum over everything), one block reduces each contiguous row; otherwise one thread
// produces each output, walking its reduced elements with an odometer, so neighbouring threads
// read neighbouring kept elements.
#include "reduce.cuh"

#include <limits>
#include <type_traits>

#include "common.cuh"

namespace loom::kernels {
namespace {

// Float storage accumulates in f32, integers in int64.
template <class T>
struct AccumulatorOf {
  using type = long long;
};
template <>
struct AccumulatorOf<float> {
  using type = float;
};
template <>
struct AccumulatorOf<__half> {
  using type = float;
};

template <class Acc, class T>
__device__ __forceinline__ Acc load(T v) {
  if constexpr (std::is_same_v<Acc, float>)
    return to_float(v);
  else
    return static_cast<Acc>(v);
}

template <class T, class Acc>
__device__ __forceinline__ T store(Acc v) {
  if constexpr (std::is_same_v<Acc, float>)
    return from_float<T>(v);
  else
    return static_cast<T>(v);
}

template <class Acc>
__device__ __forceinline__ bool is_nan(Acc v) {
  if constexpr (std::is_same_v<Acc, float>)
    return isnan(v);
  else
    return false;
}

// The value a reduction starts from; for max/min the extreme of the storage type T.
template <class T, class Acc>
__device__ __forceinline__ Acc identity_of(ReduceOp op) {
  if (op == ReduceOp::prod) return Acc(1);
  if constexpr (std::is_same_v<Acc, float>) {
    if (op == ReduceOp::max) return -INFINITY;
    if (op == ReduceOp::min) return INFINITY;
  } else {
    if (op == ReduceOp::max) return static_cast<Acc>(std::numeric_limits<T>::lowest());
    if (op == ReduceOp::min) return static_cast<Acc>(std::numeric_limits<T>::max());
  }
  return Acc(0);
}

// What one element adds; `shift` is the maximum subtracted for log_sum_exp.
template <class Acc>
__device__ __forceinline__ Acc contribution(ReduceOp op, Acc v, Acc shift) {
  switch (op) {
    case ReduceOp::sum_square:
    case ReduceOp::l2:
      return v * v;
    case ReduceOp::l1:
      return v < Acc(0) ? -v : v;
    case ReduceOp::log_sum_exp:
      if constexpr (std::is_same_v<Acc, float>) return expf(v - shift);
      return v;
    default:
      return v;
  }
}

// Merges two partial results; NaN wins in max/min, as on the CPU.
template <class Acc>
__device__ __forceinline__ Acc combine(ReduceOp op, Acc a, Acc b) {
  switch (op) {
    case ReduceOp::prod:
      return a * b;
    case ReduceOp::max:
      return (b > a || is_nan(b)) && !is_nan(a) ? b : a;
    case ReduceOp::min:
      return (b < a || is_nan(b)) && !is_nan(a) ? b : a;
    default:
      return a + b;
  }
}

template <class Acc>
__device__ __forceinline__ Acc finalize(ReduceOp op, Acc a, std::int64_t count, Acc shift) {
  if constexpr (std::is_same_v<Acc, float>) {
    switch (op) {
      case ReduceOp::mean:
        return a / static_cast<float>(count);
      case ReduceOp::l2:
        return sqrtf(a);
      case ReduceOp::log_sum:
        return logf(a);
      case ReduceOp::log_sum_exp:
        return shift + logf(a);
      default:
        return a;
    }
  } else {
    if (op == ReduceOp::mean) return count == 0 ? Acc(0) : a / static_cast<Acc>(count);
    return a;
  }
}

// A finite shift for log_sum_exp (all -inf or an inf maximum would give NaN).
template <class Acc>
__device__ __forceinline__ Acc finite_shift(Acc m) {
  if constexpr (std::is_same_v<Acc, float>) return isfinite(m) ? m : 0.0f;
  return m;
}

template <class Acc>
__device__ __forceinline__ Acc warp_combine(ReduceOp op, Acc v) {
  for (int offset = 16; offset > 0; offset >>= 1) v = combine(op, v, __shfl_xor_sync(0xffffffffu, v, offset));
  return v;
}

// Block-wide combine; every thread gets the result. blockDim.x is a multiple of 32.
template <class Acc>
__device__ Acc block_combine(ReduceOp op, Acc v, Acc identity, Acc* scratch) {
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, warps = blockDim.x / 32;
  v = warp_combine(op, v);
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  v = lane < warps ? scratch[lane] : identity;
  v = warp_combine(op, v);
  __syncthreads();
  return v;
}

template <class T, class Acc>
__global__ void reduce_rows_kernel(const T* x, T* y, std::int64_t rows, std::int64_t cols, ReduceOp op) {
  __shared__ Acc scratch[32];
  const Acc identity = identity_of<T, Acc>(op);
  for (std::int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const T* in = x + row * cols;
    Acc shift = Acc(0);
    if (op == ReduceOp::log_sum_exp) {
      Acc m = identity_of<T, Acc>(ReduceOp::max);
      for (std::int64_t j = threadIdx.x; j < cols; j += blockDim.x) m = combine(ReduceOp::max, m, load<Acc>(in[j]));
      shift = finite_shift(block_combine(ReduceOp::max, m, identity_of<T, Acc>(ReduceOp::max), scratch));
    }
    Acc acc = identity;
    for (std::int64_t j = threadIdx.x; j < cols; j += blockDim.x)
      acc = combine(op, acc, contribution(op, load<Acc>(in[j]), shift));
    acc = block_combine(op, acc, identity, scratch);
    if (threadIdx.x == 0) y[row] = store<T>(finalize(op, acc, cols, shift));
  }
}

// Kept and reduced dims with their input element strides, for the one-thread-per-output kernel.
struct Geometry {
  int kept_rank = 0, reduced_rank = 0;
  std::int64_t kept_dims[kMaxReduceDims], kept_strides[kMaxReduceDims];
  std::int64_t reduced_dims[kMaxReduceDims], reduced_strides[kMaxReduceDims];
};

// Folds the reduced elements of one output into `acc`, starting at input offset `base`.
template <class T, class Acc>
__device__ Acc walk_reduced(const T* x, std::int64_t base, const Geometry& g, std::int64_t count, ReduceOp op, Acc acc,
                            Acc shift) {
  std::int64_t index[kMaxReduceDims] = {};
  std::int64_t offset = base;
  for (std::int64_t r = 0; r < count; ++r) {
    acc = combine(op, acc, contribution(op, load<Acc>(x[offset]), shift));
    for (int d = g.reduced_rank - 1; d >= 0; --d) {
      offset += g.reduced_strides[d];
      if (++index[d] < g.reduced_dims[d]) break;
      offset -= g.reduced_strides[d] * g.reduced_dims[d];
      index[d] = 0;
    }
  }
  return acc;
}

template <class T, class Acc>
__global__ void reduce_outputs_kernel(const T* x, T* y, Geometry g, std::int64_t outputs, std::int64_t count,
                                      ReduceOp op) {
  for (std::int64_t o = global_thread_index(); o < outputs; o += grid_stride()) {
    std::int64_t base = 0, rest = o;
    for (int d = g.kept_rank - 1; d >= 0; --d) {
      base += (rest % g.kept_dims[d]) * g.kept_strides[d];
      rest /= g.kept_dims[d];
    }
    Acc shift = Acc(0);
    if (op == ReduceOp::log_sum_exp)
      shift = finite_shift(
          walk_reduced<T, Acc>(x, base, g, count, ReduceOp::max, identity_of<T, Acc>(ReduceOp::max), Acc(0)));
    const Acc acc = walk_reduced<T, Acc>(x, base, g, count, op, identity_of<T, Acc>(op), shift);
    y[o] = store<T>(finalize(op, acc, count, shift));
  }
}

template <class T>
void launch_typed(const void* x, void* y, ReduceOp op, const ReduceShape& shape, std::int64_t outputs,
                  std::int64_t count, cudaStream_t stream) {
  using Acc = typename AccumulatorOf<T>::type;
  const T* tx = static_cast<const T*>(x);
  T* ty = static_cast<T*>(y);
  // Rows when the one reduced (merged) dim is the trailing one: [R] or [K, R]. Merged dims
  // alternate, so a rank of at most 2 ending in a reduced dim is exactly that case.
  const bool trailing = shape.rank == 0 || (shape.rank <= 2 && shape.reduced[shape.rank - 1]);
  if (trailing) {
    const int threads = count <= 256 ? 64 : kBlockThreads;
    reduce_rows_kernel<T, Acc><<<row_grid(outputs), threads, 0, stream>>>(tx, ty, outputs, count, op);
    return;
  }
  Geometry g;
  std::int64_t stride = 1;
  int kept = 0, reduced = 0;
  for (int d = 0; d < shape.rank; ++d) (shape.reduced[d] ? reduced : kept) += 1;
  g.kept_rank = kept;
  g.reduced_rank = reduced;
  for (int d = shape.rank - 1; d >= 0; --d) {  // innermost first: strides grow outwards
    if (shape.reduced[d]) {
      --reduced;
      g.reduced_dims[reduced] = shape.dims[d];
      g.reduced_strides[reduced] = stride;
    } else {
      --kept;
      g.kept_dims[kept] = shape.dims[d];
      g.kept_strides[kept] = stride;
    }
    stride *= shape.dims[d];
  }
  reduce_outputs_kernel<T, Acc><<<grid_for(outputs), kBlockThreads, 0, stream>>>(tx, ty, g, outputs, count, op);
}

}  // namespace

void launch_reduce(const void* x, void* y, DType dtype, ReduceOp op, const ReduceShape& shape,
                   std::int64_t output_count, std::int64_t reduce_count, cudaStream_t stream) {
  if (output_count == 0) return;
  switch (dtype) {
    case DType::f32:
      return launch_typed<float>(x, y, op, shape, output_count, reduce_count, stream);
    case DType::f16:
      return launch_typed<__half>(x, y, op, shape, output_count, reduce_count, stream);
    case DType::i64:
      return launch_typed<std::int64_t>(x, y, op, shape, output_count, reduce_count, stream);
    case DType::i32:
      return launch_typed<std::int32_t>(x, y, op, shape, output_count, reduce_count, stream);
    default:
      throw_unhandled_dtype("launch_reduce", dtype);
  }
}

}  // namespace loom::kernels
