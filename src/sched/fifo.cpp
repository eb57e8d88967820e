// The FIFO policy: the baseline every other policy is measured against.
#include <algorithm>

#include "loom/policy.hpp"

namespace loom {

std::size_t FifoPolicy::pick(std::span<const StepCandidate> candidates, const AcceleratorState&) {
  // The oldest request's next Step: requests run to completion one after another.
  auto oldest = std::min_element(candidates.begin(), candidates.end(),
                                 [](const auto& a, const auto& b) { return a.request_id < b.request_id; });
  return static_cast<std::size_t>(oldest - candidates.begin());
}

}  // namespace loom
