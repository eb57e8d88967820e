// The device rules of devices.hpp.
#include "serve/devices.hpp"

#include <algorithm>

#include "loom/error.hpp"

namespace loom::serve {

std::vector<std::string> executor_devices(const std::string& device, int gpu_count) {
  if (device != "auto" && device != "cuda") return {device};
  if (gpu_count <= 0) {
    if (device == "auto") return {"cpu"};
    throw Error(ErrorCode::invalid_argument, "device \"cuda\": this machine has no usable GPU");
  }
  std::vector<std::string> all;
  for (int i = 0; i < gpu_count; ++i) all.push_back("cuda:" + std::to_string(i));
  return all;
}

std::optional<std::size_t> choose_device(const std::vector<std::uint64_t>& weight_bytes,
                                         std::optional<int> configured) {
  if (configured) {
    if (*configured < 0 || static_cast<std::size_t>(*configured) >= weight_bytes.size()) return std::nullopt;
    return static_cast<std::size_t>(*configured);
  }
  if (weight_bytes.empty()) return std::nullopt;
  // min_element keeps the first of equal elements: the lowest index on a tie.
  return static_cast<std::size_t>(std::min_element(weight_bytes.begin(), weight_bytes.end()) - weight_bytes.begin());
}

int executor_metrics_port(int base, std::size_t index) { return base > 0 ? base + static_cast<int>(index) : base; }

}  // namespace loom::serve
