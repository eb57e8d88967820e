// Round-robin (and the streams baseline, which launches in the same order): one Step per live
// request in turn, by request id, so the turn does not depend on where a request sits in the list.
#include "loom/policy.hpp"

namespace loom {

std::size_t RoundRobinPolicy::pick(std::span<const StepCandidate> candidates, const AcceleratorState&) {
  // The smallest id after the previous pick; when there is none, the smallest id (wrap around).
  std::size_t next = candidates.size(), first = 0;
  for (std::size_t i = 0; i < candidates.size(); ++i) {
    const std::uint64_t id = candidates[i].request_id;
    if (id < candidates[first].request_id) first = i;
    if (started_ && id > last_ && (next == candidates.size() || id < candidates[next].request_id)) next = i;
  }
  if (next == candidates.size()) next = first;
  started_ = true;
  last_ = candidates[next].request_id;
  return next;
}

}  // namespace loom
