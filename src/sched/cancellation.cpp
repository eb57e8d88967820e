#include "sched/cancellation.hpp"

#include <cmath>
#include <string>

#include "loom/error.hpp"

namespace loom::sched {

std::vector<bool> choose_cancellation_points(std::span<const double> step_us,
                                             std::span<const std::uint64_t> live_bytes_after,
                                             const CancellationOptions& options) {
  if (step_us.size() != live_bytes_after.size())
    throw Error(ErrorCode::invalid_argument, "cancellation points: " + std::to_string(step_us.size()) +
                                                 " Step durations but " + std::to_string(live_bytes_after.size()) +
                                                 " live-byte counts");
  if (!std::isfinite(options.interval_us) || options.interval_us < 0)
    throw Error(ErrorCode::invalid_argument, "cancellation interval must be a finite time >= 0");
  for (std::size_t i = 0; i < step_us.size(); ++i)
    if (!std::isfinite(step_us[i]) || step_us[i] < 0)
      throw Error(ErrorCode::invalid_argument,
                  "cancellation points: Step " + std::to_string(i) + " has a negative or non-finite duration");
  std::vector<bool> points(step_us.size(), false);
  double since = 0;  // estimated time since the previous point, up to the current boundary
  for (std::size_t i = 0; i + 1 < step_us.size(); ++i) {
    since += step_us[i];
    const bool qualifies = options.max_live_bytes == 0 || live_bytes_after[i] <= options.max_live_bytes;
    if (!qualifies) continue;
    // Take this boundary when waiting for the next one would overrun the interval.
    if (options.interval_us == 0 || since + step_us[i + 1] > options.interval_us) {
      points[i] = true;
      since = 0;
    }
  }
  return points;
}

}  // namespace loom::sched
