// Re-balancing the host stages' threads (MISSION.md §4): from each stage's busy time per request
// over the last interval, which stage limits throughput, and whether a thread should go to it.
// A pure rule, so that its decisions can be checked on hand-computed figures.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace loom::runtime {

// One host stage over the last interval.
struct StageLoad {
  std::size_t threads = 1;
  double busy_us = 0;       // summed over its threads
  std::uint64_t items = 0;  // requests it finished
};

struct RebalanceChoice {
  enum class Move { none, add_to_pre, add_to_post, post_to_pre, pre_to_post };
  Move move = Move::none;
  bool saturated = false;  // the limiting stage was busy at least kStageSaturation of the interval
  double pre_us_per_request = 0;
  double post_us_per_request = 0;
  std::string reason;
};

// A stage is saturated when its threads were busy at least this fraction of the interval: only
// then can more threads raise throughput (otherwise something else, the device or the clients,
// limits it).
inline constexpr double kStageSaturation = 0.75;

// The stage that limits throughput is the one with the smaller capacity, threads / (busy time per
// request). When it is saturated it gets a thread: a new one while pre + post < `budget`, else one
// taken from the other stage when both capacities after the move exceed the limiting one now (so
// the move raises throughput and does not just move the bottleneck). No move when no stage
// finished a request in the interval, or when neither rule applies; `reason` says which.
RebalanceChoice choose_rebalance(const StageLoad& pre, const StageLoad& post, double interval_us, std::size_t budget);

}  // namespace loom::runtime
