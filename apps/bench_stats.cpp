// Statistics for loom-bench.
#include "bench_stats.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <numeric>
#include <stdexcept>

#include "loom/policy.hpp"
#include "loom/sim.hpp"

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
  summary.mean =
      std::accumulate(latencies_ms.begin(), latencies_ms.end(), 0.0) / static_cast<double>(latencies_ms.size());
  summary.median = nearest_rank(latencies_ms, 50);
  for (double p : ps) summary.percentiles.emplace_back(p, nearest_rank(latencies_ms, p));
  return summary;
}

MakespanBound makespan_lower_bound(const std::vector<ModelInfo>& models, const std::vector<RequestArrival>& requests) {
  MakespanBound bound;
  if (requests.empty()) return bound;
  // Per model: its Steps' total compute and memory time, and its time alone on the simulated
  // device (a Step's load overlaps its predecessor's compute there, so alone < Σ compute + memory).
  struct ModelCost {
    double compute_us = 0, memory_us = 0, alone_us = -1;
  };
  std::vector<ModelCost> costs(models.size());
  double first_arrival = std::numeric_limits<double>::infinity();
  for (const auto& request : requests) {
    if (request.model >= models.size())
      throw std::invalid_argument("makespan_lower_bound: request names model " + std::to_string(request.model) +
                                  " of " + std::to_string(models.size()));
    first_arrival = std::min(first_arrival, request.arrival_us);
  }
  double compute_us = 0, memory_us = 0;
  for (const auto& request : requests) {
    ModelCost& cost = costs[request.model];
    if (cost.alone_us < 0) {
      sim::SimModel model = sim::sim_model(models[request.model]);
      for (const auto& step : model.steps) {
        cost.compute_us += step.compute_us;
        cost.memory_us += step.memory_us;
      }
      cost.alone_us = 0;  // a model without Steps (the executor runs those) takes no device time
      if (!model.steps.empty()) {
        sim::Workload alone;
        alone.requests = {sim::SimRequest{model.name, 0, 0}};
        alone.models = {std::move(model)};
        FifoPolicy only_candidate;
        cost.alone_us = sim::simulate(alone, only_candidate).makespan_us;
      }
    }
    compute_us += cost.compute_us;
    memory_us += cost.memory_us;
    bound.chain_us = std::max(bound.chain_us, request.arrival_us - first_arrival + cost.alone_us);
  }
  bound.resource_us = std::max(compute_us, memory_us);
  bound.lower_us = std::max(bound.resource_us, bound.chain_us);
  return bound;
}

double step_busy_fraction(const Timeline& timeline, double from_us, double to_us) {
  if (!(to_us > from_us)) return 0;
  // Timeline::utilization() takes the union over device tracks; clipping the Steps to the window
  // first makes its span at most the window.
  Timeline steps;
  for (TraceEvent event : timeline.events()) {
    if (event.category != "step" || event.track.rfind("stream:", 0) != 0) continue;
    const double start = std::max(event.start_us, from_us);
    const double end = std::min(event.start_us + event.duration_us, to_us);
    if (end <= start) continue;
    event.start_us = start;
    event.duration_us = end - start;
    steps.add(std::move(event));
  }
  if (steps.empty()) return 0;
  const UtilizationSummary summary = steps.utilization();
  return summary.device_busy_fraction * summary.span_us / (to_us - from_us);
}

}  // namespace loom::bench
