// The plain-data helpers of loom/stats.hpp.
#include "loom/stats.hpp"

#include <algorithm>

namespace loom {

std::string_view stage_kind_name(StageKind kind) noexcept {
  switch (kind) {
    case StageKind::host:
      return "host";
    case StageKind::device:
      return "device";
    case StageKind::copy:
      return "copy";
  }
  return "host";
}

void LatencyHistogram::add(double seconds) noexcept {
  // The first bucket whose upper bound holds the value; past the last bound, the overflow bucket.
  const auto bound = std::lower_bound(kLatencyBucketsSeconds.begin(), kLatencyBucketsSeconds.end(), seconds);
  ++counts[static_cast<std::size_t>(bound - kLatencyBucketsSeconds.begin())];
  sum_seconds += seconds;
  ++count;
}

}  // namespace loom
