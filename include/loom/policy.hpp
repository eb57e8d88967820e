// The scheduling-policy seam: a policy sees candidate Steps and an estimate of the accelerator's
// state and says which candidate goes next. It never touches CUDA, so one policy object can drive
// the GPU runtime, the CPU backend and the simulator alike (docs/simulator.md, "Policies").
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace loom {

// What one Step costs on the two resources of MISSION.md §1.
struct StepCost {
  double compute_us = 0;                // estimated time on the compute resource
  double memory_us = 0;                 // estimated time on the memory-access resource
  std::uint64_t working_set_bytes = 0;  // held on chip while the Step runs
};

// Steps launched on a device and not yet finished, across all models, before the dispatcher waits
// (ExecutorOptions::max_inflight_steps, sim::SimOptions::max_inflight_steps). 16: on the
// simulator's GPU model, a mix of the built-in models (many Steps of a few microseconds, each
// launch 2.5 us of host time) leaves the GPU waiting for launches with 8 (idle-time 1.20x the
// streams baseline's makespan) and not with 16 (1.02x); bench/results/2026-11-25-sim-policies-gpu.md.
// Not yet measured on a GPU.
inline constexpr std::size_t kDefaultMaxInflightSteps = 16;

// Most Steps a request shows beyond its next one: a policy window is at most 1 + this.
inline constexpr std::size_t kMaxLookahead = 7;

// The next Step of one live request.
struct StepCandidate {
  std::uint64_t request_id = 0;  // unique per request, increasing in arrival order
  std::size_t model_index = 0;   // which loaded model
  std::size_t step_index = 0;    // position of the Step inside its model
  std::size_t step_count = 0;    // Steps in the model
  double arrival_us = 0;         // when the request became ready to run
  double compute_us = 0;         // estimated time on the compute resource
  double memory_us = 0;          // estimated time on the memory-access resource
  std::uint64_t bytes = 0;       // bytes the Step reads and writes
  std::uint64_t working_set_bytes = 0;
  std::uint32_t passed_over = 0;  // times this candidate was offered and not chosen
  int priority = 0;               // higher runs first where the policy honours priorities
  // The request's following Steps, in model order (lookahead[0] is Step step_index + 1):
  // min(kMaxLookahead, step_count - step_index - 1) of them, filled by every producer (the
  // executor and the simulator), so a policy can judge a window of upcoming Steps.
  std::array<StepCost, kMaxLookahead> lookahead{};
  std::size_t lookahead_count = 0;

  StepCost cost() const noexcept { return {compute_us, memory_us, working_set_bytes}; }
};

struct AcceleratorState {
  double now_us = 0;
  double compute_free_at_us = 0;            // when the compute resource finishes what it was given
  double memory_free_at_us = 0;             // when the memory-access resource finishes what it was given
  std::uint64_t onchip_used_bytes = 0;      // held now by Steps whose compute has not ended
  std::uint64_t onchip_capacity_bytes = 0;  // 0 = unlimited
  // Whether the device can load one Step while it computes another (a GPU; the simulator's
  // accelerator). False on a device that runs each Step to completion before the next starts
  // (the CPU backend): interleaving requests then overlaps nothing and only costs cache
  // locality, so a policy that interleaves for overlap should not.
  bool steps_overlap = true;
  // Whether each model's Steps run in launch order on the model's one stream (the executor; the
  // simulator's GPU model), so that Steps of two requests of one model never overlap each other:
  // interleaving them only delays the older request. False on the source text's accelerator,
  // where the next request's load may overlap the previous one's compute.
  bool one_stream_per_model = false;
};

class SchedulingPolicy {
 public:
  virtual ~SchedulingPolicy() = default;
  virtual std::string_view name() const noexcept = 0;
  // Index into `candidates` (never empty) of the Step to dispatch next. Candidates come in
  // arrival order (ascending request_id).
  virtual std::size_t pick(std::span<const StepCandidate> candidates, const AcceleratorState& state) = 0;
  // False when the policy models "launch everything at once and let the device decide": the
  // executor then does not bound the Steps it keeps in flight (ExecutorOptions::max_inflight_steps).
  virtual bool bounded() const noexcept { return true; }
  // Forgets what earlier decisions left behind (a round-robin cursor, a block in progress), so
  // the same candidates and states give the same answers again. simulate() calls it first.
  virtual void reset() noexcept {}
};

// Tuning of the idle-time policy; its constructor checks it.
struct PolicyOptions {
  // idle-time: a candidate passed over max(starvation_limit, n - 1) times
  // (StepCandidate::passed_over; n candidates at the decision, so at least one full turn of the
  // others) is taken next, before any estimate. At least 1.
  std::uint32_t starvation_limit = 8;
  // idle-time: Steps of each request the estimate looks at: its next Step and up to window - 1
  // of its lookahead. 1 judges each candidate by its own Step alone. 1 to kMaxLookahead + 1.
  std::size_t window = 4;
  // idle-time: blocks of small Steps. A Step is small when compute_us + memory_us < block_us.
  // Once the policy chooses a small Step, it keeps answering that request's next Step, without
  // scoring, while that Step is small and the unit's Steps together stay below block_us; the unit
  // is then one scheduling unit (MISSION.md §1: "a layer or a coarser block"). 0 turns blocks off.
  double block_us = 0;
};

// Runs each request to completion in arrival order: the baseline every other policy is measured
// against.
class FifoPolicy final : public SchedulingPolicy {
 public:
  std::string_view name() const noexcept override { return "fifo"; }
  std::size_t pick(std::span<const StepCandidate> candidates, const AcceleratorState& state) override;
};

// One Step per live request in turn: after request r, the live request with the next larger id,
// wrapping to the smallest. A request arriving mid-run joins the turn at its id's place.
class RoundRobinPolicy : public SchedulingPolicy {
 public:
  std::string_view name() const noexcept override { return "round-robin"; }
  std::size_t pick(std::span<const StepCandidate> candidates, const AcceleratorState& state) override;
  void reset() noexcept override { started_ = false; }

 private:
  bool started_ = false;
  std::uint64_t last_ = 0;  // request_id of the previous pick
};

// The "plain concurrent streams" baseline: every request is launched at once on its model's stream
// and the device interleaves them. The executor lifts its in-flight bound (bounded() is false), so
// launch order is the only thing the host decides; it is round-robin, which is also what the
// simulator (one Step at a time, in dispatch order) runs.
class StreamsPolicy final : public RoundRobinPolicy {
 public:
  std::string_view name() const noexcept override { return "streams"; }
  bool bounded() const noexcept override { return false; }
};

// MISSION.md §1: the candidate whose Steps would leave the compute and memory resources idle the
// least goes next. docs/simulator.md ("The idle-time policy") states the estimate exactly:
//   - on a device whose Steps cannot overlap (AcceleratorState::steps_overlap false: the CPU
//     backend) there is no idle to save: the earliest arrival goes next, as under FIFO;
//   - starvation guard: the candidate passed over most, once that is >= max(starvation_limit,
//     n - 1) among n candidates, goes next (ties: earliest arrival). n - 1: served in turn, each
//     of n candidates is passed over n - 1 times, so no order keeps every one below a lower limit;
//   - otherwise each candidate is scored by placing its Step on a copy of the accelerator state
//     and then, up to window - 1 more times, the Step (of any request, each request's Steps in
//     order, within its window) that idles the resources least; the score is the idle those
//     placements cause, total first, memory idle second; the smallest wins, ties to the candidate
//     passed over most, then the earliest arrival (the guard's order: equally good candidates take
//     turns, so they do not all reach the guard at once). A window of 1 is the plain greedy choice;
//   - blocks (block_us > 0): a chosen small Step starts a unit; the request's following small
//     Steps are answered without scoring or guard while the unit stays below block_us.
namespace detail {
// What a look-ahead of the idle-time policy costs (src/sched/idle_time.cpp): the idle it causes,
// total and on the memory resource, and how far apart the two resources' free times are after
// each placement, summed.
struct IdleTimeScore {
  double total = 0;
  double memory = 0;
  double imbalance = 0;
};
}  // namespace detail

class IdleTimePolicy final : public SchedulingPolicy {
 public:
  // Throws Error(invalid_argument) for a starvation_limit of 0, a window outside
  // [1, kMaxLookahead + 1] or a negative or non-finite block_us.
  explicit IdleTimePolicy(PolicyOptions options = {});
  std::string_view name() const noexcept override { return "idle-time"; }
  std::size_t pick(std::span<const StepCandidate> candidates, const AcceleratorState& state) override;
  void reset() noexcept override { block_active_ = false; }
  const PolicyOptions& options() const noexcept { return options_; }

 private:
  std::size_t choose(std::span<const StepCandidate> candidates, const AcceleratorState& state);

  PolicyOptions options_;
  // Scratch, per candidate, kept to avoid allocating per decision: its Steps placed in the
  // current look-ahead, its Steps within the window, the idle of its own Step, the look order.
  std::vector<std::uint8_t> cursor_, steps_;
  std::vector<detail::IdleTimeScore> first_;  // each candidate's own Step
  std::vector<std::size_t> order_;
  // Candidates left out of this decision (a younger request of a model, one_stream_per_model)
  // and each model's oldest candidate.
  std::vector<std::uint8_t> excluded_;
  std::vector<std::size_t> oldest_;
  // The unit in progress: its request, the Step expected next, and the time its Steps add up to.
  bool block_active_ = false;
  std::uint64_t block_request_ = 0;
  std::size_t block_next_step_ = 0;
  double block_used_us_ = 0;
};

// The built-in policy called `name` (one of policy_names()): fifo, round-robin, streams,
// idle-time. `options` tune idle-time (the others ignore them). Throws Error(invalid_argument)
// listing the known names for an unknown one, or naming a bad option.
std::unique_ptr<SchedulingPolicy> make_policy(std::string_view name, const PolicyOptions& options);
std::unique_ptr<SchedulingPolicy> make_policy(std::string_view name);
std::vector<std::string> policy_names();

}  // namespace loom
