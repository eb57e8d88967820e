// The scheduling-policy seam: a policy sees candidate Steps and an estimate of the accelerator's
// state and says which candidate goes next. It never touches CUDA, so one policy object can drive
// the GPU runtime, the CPU backend and the simulator alike.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace loom {

// The next Step of one live request.
struct StepCandidate {
  std::uint64_t request_id = 0;   // unique per request, increasing in arrival order
  std::size_t model_index = 0;    // which loaded model
  std::size_t step_index = 0;     // position of the Step inside its model
  std::size_t step_count = 0;     // Steps in the model
  double arrival_us = 0;          // when the request became ready to run
  double compute_us = 0;          // estimated time on the compute resource
  double memory_us = 0;           // estimated time on the memory-access resource
  std::uint64_t bytes = 0;        // bytes the Step reads and writes
  std::uint64_t working_set_bytes = 0;
  std::uint32_t passed_over = 0;  // times this candidate was offered and not chosen
  int priority = 0;               // higher runs first where the policy honours priorities
};

struct AcceleratorState {
  double now_us = 0;
  double compute_free_at_us = 0;  // when the compute resource finishes what it was given
  double memory_free_at_us = 0;   // when the memory-access resource finishes what it was given
  std::uint64_t onchip_used_bytes = 0;
  std::uint64_t onchip_capacity_bytes = 0;
};

class SchedulingPolicy {
 public:
  virtual ~SchedulingPolicy() = default;
  virtual std::string_view name() const noexcept = 0;
  // Index into `candidates` (never empty) of the Step to dispatch next.
  virtual std::size_t pick(std::span<const StepCandidate> candidates, const AcceleratorState& state) = 0;
};

// Runs each request to completion in arrival order: the baseline every other policy is measured
// against.
class FifoPolicy final : public SchedulingPolicy {
 public:
  std::string_view name() const noexcept override { return "fifo"; }
  std::size_t pick(std::span<const StepCandidate> candidates, const AcceleratorState& state) override;
};

// The built-in policy called `name`; throws Error(invalid_argument) listing the known names.
std::unique_ptr<SchedulingPolicy> make_policy(std::string_view name);
std::vector<std::string> policy_names();

}  // namespace loom
