// The "priority" and "timeout" request parameters (request_parameters.hpp).
#include "request_parameters.hpp"

#include <cmath>
#include <string>

#include "loom/error.hpp"

namespace loom::serve {

std::optional<Priority> priority_from_parameter(std::int64_t level) {
  if (level < 0)
    throw Error(ErrorCode::invalid_argument,
                "parameter 'priority': " + std::to_string(level) +
                    " is negative (0: the model's default, 1: urgent, 2: normal, 3 and above: background)");
  if (level == 0) return std::nullopt;
  if (level == 1) return Priority::urgent;
  if (level == 2) return Priority::normal;
  return Priority::background;
}

std::optional<Priority> priority_from_parameter(std::string_view name) {
  try {
    return priority_from_name(name);
  } catch (const Error&) {
    throw Error(ErrorCode::invalid_argument, "parameter 'priority': '" + std::string(name) +
                                                 "' is not a priority (urgent, normal, background, or "
                                                 "Triton's level: 1 urgent, 2 normal, 3 and above background)");
  }
}

double timeout_ms_from_parameter(double microseconds) {
  if (!std::isfinite(microseconds) || microseconds < 0)
    throw Error(ErrorCode::invalid_argument,
                "parameter 'timeout': " + std::to_string(microseconds) + " is not a time in microseconds (0 or more)");
  return microseconds / 1000.0;
}

const char* shared_memory_parameter(std::string_view key) noexcept {
  for (const char* name : {"shared_memory_region", "shared_memory_byte_size", "shared_memory_offset"})
    if (key == name) return name;
  return nullptr;
}

bool asks_sequence_batching(std::int64_t sequence_id) noexcept { return sequence_id != 0; }
bool asks_sequence_batching(std::string_view sequence_id) noexcept { return !sequence_id.empty(); }

bool asks_classification(std::int64_t classes) noexcept { return classes != 0; }

std::optional<std::string> invalid_bool_byte(const Tensor& tensor) {
  if (tensor.dtype() != DType::boolean) return std::nullopt;
  const auto* bytes = static_cast<const std::uint8_t*>(tensor.data());
  for (std::int64_t k = 0; k < tensor.numel(); ++k)
    if (bytes[k] > 1)
      return "BOOL element " + std::to_string(k) + " is byte " + std::to_string(bytes[k]) + ", not 0 or 1";
  return std::nullopt;
}

std::vector<std::int64_t> config_dims(const ModelEntry& model, const TensorMetadata& tensor) {
  std::vector<std::int64_t> dims = tensor.shape;
  if (model.config.max_batch_size > 0 && !dims.empty()) dims.erase(dims.begin());
  return dims;
}

}  // namespace loom::serve
