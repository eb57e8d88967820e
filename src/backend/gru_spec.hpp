// The GRU op's attributes and shapes, parsed and checked once for every backend.
#pragma once

#include <cstddef>

#include "backend/backend.hpp"
#include "backend/rnn_spec.hpp"

namespace loom::backend {

enum GruInput : std::size_t { kGruX, kGruW, kGruR, kGruB, kGruSequenceLens, kGruInitialH };
enum GruOutput : std::size_t { kGruY, kGruYh };

// Gate order z (update), r (reset), h (candidate), as ONNX stores W, R and B. activations[d]
// holds f (z and r) and g (candidate), ONNX's defaults sigmoid, tanh.
struct GruSpec : RnnSpec {
  bool linear_before_reset = false;  // candidate uses r ⊙ (H·Rhᵀ + Rbh) instead of (r ⊙ H)·Rhᵀ + Rbh
};

// Checks attributes (direction, layout 0 or 1, clip > 0, linear_before_reset, activations), the
// presence of X, W and R, and the shape of every present input and output. Throws
// Error(unsupported) or Error(shape_mismatch) naming the node. Dtypes are the backend's to check.
GruSpec parse_gru_spec(const KernelSpec& spec);

}  // namespace loom::backend
