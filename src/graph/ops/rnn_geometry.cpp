// LSTM/GRU layout attributes and extents, parsed once for shape inference and every backend.
#include "graph/ops/rnn_geometry.hpp"

#include <string>

#include "graph/op_support.hpp"

namespace loom::graph {

RnnLayout rnn_layout(const Attributes& attrs) {
  RnnLayout layout;
  const std::int64_t layout_attr = attrs.get_int("layout", 0);
  if (layout_attr != 0 && layout_attr != 1) fail(ErrorCode::invalid_model, "layout=" + std::to_string(layout_attr));
  layout.batch_major = layout_attr == 1;
  const std::string direction = attrs.get_string("direction", "forward");
  if (direction == "reverse")
    layout.reverse_only = true;
  else if (direction == "bidirectional")
    layout.directions = 2;
  else if (direction != "forward")
    fail(ErrorCode::invalid_model, "direction='" + direction + "'");
  return layout;
}

RnnGeometry rnn_geometry(const RnnLayout& layout, const Shape& x, std::int64_t hidden) {
  RnnGeometry g;
  static_cast<RnnLayout&>(g) = layout;
  g.steps = layout.batch_major ? x[1] : x[0];
  g.batch = layout.batch_major ? x[0] : x[1];
  g.input_size = x[2];
  g.hidden = hidden;
  return g;
}

}  // namespace loom::graph
