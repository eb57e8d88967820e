// What ONNX's recurrent ops (LSTM, GRU) share: direction, layout, sequence lengths, initial state,
// clip and the `activations` attribute, parsed and checked once for every backend.
#pragma once

#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>

#include "backend/backend.hpp"
#include "backend/rnn_activation.hpp"
#include "graph/ops/rnn_geometry.hpp"

namespace loom::backend {

// Up to 3 functions (LSTM's f, g, h; GRU's f, g) per direction.
using RnnDirectionActivations = std::array<RnnActivation, 3>;

// Attributes and shapes common to LSTM and GRU: the graph's layout and extents (directions,
// reverse_only, batch_major, steps, batch, input_size, hidden; y_shape(), state_shape()) and what
// the kernels add. `gates` is 4 for LSTM, 3 for GRU.
struct RnnSpec : graph::RnnGeometry {
  bool has_bias = false, has_sequence_lens = false, has_initial_h = false;
  DType sequence_lens_dtype = DType::i32;
  float clip = 0.0f;  // 0: no clip
  std::array<RnnDirectionActivations, 2> activations{};

  // Element offsets of X row (t, b), of Y entry (t, d, b) and of state entry (d, b) in the op's layout.
  std::int64_t x_row(std::int64_t t, std::int64_t b) const { return batch_major ? b * steps + t : t * batch + b; }
  std::int64_t y_offset(std::int64_t t, std::int64_t d, std::int64_t b) const {
    return (batch_major ? (b * steps + t) * directions + d : (t * directions + d) * batch + b) * hidden;
  }
  std::int64_t state_offset(std::int64_t d, std::int64_t b) const {
    return (batch_major ? b * directions + d : d * batch + b) * hidden;
  }
  // Each row's length into lengths[0, batch): `sequence_lens` (host memory in
  // sequence_lens_dtype, or nullptr) checked to be in [0, steps], else steps. Throws
  // Error(invalid_argument) "<op> node '<node>': sequence_lens[b] = v is outside [0, steps]".
  void read_lengths(const void* sequence_lens, const std::string& op, const std::string& node,
                    std::int64_t* lengths) const;
};

// Parses and checks what LSTM and GRU share: input count (3 to max_inputs) and presence of X, W,
// R; direction, layout, clip, hidden_size, activations (`functions` per direction, ONNX
// defaults `defaults`; alpha/beta consumed in order by the functions that take them); the shapes
// of X, W [dirs, gates*H, I], R [dirs, gates*H, H], B [dirs, 2*gates*H], sequence_lens [batch]
// (i32 or i64), initial_h (input 5) and the outputs Y (0) and Y_h (1). Throws Error(unsupported)
// or Error(shape_mismatch) naming the node.
RnnSpec parse_rnn_spec(const KernelSpec& spec, std::int64_t gates, std::size_t max_inputs, std::size_t functions,
                       const RnnDirectionActivations& defaults);

bool rnn_input_present(const KernelSpec& spec, std::size_t i);
bool rnn_output_present(const KernelSpec& spec, std::size_t o);

// Throws Error(shape_mismatch) "<what> is <got>, expected <want>".
void require_rnn_shape(const KernelSpec& spec, const Shape& got, const Shape& want, const char* what);

}  // namespace loom::backend
