// Stride arithmetic behind Transpose, Concat, broadcasting Add/Mul, Gemm's C and Conv padding.
#include "backend/cuda/strided_layout.hpp"

#include <algorithm>

namespace loom::backend::cuda {

std::vector<std::int64_t> contiguous_strides(const std::vector<std::int64_t>& dims) {
  std::vector<std::int64_t> strides(dims.size(), 1);
  for (std::size_t d = dims.size(); d-- > 1;) strides[d - 1] = strides[d] * dims[d];
  return strides;
}

std::optional<Shape> broadcast_shapes(const Shape& a, const Shape& b) {
  const std::size_t rank = std::max(a.rank(), b.rank());
  std::vector<std::int64_t> dims(rank, 1);
  for (std::size_t i = 0; i < rank; ++i) {
    const std::int64_t da = i < a.rank() ? a[a.rank() - 1 - i] : 1;
    const std::int64_t db = i < b.rank() ? b[b.rank() - 1 - i] : 1;
    if (da != db && da != 1 && db != 1) return std::nullopt;
    dims[rank - 1 - i] = da == 1 ? db : da;
  }
  return Shape(std::move(dims));
}

std::optional<std::vector<std::int64_t>> broadcast_strides(const Shape& input, const Shape& output) {
  if (input.rank() > output.rank()) return std::nullopt;
  const std::vector<std::int64_t> dense = contiguous_strides(input.dims());
  std::vector<std::int64_t> strides(output.rank(), 0);
  const std::size_t lead = output.rank() - input.rank();
  for (std::size_t d = 0; d < input.rank(); ++d) {
    const std::int64_t in_dim = input[d], out_dim = output[lead + d];
    if (in_dim == out_dim)
      strides[lead + d] = dense[d];
    else if (in_dim != 1)
      return std::nullopt;
  }
  return strides;
}

void coalesce_dims(std::vector<std::int64_t>& dims, std::vector<std::vector<std::int64_t>>& strides) {
  std::vector<std::int64_t> out_dims;
  std::vector<std::vector<std::int64_t>> out_strides(strides.size());
  for (std::size_t d = 0; d < dims.size(); ++d) {
    if (dims[d] == 1) continue;  // contributes nothing to any offset
    bool merge = !out_dims.empty();
    // The previous kept dim merges with this one when, for every operand, stepping it once equals
    // stepping this dim through its whole extent.
    for (std::size_t k = 0; merge && k < strides.size(); ++k) merge = out_strides[k].back() == strides[k][d] * dims[d];
    if (merge) {
      out_dims.back() *= dims[d];
      for (std::size_t k = 0; k < strides.size(); ++k) out_strides[k].back() = strides[k][d];
    } else {
      out_dims.push_back(dims[d]);
      for (std::size_t k = 0; k < strides.size(); ++k) out_strides[k].push_back(strides[k][d]);
    }
  }
  dims = std::move(out_dims);
  strides = std::move(out_strides);
}

std::optional<kernels::StridedCopyLayout> make_copy_layout(std::vector<std::int64_t> dims,
                                                           std::vector<std::int64_t> src_strides,
                                                           std::vector<std::int64_t> dst_strides) {
  std::vector<std::vector<std::int64_t>> strides{std::move(src_strides), std::move(dst_strides)};
  coalesce_dims(dims, strides);
  if (dims.size() > static_cast<std::size_t>(kernels::kMaxCopyRank)) return std::nullopt;
  kernels::StridedCopyLayout layout;
  layout.rank = static_cast<int>(dims.size());
  for (std::size_t d = 0; d < dims.size(); ++d) {
    layout.dims[d] = dims[d];
    layout.src_strides[d] = strides[0][d];
    layout.dst_strides[d] = strides[1][d];
  }
  return layout;
}

std::optional<kernels::BroadcastLayout> make_broadcast_layout(std::vector<std::int64_t> dims,
                                                              std::vector<std::int64_t> a_strides,
                                                              std::vector<std::int64_t> b_strides) {
  std::vector<std::vector<std::int64_t>> strides{std::move(a_strides), std::move(b_strides)};
  coalesce_dims(dims, strides);
  if (dims.size() > static_cast<std::size_t>(kernels::kMaxBroadcastRank)) return std::nullopt;
  kernels::BroadcastLayout layout;
  layout.rank = static_cast<int>(dims.size());
  for (std::size_t d = 0; d < dims.size(); ++d) {
    layout.dims[d] = dims[d];
    layout.a_strides[d] = strides[0][d];
    layout.b_strides[d] = strides[1][d];
  }
  return layout;
}

}  // namespace loom::backend::cuda
