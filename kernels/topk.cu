// TopK: one block per (outer, inner) slice and k rounds of a block-wide selection. The order is
// total (value, then lower index first), so round j picks the best element that comes strictly
// after the one picked in round j-1; no scratch memory and no sort. Each round reads the slice,
// which suits the small k of beam search and classification heads.
#include "topk.cuh"

#include "select_common.cuh"

namespace loom::kernels {
namespace {

// Whether (va, ia) comes before (vb, ib) in the output order; NaN counts above every number.
// Index -1 is "nothing", after everything.
template <class V>
__device__ __forceinline__ bool precedes(V va, long long ia, V vb, long long ib, bool largest) {
  if (ia < 0) return false;
  if (ib < 0) return true;
  const bool na = is_nan(va), nb = is_nan(vb);
  if (na || nb) {
    if (na && nb) return ia < ib;
    return largest ? na : nb;
  }
  if (va != vb) return largest ? va > vb : va < vb;
  return ia < ib;
}

template <class T>
__global__ void topk_kernel(const T* x, T* values, std::int64_t* indices, std::int64_t outer, std::int64_t axis,
                            std::int64_t inner, std::int64_t k, bool largest) {
  using V = typename ComparedAs<T>::type;
  __shared__ V scratch_values[32];
  __shared__ long long scratch_indices[32];
  const std::int64_t slices = outer * inner;
  for (std::int64_t slice = blockIdx.x; slice < slices; slice += gridDim.x) {
    const std::int64_t o = slice / inner, i = slice % inner;
    const T* src = x + o * axis * inner + i;
    V previous = V(0);
    long long previous_index = -1;  // nothing picked yet
    for (std::int64_t j = 0; j < k; ++j) {
      V best = V(0);
      long long best_index = -1;
      for (std::int64_t e = threadIdx.x; e < axis; e += blockDim.x) {
        const V v = widen<V>(src[e * inner]);
        const bool eligible = previous_index < 0 || precedes(previous, previous_index, v, e, largest);
        if (eligible && precedes(v, e, best, best_index, largest)) {
          best = v;
          best_index = e;
        }
      }
      block_pick(
          best, best_index, [=](V v, long long i, V bv, long long bi) { return precedes(v, i, bv, bi, largest); },
          scratch_values, scratch_indices);
      // Every thread now holds the same pick.
      if (threadIdx.x == 0) {
        const std::int64_t out = (o * k + j) * inner + i;
        values[out] = src[best_index * inner];
        indices[out] = best_index;
      }
      previous = best;
      previous_index = best_index;
    }
  }
}

template <class T>
void launch_typed(const void* x, void* values, std::int64_t* indices, std::int64_t outer, std::int64_t axis,
                  std::int64_t inner, std::int64_t k, bool largest, cudaStream_t stream) {
  const int threads = axis <= 256 ? 64 : kBlockThreads;
  topk_kernel<T><<<row_grid(outer * inner), threads, 0, stream>>>(static_cast<const T*>(x), static_cast<T*>(values),
                                                                  indices, outer, axis, inner, k, largest);
}

}  // namespace

void launch_topk(const void* x, void* values, std::int64_t* indices, DType dtype, std::int64_t outer, std::int64_t axis,
                 std::int64_t inner, std::int64_t k, bool largest, cudaStream_t stream) {
  if (outer == 0 || inner == 0 || k == 0) return;
  switch (dtype) {
    case DType::f32:
      return launch_typed<float>(x, values, indices, outer, axis, inner, k, largest, stream);
    case DType::f16:
      return launch_typed<__half>(x, values, indices, outer, axis, inner, k, largest, stream);
    case DType::i64:
      return launch_typed<std::int64_t>(x, values, indices, outer, axis, inner, k, largest, stream);
    case DType::i32:
      return launch_typed<std::int32_t>(x, values, indices, outer, axis, inner, k, largest, stream);
    default:
      throw_unhandled_dtype("launch_topk", dtype);
  }
}

}  // namespace loom::kernels
