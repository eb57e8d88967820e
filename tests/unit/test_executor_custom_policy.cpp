// ExecutorOptions::custom_policy: a user's SchedulingPolicy object drives the executor's
// decisions instead of a named policy, and its choices are the ones the executor follows.
#include <gtest/gtest.h>

#include <atomic>
#include <future>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "loom/executor.hpp"
#include "loom/workloads.hpp"

namespace {

using namespace loom;

// Always runs the newest arrival's Step (last-in first-out), counting its decisions.
class NewestFirst final : public SchedulingPolicy {
 public:
  std::string_view name() const noexcept override { return "newest-first"; }
  std::size_t pick(std::span<const StepCandidate> candidates, const AcceleratorState&) override {
    ++picks;
    if (candidates.size() > 1) ++choices;
    std::size_t newest = 0;
    for (std::size_t i = 1; i < candidates.size(); ++i)
      if (candidates[i].arrival_us > candidates[newest].arrival_us) newest = i;
    return newest;
  }
  void reset() noexcept override { ++resets; }
  std::atomic<int> picks{0}, choices{0}, resets{0};
};

TEST(ExecutorCustomPolicy, TheUsersPolicyMakesEveryDecision) {
  auto policy = std::make_shared<NewestFirst>();
  ExecutorOptions options;
  options.device = "cpu";
  options.profile = "none";
  options.policy = "no-such-policy";  // ignored: the object decides
  options.custom_policy = policy;
  options.record_timeline = true;
  Executor ex(options);
  EXPECT_EQ(ex.policy_name(), "newest-first");
  EXPECT_EQ(policy->resets.load(), 1) << "a policy object starts afresh with each executor";
  const Model m = workloads::resnet_cnn(1, workloads::Size::small, 3);
  ex.load(m, "cnn");
  std::vector<std::future<Outputs>> futures;
  for (int i = 0; i < 3; ++i) futures.push_back(ex.submit("cnn", random_inputs(m, 10 + i)));
  for (auto& f : futures) EXPECT_FALSE(f.get().empty());
  const std::size_t steps = ex.model_info("cnn").steps.size();
  EXPECT_EQ(policy->picks.load(), static_cast<int>(3 * steps));
  EXPECT_EQ(ex.stats().steps_dispatched, 3 * steps);
}

}  // namespace
