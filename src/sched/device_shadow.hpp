// A host-side estimate of the two-resource accelerator of MISSION.md §1, from Step costs alone:
// the idle-time policy places candidate Steps on a copy to see the idle they would cause, and the
// executor places the Steps it launches on one to estimate the AcceleratorState it gives policies.
// Header-only and allocation-free: the policy copies it many times per decision.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>

#include "loom/policy.hpp"

namespace loom::sched {

// Idle time a placement causes on each resource.
struct Idle {
  double compute_us = 0;
  double memory_us = 0;
  // Compute free − memory free after the placement: how far compute runs ahead of the loads.
  double imbalance_us = 0;
  double total() const noexcept { return compute_us + memory_us; }
};

// The same model as the simulator (docs/simulator.md), seen from the host: a Step's memory phase
// starts when the memory resource is free and its working set fits on chip; its compute phase
// starts when its memory phase has ended and the compute resource is free; a Step holds its
// working set until its compute ends. Bytes on chip whose release time is unknown (the state's
// onchip_used_bytes) are taken to be held until compute_free_at_us: the running layer's compute
// frees them (MISSION.md §1: "until the running layer's compute finishes").
class DeviceShadow {
 public:
  DeviceShadow() = default;
  explicit DeviceShadow(const AcceleratorState& state) noexcept
      : now_(state.now_us),
        memory_free_(state.memory_free_at_us),
        compute_free_(state.compute_free_at_us),
        capacity_(state.onchip_capacity_bytes),
        overlap_(state.steps_overlap),
        model_streams_(state.one_stream_per_model) {
    if (capacity_ > 0 && state.onchip_used_bytes > 0)
      push_hold(std::max(state.compute_free_at_us, state.now_us), state.onchip_used_bytes);
  }

  // The idle that dispatching `step` now would cause, without dispatching it:
  //   memory idle  = how long the memory resource, free at t1 = max(now, memory free), waits for
  //                  on-chip room (releases of earlier Steps' working sets);
  //   compute idle = how long the compute resource, free at max(now, compute free), waits for
  //                  the Step's memory phase to end (memory time − the gap, when positive).
  Idle estimate(const StepCost& step) const noexcept {
    const double t1 = std::max(now_, memory_free_);
    const double start = capacity_wait_end(t1, need(step));
    const double memory_end = start + step.memory_us;
    const double compute_end = std::max(memory_end, compute_free_) + step.compute_us;
    return {std::max(0.0, memory_end - std::max(compute_free_, now_)), start - t1, compute_end - memory_end};
  }

  // Dispatches `step` now. The next scheduling point (`now`) becomes the end of its memory phase.
  Idle place(const StepCost& step) noexcept {
    const Idle idle = dispatch(step);
    now_ = memory_free_;
    return idle;
  }

  // Dispatches `step` now and stays at `now`: the executor decides again at once.
  void launch(const StepCost& step) noexcept { dispatch(step); }

  // Time moves to `t` (never back); on-chip bytes released by then are freed.
  void advance_to(double t) noexcept {
    now_ = std::max(now_, t);
    while (count_ > 0 && holds_[0].release_us <= now_) pop_hold();
  }

  // The device was seen idle at `t` (everything launched has finished): forget what the
  // estimate still had queued, so estimates that ran slow do not drift ahead of the device.
  void idle_at(double t) noexcept {
    advance_to(t);
    memory_free_ = std::min(memory_free_, now_);
    compute_free_ = std::min(compute_free_, now_);
    count_ = 0;
    used_ = 0;
  }

  AcceleratorState state() const noexcept {
    return {now_, compute_free_, memory_free_, used_, capacity_, overlap_, model_streams_};
  }

 private:
  // Pending releases, in release order (compute ends are dispatched in order, so appending
  // keeps the order). When full, the two earliest merge at the later time: a safe overestimate.
  // Enough for a policy's whole look-ahead (the state's bytes + a window of Steps); the executor,
  // with more Steps in flight, merges.
  static constexpr std::size_t kMaxHolds = kMaxLookahead + 2;
  struct Hold {
    double release_us = 0;
    std::uint64_t bytes = 0;
  };

  std::uint64_t need(const StepCost& step) const noexcept {
    // A working set larger than the chip streams through it: it needs the whole chip.
    return capacity_ == 0 ? 0 : std::min(step.working_set_bytes, capacity_);
  }

  // Earliest time >= t1 at which `need` more bytes fit beside the holds.
  double capacity_wait_end(double t1, std::uint64_t need) const noexcept {
    if (capacity_ == 0 || used_ + need <= capacity_) return t1;
    std::uint64_t used = used_;
    double t = t1;
    for (std::size_t i = 0; i < count_ && used + need > capacity_; ++i) {
      t = std::max(t, holds_[i].release_us);
      used -= holds_[i].bytes;
    }
    return t;
  }

  Idle dispatch(const StepCost& step) noexcept {
    const double t1 = std::max(now_, memory_free_);
    const std::uint64_t bytes = need(step);
    const double start = capacity_wait_end(t1, bytes);
    while (count_ > 0 && holds_[0].release_us <= start) pop_hold();
    const double memory_end = start + step.memory_us;
    const double compute_end = std::max(memory_end, compute_free_) + step.compute_us;
    const Idle idle{std::max(0.0, memory_end - std::max(compute_free_, now_)), start - t1, compute_end - memory_end};
    memory_free_ = memory_end;
    compute_free_ = compute_end;
    if (bytes > 0) push_hold(compute_free_, bytes);
    return idle;
  }

  void push_hold(double release_us, std::uint64_t bytes) noexcept {
    if (count_ == kMaxHolds) {
      holds_[1].bytes += holds_[0].bytes;
      std::copy(holds_.begin() + 1, holds_.begin() + count_, holds_.begin());
      --count_;
    }
    holds_[count_++] = {release_us, bytes};
    used_ += bytes;
  }

  void pop_hold() noexcept {
    used_ -= holds_[0].bytes;
    std::copy(holds_.begin() + 1, holds_.begin() + count_, holds_.begin());
    --count_;
  }

  double now_ = 0, memory_free_ = 0, compute_free_ = 0;
  std::uint64_t capacity_ = 0, used_ = 0;
  bool overlap_ = true;         // AcceleratorState::steps_overlap, passed through
  bool model_streams_ = false;  // AcceleratorState::one_stream_per_model, passed through
  std::array<Hold, kMaxHolds> holds_{};
  std::size_t count_ = 0;
};

}  // namespace loom::sched
