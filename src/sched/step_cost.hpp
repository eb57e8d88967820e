// The cost a scheduler uses for a compiled Step, shared by the executor's candidates and the
// simulator's models of real Steps so both see the same numbers.
#pragma once

#include "loom/model_info.hpp"
#include "loom/policy.hpp"

namespace loom::sched {

// The roofline estimate; where the device profile measured the Step (measured_us > 0), the
// measured time split between memory and compute in the roofline's proportion (all compute when
// the roofline says nothing), so that the Step alone lasts what was measured.
inline StepCost scheduling_cost(const StepInfo& step) {
  StepCost cost{step.compute_us, step.memory_us, step.working_set_bytes};
  if (step.measured_us > 0) {
    const double roofline = step.compute_us + step.memory_us;
    cost.memory_us = roofline > 0 ? step.measured_us * (step.memory_us / roofline) : 0;
    cost.compute_us = step.measured_us - cost.memory_us;
  }
  return cost;
}

}  // namespace loom::sched
