// Latency statistics for loom-bench: nearest-rank percentiles over the measured requests.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace loom::bench {

// Nearest-rank percentile of `sorted` (ascending, non-empty): the value at rank ceil(p/100 * n),
// counted from 1 and clamped to [1, n]. p is in (0, 100]. Every reported percentile is one
// of the measured values, never an interpolation.
double nearest_rank(const std::vector<double>& sorted, double p);

// "p90", "p99.9": the key a percentile gets in the JSON report.
std::string percentile_key(double p);

struct LatencySummary {
  double min = 0;
  double mean = 0;
  double median = 0;  // nearest-rank p50
  double max = 0;
  std::vector<std::pair<double, double>> percentiles;  // (p, value), in the order asked for
};

// Summary of `latencies_ms` (any order, non-empty) with the percentiles `ps`.
LatencySummary summarize(std::vector<double> latencies_ms, const std::vector<double>& ps);

}  // namespace loom::bench
