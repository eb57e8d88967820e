// The infer request parameters both front ends read ("priority", "timeout"), as Triton's clients
// send them, turned into InferRequest's fields by one rule (HTTP JSON and gRPC parameters alike).
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "loom/model_info.hpp"

namespace loom::serve {

// Triton's integer priority: 0 = the model's default (nullopt), 1 = the highest level (urgent),
// 2 = normal, 3 and above = background. Loom's names ("urgent", "normal", "background") are taken
// too. Throws Error(invalid_argument) for a negative level or an unknown name.
std::optional<Priority> priority_from_parameter(std::int64_t level);
std::optional<Priority> priority_from_parameter(std::string_view name);

// Triton's "timeout" parameter is in microseconds; InferRequest::timeout_ms in milliseconds.
// Throws Error(invalid_argument) for a negative or non-finite value.
double timeout_ms_from_parameter(double microseconds);

}  // namespace loom::serve
