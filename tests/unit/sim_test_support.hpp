// Test policies and workloads for the simulator tests: a policy that follows a script, one that
// always takes the newest request, a recorder around any policy, and MISSION.md §1's two-model
// example.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "loom/policy.hpp"
#include "loom/sim.hpp"

namespace loom::sim::fixtures {

// One dispatched Step as a test expects it (hand-computed times).
struct Expected {
  std::size_t request, step;
  double decided, memory_start, memory_end, compute_start, compute_end;
};

inline void expect_schedule(const SimResult& result, const std::vector<Expected>& expected) {
  ASSERT_EQ(result.schedule.size(), expected.size());
  for (std::size_t i = 0; i < expected.size(); ++i) {
    const ScheduledStep& got = result.schedule[i];
    const Expected& want = expected[i];
    SCOPED_TRACE("dispatch " + std::to_string(i));
    EXPECT_EQ(got.request, want.request);
    EXPECT_EQ(got.step, want.step);
    EXPECT_DOUBLE_EQ(got.decided_us, want.decided);
    EXPECT_DOUBLE_EQ(got.memory_start_us, want.memory_start);
    EXPECT_DOUBLE_EQ(got.memory_end_us, want.memory_end);
    EXPECT_DOUBLE_EQ(got.compute_start_us, want.compute_start);
    EXPECT_DOUBLE_EQ(got.compute_end_us, want.compute_end);
  }
}

// What a policy was shown at one scheduling point.
struct Decision {
  std::vector<StepCandidate> candidates;
  AcceleratorState state;
  std::size_t picked = 0;
};

// Records every decision; subclasses say which candidate to take.
class RecordingPolicy : public SchedulingPolicy {
 public:
  std::size_t pick(std::span<const StepCandidate> candidates, const AcceleratorState& state) override {
    const std::size_t choice = choose(candidates);
    decisions.push_back({{candidates.begin(), candidates.end()}, state, choice});
    return choice;
  }
  std::vector<Decision> decisions;

 protected:
  virtual std::size_t choose(std::span<const StepCandidate> candidates) = 0;
};

// Takes the requests named by `order` (request ids), one per scheduling point.
class ScriptedPolicy final : public RecordingPolicy {
 public:
  explicit ScriptedPolicy(std::vector<std::uint64_t> order) : order_(std::move(order)) {}
  std::string_view name() const noexcept override { return "scripted"; }

 protected:
  std::size_t choose(std::span<const StepCandidate> candidates) override {
    const std::size_t n = decisions.size();
    if (n >= order_.size()) {
      ADD_FAILURE() << "the script has only " << order_.size() << " decisions";
      return 0;
    }
    for (std::size_t i = 0; i < candidates.size(); ++i)
      if (candidates[i].request_id == order_[n]) return i;
    ADD_FAILURE() << "decision " << n << ": request " << order_[n] << " is not a candidate";
    return 0;
  }

 private:
  std::vector<std::uint64_t> order_;
};

// The newest request first (the opposite of FIFO), so late arrivals and passing over show.
class NewestFirstPolicy final : public RecordingPolicy {
 public:
  std::string_view name() const noexcept override { return "newest-first"; }

 protected:
  std::size_t choose(std::span<const StepCandidate> candidates) override {
    const auto newest = std::max_element(candidates.begin(), candidates.end(),
                                         [](const auto& a, const auto& b) { return a.request_id < b.request_id; });
    return static_cast<std::size_t>(newest - candidates.begin());
  }
};

// Passes every decision to `inner` and records what it was shown and answered.
class RecordingWrapper final : public SchedulingPolicy {
 public:
  explicit RecordingWrapper(SchedulingPolicy& inner) : inner_(inner) {}
  std::string_view name() const noexcept override { return inner_.name(); }
  bool bounded() const noexcept override { return inner_.bounded(); }
  void reset() noexcept override { inner_.reset(); }
  std::size_t pick(std::span<const StepCandidate> candidates, const AcceleratorState& state) override {
    const std::size_t choice = inner_.pick(candidates, state);
    decisions.push_back({{candidates.begin(), candidates.end()}, state, choice});
    return choice;
  }
  std::vector<Decision> decisions;

 private:
  SchedulingPolicy& inner_;
};

// MISSION.md §1: model 1 ("cnn") compute-heavy, model 2 ("lstm") memory-heavy, one request of
// each at time 0. Every Step holds 100 bytes on chip; the chip holds two Steps.
//   cnn:  L11 memory 2 compute 4, L12 memory 2 compute 4
//   lstm: L21 memory 4 compute 2, L22 memory 4 compute 2
inline Workload mission_example() {
  Workload w;
  w.models = {{"cnn", {{"L11", 4, 2, 100}, {"L12", 4, 2, 100}}}, {"lstm", {{"L21", 2, 4, 100}, {"L22", 2, 4, 100}}}};
  w.requests = {{"cnn", 0, 0}, {"lstm", 0, 0}};
  w.onchip_capacity_bytes = 200;
  return w;
}

}  // namespace loom::sim::fixtures
