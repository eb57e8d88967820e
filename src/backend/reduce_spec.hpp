// The reduce family's attributes and shapes (Reduce*, ArgMax/ArgMin, TopK), parsed and checked
// once for every backend; the axes and extents come from graph/ops/reduce_geometry (shared with
// shape inference). Dtypes are the backend's to check.
#pragma once

#include <cstdint>
#include <vector>

#include "backend/backend.hpp"
#include "graph/ops/reduce_geometry.hpp"

namespace loom::backend {

using graph::reduce_kind;
using graph::reduce_takes_integers;
using graph::ReduceKind;

struct ReduceSpec {
  ReduceKind kind = ReduceKind::sum;
  // noop_with_empty_axes=1 with no axes: the output is the input.
  bool identity = false;
  // The input viewed with adjacent dims of the same kind merged and size-1 dims dropped:
  // dims[i] is reduced when reduced[i]. Empty for a scalar or a one-element tensor.
  std::vector<std::int64_t> dims;
  std::vector<bool> reduced;
  std::int64_t reduce_count = 1;  // input elements per output element
  std::int64_t output_count = 1;  // output elements
};

// Reads the axes from the `axes` attribute or from constant input 1 (whose value must be in
// spec.constants), applies keepdims and noop_with_empty_axes and checks the output shape.
// Throws Error(unsupported|shape_mismatch) naming the node.
ReduceSpec parse_reduce_spec(const KernelSpec& spec);

// A tensor seen as [outer, length, inner] around one axis.
struct AxisView {
  std::int64_t outer = 1, length = 1, inner = 1;
};
AxisView axis_view(const Shape& shape, std::size_t axis);

// ArgMax / ArgMin: axis, keepdims, select_last_index; checks the i64 output's shape.
struct ArgReduceSpec {
  AxisView view;
  bool select_last_index = false;
};
ArgReduceSpec parse_arg_reduce_spec(const KernelSpec& spec);

// TopK: K from constant input 1, axis, largest, sorted; checks both outputs' shapes and that
// Indices is i64. The result is always sorted (allowed for sorted=0 too).
struct TopKSpec {
  AxisView view;  // of the input
  std::int64_t k = 0;
  bool largest = true;
};
TopKSpec parse_topk_spec(const KernelSpec& spec);

}  // namespace loom::backend
