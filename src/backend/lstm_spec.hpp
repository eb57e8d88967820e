// The LSTM op's attributes and shapes, parsed and checked once for every backend (docs/onnx-support.md).
#pragma once

#include <cstddef>
#include <cstdint>

#include "backend/backend.hpp"
#include "backend/rnn_spec.hpp"

namespace loom::backend {

enum LstmInput : std::size_t {
  kLstmX,
  kLstmW,
  kLstmR,
  kLstmB,
  kLstmSequenceLens,
  kLstmInitialH,
  kLstmInitialC,
  kLstmP
};
enum LstmOutput : std::size_t { kLstmY, kLstmYh, kLstmYc };

// activations[d] holds f (gates), g (cell candidate), h (output), ONNX's defaults sigmoid, tanh, tanh.
struct LstmSpec : RnnSpec {
  bool has_initial_c = false;
  bool has_peepholes = false;  // input P [dirs, 3H]: i, o, f
  bool input_forget = false;   // forget gate = 1 - input gate
  bool has_output(const KernelSpec& spec, LstmOutput o) const {
    return o < spec.outputs.size() && spec.outputs[o].present;
  }
};

// Checks attributes (direction, layout 0 or 1, clip > 0, input_forget, activations), the presence
// of X, W and R, and the shape of every present input and output. Throws Error(unsupported) or
// Error(shape_mismatch) naming the node. Dtypes are the backend's to check.
LstmSpec parse_lstm_spec(const KernelSpec& spec);

}  // namespace loom::backend
