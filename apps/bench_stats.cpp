// Latency statistics for loom-bench.
#include "bench_stats.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numeric>
#include <stdexcept>

namespace loom::bench {

double nearest_rank(const std::vector<double>& sorted, double p) {
  if (sorted.empty()) throw std::invalid_argument("nearest_rank: no values");
  const auto n = static_cast<double>(sorted.size());
  // The small epsilon keeps 0.95 * 100 = 95.00000000000001 from rounding up a whole rank.
  auto rank = static_cast<std::size_t>(std::ceil(p / 100.0 * n - 1e-9));
  rank = std::clamp<std::size_t>(rank, 1, sorted.size());
  return sorted[rank - 1];
}

std::string percentile_key(double p) {
  char text[32];
  std::snprintf(text, sizeof text, "p%g", p);
  return text;
}

LatencySummary summarize(std::vector<double> latencies_ms, const std::vector<double>& ps) {
  if (latencies_ms.empty()) throw std::invalid_argument("summarize: no latencies");
  std::sort(latencies_ms.begin(), latencies_ms.end());
  LatencySummary summary;
  summary.min = latencies_ms.front();
  summary.max = latencies_ms.back();
  summary.mean = std::accumulate(latencies_ms.begin(), latencies_ms.end(), 0.0) /
                 static_cast<double>(latencies_ms.size());
  summary.median = nearest_rank(latencies_ms, 50);
  for (double p : ps) summary.percentiles.emplace_back(p, nearest_rank(latencies_ms, p));
  return summary;
}

}  // namespace loom::bench
