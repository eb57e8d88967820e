// Pad's mode, pads and output extents, computed once for shape inference and every backend.
#include "graph/ops/pad_geometry.hpp"

#include <string>

#include "graph/op_support.hpp"

namespace loom::graph {

PadGeometry pad_geometry(const Attributes& attrs, const Shape& x, const std::vector<std::int64_t>* pads_input) {
  PadGeometry pad;
  const std::string mode = attrs.get_string("mode", "constant");
  if (mode == "reflect")
    pad.mode = PadMode::reflect;
  else if (mode == "edge")
    pad.mode = PadMode::edge;
  else if (mode != "constant")
    fail(ErrorCode::unsupported, "mode='" + mode + "' (constant, reflect or edge)");
  // Opset 2 kept pads in an attribute; later opsets take an input.
  const std::vector<std::int64_t> pads = pads_input ? *pads_input : attrs.get_ints("pads", {});
  const std::size_t rank = x.rank();
  if (pads.size() != 2 * rank)
    fail(ErrorCode::shape_mismatch, "pads has " + std::to_string(pads.size()) + " values, X " + x.to_string() +
                                        " needs " + std::to_string(2 * rank));
  pad.pad_begin.assign(pads.begin(), pads.begin() + static_cast<std::ptrdiff_t>(rank));
  pad.pad_end.assign(pads.begin() + static_cast<std::ptrdiff_t>(rank), pads.end());
  pad.output.resize(rank);
  for (std::size_t i = 0; i < rank; ++i) {
    pad.output[i] = x[i] + pad.pad_begin[i] + pad.pad_end[i];
    if (pad.output[i] < 0) fail(ErrorCode::shape_mismatch, "pads make axis " + std::to_string(i) + " negative");
    if (pad.mode != PadMode::constant && x[i] == 0 && pad.output[i] > 0)
      fail(ErrorCode::shape_mismatch, "mode='" + mode + "' cannot pad an empty axis");
  }
  return pad;
}

}  // namespace loom::graph
