// The FIFO policy and the policy registry.
#include <algorithm>

#include "loom/error.hpp"
#include "loom/policy.hpp"

namespace loom {

std::size_t FifoPolicy::pick(std::span<const StepCandidate> candidates, const AcceleratorState&) {
  // The oldest request's next Step: requests run to completion one after another.
  auto oldest = std::min_element(candidates.begin(), candidates.end(),
                                 [](const auto& a, const auto& b) { return a.request_id < b.request_id; });
  return static_cast<std::size_t>(oldest - candidates.begin());
}

std::vector<std::string> policy_names() { return {"fifo"}; }

std::unique_ptr<SchedulingPolicy> make_policy(std::string_view name) {
  if (name == "fifo") return std::make_unique<FifoPolicy>();
  std::string known;
  for (const auto& n : policy_names()) known += (known.empty() ? "" : ", ") + n;
  throw Error(ErrorCode::invalid_argument, "unknown scheduling policy '" + std::string(name) + "' (known: " + known + ")");
}

}  // namespace loom
