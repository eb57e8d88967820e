// What LSTM and GRU share about their layout: direction and layout attributes, the extents read
// from X, and the shapes of W, R, B, the states and Y. Shared by shape inference and the kernels
// of every backend (backend/rnn_spec) so they agree on every shape.
#pragma once

#include <cstdint>

#include "loom/model.hpp"

namespace loom::graph {

// `direction` (forward, reverse, bidirectional) and `layout` (0: X [T, B, I]; 1: X [B, T, I]).
struct RnnLayout {
  std::int64_t directions = 1;
  bool reverse_only = false;  // direction="reverse"
  bool batch_major = false;   // layout=1: X [B, T, I], Y [B, T, D, H], states [B, D, H]
};
// Throws Error(invalid_model) for a layout other than 0 or 1 or an unknown direction.
RnnLayout rnn_layout(const Attributes& attrs);

// The layout with the extents of one node. `gates` is 4 for LSTM, 3 for GRU.
struct RnnGeometry : RnnLayout {
  std::int64_t steps = 0, batch = 0, input_size = 0, hidden = 0;

  Shape w_shape(std::int64_t gates) const { return Shape{directions, gates * hidden, input_size}; }
  Shape r_shape(std::int64_t gates) const { return Shape{directions, gates * hidden, hidden}; }
  Shape b_shape(std::int64_t gates) const { return Shape{directions, 2 * gates * hidden}; }
  Shape y_shape() const {
    return batch_major ? Shape{batch, steps, directions, hidden} : Shape{steps, directions, batch, hidden};
  }
  // initial_h, initial_c, Y_h and Y_c.
  Shape state_shape() const {
    return batch_major ? Shape{batch, directions, hidden} : Shape{directions, batch, hidden};
  }
};
// Steps, batch and input size from X (rank 3, checked by the caller) in `layout`.
RnnGeometry rnn_geometry(const RnnLayout& layout, const Shape& x, std::int64_t hidden);

}  // namespace loom::graph
