// ArgMax / ArgMin: one block per row when the axis is innermost (a warp-shuffle reduction of
// (value, index) pairs), otherwise one thread per (outer, inner) column.
#include "argmax.cuh"

#include "select_common.cuh"

namespace loom::kernels {
namespace {

// Whether (v, i) should replace the current best (bv, bi). Index -1 marks "no candidate yet".
template <class V>
__device__ __forceinline__ bool beats(V v, long long i, V bv, long long bi, bool is_max, bool select_last) {
  if (i < 0) return false;
  if (bi < 0) return true;
  const bool nan_v = is_nan(v), nan_b = is_nan(bv);
  if (nan_v || nan_b) {
    if (nan_v && nan_b) return select_last ? i > bi : i < bi;
    return nan_v;
  }
  if (v != bv) return is_max ? v > bv : v < bv;
  return select_last ? i > bi : i < bi;
}

template <class T>
__global__ void argmax_rows_kernel(const T* x, std::int64_t* y, std::int64_t rows, std::int64_t cols, bool is_max,
                                   bool select_last) {
  using V = typename ComparedAs<T>::type;
  __shared__ V scratch_values[32];
  __shared__ long long scratch_indices[32];
  for (std::int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const T* in = x + row * cols;
    V best = V(0);
    long long best_index = -1;
    for (std::int64_t j = threadIdx.x; j < cols; j += blockDim.x) {
      const V v = widen<V>(in[j]);
      if (beats(v, j, best, best_index, is_max, select_last)) {
        best = v;
        best_index = j;
      }
    }
    block_pick(
        best, best_index,
        [=](V v, long long i, V bv, long long bi) { return beats(v, i, bv, bi, is_max, select_last); }, scratch_values,
        scratch_indices);
    if (threadIdx.x == 0) y[row] = best_index;
  }
}

template <class T>
__global__ void argmax_columns_kernel(const T* x, std::int64_t* y, std::int64_t outer, std::int64_t axis,
                                      std::int64_t inner, bool is_max, bool select_last) {
  using V = typename ComparedAs<T>::type;
  const std::int64_t columns = outer * inner;
  for (std::int64_t col = global_thread_index(); col < columns; col += grid_stride()) {
    const std::int64_t o = col / inner, in = col % inner;
    const T* src = x + o * axis * inner + in;
    V best = widen<V>(src[0]);
    long long best_index = 0;
    for (std::int64_t k = 1; k < axis; ++k) {
      const V v = widen<V>(src[k * inner]);
      if (beats(v, k, best, best_index, is_max, select_last)) {
        best = v;
        best_index = k;
      }
    }
    y[col] = best_index;
  }
}

template <class T>
void launch_typed(const void* x, std::int64_t* y, std::int64_t outer, std::int64_t axis, std::int64_t inner,
                  bool is_max, bool select_last, cudaStream_t stream) {
  const T* tx = static_cast<const T*>(x);
  if (inner == 1) {
    const int threads = axis <= 256 ? 64 : kBlockThreads;
    argmax_rows_kernel<T><<<row_grid(outer), threads, 0, stream>>>(tx, y, outer, axis, is_max, select_last);
  } else {
    argmax_columns_kernel<T>
        <<<grid_for(outer * inner), kBlockThreads, 0, stream>>>(tx, y, outer, axis, inner, is_max, select_last);
  }
}

}  // namespace

void launch_argmax(const void* x, std::int64_t* y, DType dtype, std::int64_t outer, std::int64_t axis,
                   std::int64_t inner, bool is_max, bool select_last, cudaStream_t stream) {
  if (outer == 0 || inner == 0 || axis == 0) return;
  switch (dtype) {
    case DType::f32:
      return launch_typed<float>(x, y, outer, axis, inner, is_max, select_last, stream);
    case DType::f16:
      return launch_typed<__half>(x, y, outer, axis, inner, is_max, select_last, stream);
    case DType::i64:
      return launch_typed<std::int64_t>(x, y, outer, axis, inner, is_max, select_last, stream);
    case DType::i32:
      return launch_typed<std::int32_t>(x, y, outer, axis, inner, is_max, select_last, stream);
    default:
      throw_unhandled_dtype("launch_argmax", dtype);
  }
}

}  // namespace loom::kernels
