// Statistics for loom-bench: nearest-rank latency percentiles, the makespan lower bound of a run
// (the simulator's definition) and how busy the device's streams were.
#pragma once

#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include "loom/executor.hpp"
#include "loom/trace.hpp"

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

// One request of a run, as the lower bound sees it: which model (an index into the ModelInfo list)
// and when it arrived, in µs on any clock shared by all requests.
struct RequestArrival {
  std::size_t model = 0;
  double arrival_us = 0;
};

// Lower bounds on a run's makespan (first arrival to last completion), in µs.
struct MakespanBound {
  double resource_us = 0;  // max(Σ compute_us, Σ memory_us) over the Steps of every request
  double chain_us = 0;     // max over requests of (arrival - first arrival + its model alone)
  double lower_us = 0;     // max of the two
};

// The bound loom::sim::simulate() reports for the same requests, with Step costs taken as
// loom::sim::sim_model() takes them from ModelInfo (a profile's measured_us where there is one,
// else the roofline estimates) and no on-chip capacity limit: "its model alone" is the model's
// Steps simulated on an otherwise idle device. No schedule can beat it, so makespan ÷ bound says
// how far a policy is from ideal, given the cost model. Zero for no requests. Throws
// std::invalid_argument for a model index outside `models`.
MakespanBound makespan_lower_bound(const std::vector<ModelInfo>& models, const std::vector<RequestArrival>& requests);

// Fraction of the window [from_us, to_us] in which at least one Step ran on some stream: the union
// of the timeline's "step" events on "stream:" tracks, clipped to the window (copies and host
// events do not count). 0 for an empty window. On the CPU backend the streams are CPU threads, so
// this is CPU busy time.
double step_busy_fraction(const Timeline& timeline, double from_us, double to_us);

}  // namespace loom::bench
