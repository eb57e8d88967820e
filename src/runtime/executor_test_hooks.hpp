// A test seam of the Executor, private to Loom's own tests: hooks on the dispatcher thread that
// make an exact interleaving reproducible (an urgent request arriving right after Step k, a pause
// inside a Step at a known moment). Not part of the public API.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "loom/executor.hpp"

namespace loom::runtime {

struct ExecutorTestHooks {
  // Called on the dispatcher thread after each Step it launches, with the Step's model and how
  // many of that request's Steps are launched now. The hook may submit() requests; the dispatcher
  // then makes no further decision until the number of requests that have reached it since the
  // start is at least the value returned (0: carry on at once), so "an urgent request arrives
  // right after Step k" is reproducible. A request that fails before the dispatcher (bad input,
  // expired) never reaches it; the wait also ends at shutdown. An exception counts as 0.
  std::function<std::uint64_t(const std::string& model, std::size_t steps_launched)> after_step;
  // Called on the dispatcher thread just before it launches a Step that can pause inside
  // (StepInfo::pausable_inside) with the request's pause flag armed, i.e. with preemption on,
  // with the Step's model and index and the iteration it starts from (0, or where it paused).
  // From then until the Step ends, a request of a higher class handed to the dispatcher asks it
  // to pause. The hook may submit() requests; the launch then waits until the number of requests
  // handed to the dispatcher (past pre-process) since the start is at least the value returned
  // (0: launch at once). The wait also ends when pre-process stops. An exception counts as 0.
  // While set, pausable Steps run armed from the first request on.
  std::function<std::uint64_t(const std::string& model, std::size_t step, std::int32_t iteration)> pausable_step;

  // An executor whose dispatcher calls these hooks. Throws what Executor's constructor throws.
  static std::unique_ptr<Executor> make_executor(ExecutorOptions options, ExecutorTestHooks hooks);
};

}  // namespace loom::runtime
