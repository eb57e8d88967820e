// Checks a Workload before it is simulated: the rules the workload file's parser also enforces
// (with file positions), applied to a Workload built in code.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "loom/sim.hpp"

namespace loom::sim::detail {

// Index into workload.models of each request's model. Throws Error(invalid_argument) naming the
// field (e.g. "requests[3].model: unknown model 'x'") for an unknown or duplicate model name, a
// model without Steps, a negative or non-finite time, a Step larger than the on-chip capacity, or
// a `follows` that does not name an earlier request.
std::vector<std::size_t> check_workload(const Workload& workload);

// "12.5" style text for times in messages and trace args: shortest form that reads back exactly.
std::string number_text(double value);

}  // namespace loom::sim::detail
