// The LSTM op's attributes and shapes, parsed and checked once for every backend (docs/ops.md).
#pragma once

#include <cstddef>
#include <cstdint>

#include "backend/backend.hpp"

namespace loom::backend {

enum LstmInput : std::size_t { kLstmX, kLstmW, kLstmR, kLstmB, kLstmSequenceLens, kLstmInitialH, kLstmInitialC, kLstmP };
enum LstmOutput : std::size_t { kLstmY, kLstmYh, kLstmYc };

struct LstmSpec {
  std::int64_t directions = 1;
  bool reverse_only = false;  // direction="reverse"
  std::int64_t steps = 0, batch = 0, input_size = 0, hidden = 0;
  bool has_bias = false, has_sequence_lens = false, has_initial_h = false, has_initial_c = false;
  DType sequence_lens_dtype = DType::i32;
  bool has_output(const KernelSpec& spec, LstmOutput o) const {
    return o < spec.outputs.size() && spec.outputs[o].present;
  }
};

// Checks attributes (layout 0, no clip, no input_forget, default activations, a known direction),
// the presence of X, W, R and the absence of P, and the shape of every present input and output.
// Throws Error(unsupported) or Error(shape_mismatch) naming the node. Dtypes are the backend's to
// check.
LstmSpec parse_lstm_spec(const KernelSpec& spec);

}  // namespace loom::backend
