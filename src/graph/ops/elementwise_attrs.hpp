// Attributes of the elementwise family that shape inference and the kernels of every backend
// read: Cast's target dtype and Gelu's approximation, parsed once so they agree.
#pragma once

#include <cstdint>
#include <optional>

#include "loom/model.hpp"

namespace loom::graph {

// Cast's `to` (an ONNX TensorProto data type code) as a Loom dtype. Throws Error(unsupported)
// "to=<code> is an unsupported dtype (supported: ...)" for a code Loom has no dtype for.
DType cast_target(std::int64_t to);

enum class GeluApproximation { none, tanh };
// Gelu's `approximate` ("none", the default, or "tanh"); nullopt for any other value, which each
// caller reports in its own terms (an invalid model for shape inference, an unsupported attribute
// for a kernel).
std::optional<GeluApproximation> gelu_approximation(const Attributes& attrs);

}  // namespace loom::graph
