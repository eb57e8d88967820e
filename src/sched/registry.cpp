// The built-in policies by name (ExecutorOptions::policy, loom-sim --policy, loom-bench --policy).
#include "loom/error.hpp"
#include "loom/policy.hpp"

namespace loom {

std::vector<std::string> policy_names() { return {"fifo", "round-robin", "streams", "idle-time"}; }

std::unique_ptr<SchedulingPolicy> make_policy(std::string_view name, const PolicyOptions& options) {
  if (name == "fifo") return std::make_unique<FifoPolicy>();
  if (name == "round-robin") return std::make_unique<RoundRobinPolicy>();
  if (name == "streams") return std::make_unique<StreamsPolicy>();
  if (name == "idle-time") return std::make_unique<IdleTimePolicy>(options);
  std::string known;
  for (const auto& n : policy_names()) known += (known.empty() ? "" : ", ") + n;
  throw Error(ErrorCode::invalid_argument,
              "unknown scheduling policy '" + std::string(name) + "' (known: " + known + ")");
}

std::unique_ptr<SchedulingPolicy> make_policy(std::string_view name) { return make_policy(name, PolicyOptions{}); }

}  // namespace loom
