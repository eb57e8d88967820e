// Choosing cancellation points (MISSION.md §3): the Step boundaries at which lower-priority work
// may pause. Shared by the planner (real models) and the simulator, so both pause at the same
// places for the same Steps.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace loom::sched {

struct CancellationOptions {
  double interval_us = 1000;         // aim for at least one point per this much estimated time
  std::uint64_t max_live_bytes = 0;  // a boundary qualifies when its live bytes are at most this; 0 = any
};

// For Steps with estimated durations `step_us` and live bytes at the boundary after each
// (`live_bytes_after`, same length), returns one flag per Step: true when the boundary after it is
// a cancellation point. The boundary after the last Step is never one (the request is finished
// there). Rule: walking the Steps in order, a qualifying boundary becomes a point when the time
// since the previous point (or the start) would otherwise exceed interval_us by the next Step —
// i.e. each point is the last qualifying boundary before the interval runs out; when no
// qualifying boundary lies inside an interval, the first qualifying one after it is taken. An
// interval of 0 makes every qualifying boundary a point. Throws Error(invalid_argument) for
// mismatched lengths or a negative or non-finite interval or duration.
std::vector<bool> choose_cancellation_points(std::span<const double> step_us,
                                             std::span<const std::uint64_t> live_bytes_after,
                                             const CancellationOptions& options);

}  // namespace loom::sched
