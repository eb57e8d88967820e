// One scheduling decision on the host: the idle-time policy choosing among N live models, each
// showing a window of Steps, against the state a busy device leaves (MISSION.md §1: the scheduler
// runs on the host at every scheduling point, so its cost is paid once per Step).
#include <benchmark/benchmark.h>

#include <cstdint>
#include <vector>

#include "loom/policy.hpp"

namespace {

// A fixed pseudo-random mix of compute-heavy and memory-heavy Steps (2 to 60 us each, working
// sets of 1 to 24 MiB against a 50 MiB chip), so candidates differ and capacity matters.
std::vector<loom::StepCandidate> make_candidates(std::size_t models) {
  std::uint64_t x = 0x9e3779b97f4a7c15ull;
  const auto next = [&x](double lo, double hi) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    return lo + (hi - lo) * double(x % 10000) / 10000.0;
  };
  const auto step = [&](std::size_t m) {
    const bool compute_heavy = m % 2 == 0;
    loom::StepCost c;
    c.compute_us = compute_heavy ? next(10, 60) : next(2, 15);
    c.memory_us = compute_heavy ? next(2, 15) : next(10, 60);
    c.working_set_bytes = static_cast<std::uint64_t>(next(1, 24) * (1 << 20));
    return c;
  };
  std::vector<loom::StepCandidate> candidates(models);
  for (std::size_t m = 0; m < models; ++m) {
    loom::StepCandidate& c = candidates[m];
    c.request_id = m;
    c.model_index = m;
    c.step_index = 3;
    c.step_count = 40;
    const loom::StepCost own = step(m);
    c.compute_us = own.compute_us;
    c.memory_us = own.memory_us;
    c.working_set_bytes = own.working_set_bytes;
    c.lookahead_count = loom::kMaxLookahead;
    for (auto& ahead : c.lookahead) ahead = step(m);
  }
  return candidates;
}

// Arguments: live models, window, on-chip capacity in MiB (0 = unlimited).
void BM_IdleTimeDecision(benchmark::State& bench) {
  const auto models = static_cast<std::size_t>(bench.range(0));
  loom::PolicyOptions options;
  options.window = static_cast<std::size_t>(bench.range(1));
  loom::IdleTimePolicy policy(options);
  const auto candidates = make_candidates(models);
  loom::AcceleratorState state;
  state.now_us = 1000;
  state.memory_free_at_us = 1012;
  state.compute_free_at_us = 1030;
  state.onchip_capacity_bytes = static_cast<std::uint64_t>(bench.range(2)) << 20;
  state.onchip_used_bytes = state.onchip_capacity_bytes / 2;
  for (auto _ : bench) benchmark::DoNotOptimize(policy.pick(candidates, state));
}
BENCHMARK(BM_IdleTimeDecision)
    ->ArgNames({"models", "window", "onchip_mib"})
    ->Args({16, 4, 50})  // the figure of record: 16 live models, a window of 4
    ->Args({16, 4, 0})
    ->Args({16, 2, 50})
    ->Args({16, 1, 50})
    ->Args({4, 4, 50})
    ->Args({64, 4, 50});

void BM_FifoDecision(benchmark::State& bench) {
  loom::FifoPolicy policy;
  const auto candidates = make_candidates(16);
  const loom::AcceleratorState state;
  for (auto _ : bench) benchmark::DoNotOptimize(policy.pick(candidates, state));
}
BENCHMARK(BM_FifoDecision);

}  // namespace
