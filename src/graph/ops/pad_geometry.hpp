// Pad's attributes and output extents (opset 2 attribute form, opset 11+ input form), shared by
// shape inference and the kernels of every backend so they agree on the pads and the output.
#pragma once

#include <cstdint>
#include <vector>

#include "loom/model.hpp"

namespace loom::graph {

enum class PadMode { constant, reflect, edge };

struct PadGeometry {
  PadMode mode = PadMode::constant;
  std::vector<std::int64_t> pad_begin, pad_end;  // per axis of X; negative values crop
  std::vector<std::int64_t> output;              // the output dims
};

// `mode` (constant, reflect or edge) and the pads from constant input 1 (`pads_input`, nullptr
// when the input is absent) or else the `pads` attribute. Throws Error(unsupported) for another
// mode, Error(shape_mismatch) when pads does not hold 2 * rank values, an axis would become
// negative, or reflect/edge would pad an empty axis.
PadGeometry pad_geometry(const Attributes& attrs, const Shape& x, const std::vector<std::int64_t>* pads_input);

}  // namespace loom::graph
