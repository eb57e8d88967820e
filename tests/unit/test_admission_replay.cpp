// The executor and the simulator obey one rulebook (sched/admission.hpp): the same scenario — a
// long request preempted by an urgent one at a cancellation point, under a memory limit that
// forces its live bytes out — run through the executor on the CPU backend and through the
// simulator built from the executor's own Steps gives the same decisions in the same order
// (every pick, pause, dump and restore).
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "loom/executor.hpp"
#include "loom/policy.hpp"
#include "loom/sim.hpp"
#include "loom/workloads.hpp"
#include "test_support.hpp"
#include "unit/test_executor_preempt_support.hpp"

using namespace loom;
using namespace loom::test_support;

namespace {

// Within one decision: pauses, then dumps, then restores, then the pick they made room for.
int rank_of(const std::string& action) {
  static const std::map<std::string, int> ranks = {{"pause", 0}, {"dump", 1}, {"restore", 2}, {"pick", 3}};
  return ranks.at(action);
}

// "pick long 3", "pause long 2", "dump long 2", "restore long 2".
std::vector<std::string> executor_decisions(const std::vector<TraceEvent>& events) {
  std::vector<std::tuple<double, int, std::string>> ordered;
  for (const TraceEvent& e : events) {
    if (e.category == "decision") {
      ordered.emplace_back(e.start_us, rank_of("pick"), "pick " + e.args.at("model") + " " + e.args.at("step"));
    } else if (e.category == "preempt") {
      const std::string& action = e.args.at("action");
      if (action == "resume") continue;
      ordered.emplace_back(e.start_us, rank_of(action), action + " " + e.args.at("model") + " " + e.args.at("step"));
    }
  }
  std::stable_sort(ordered.begin(), ordered.end(), [](const auto& a, const auto& b) {
    return std::get<0>(a) != std::get<0>(b) ? std::get<0>(a) < std::get<0>(b) : std::get<1>(a) < std::get<1>(b);
  });
  std::vector<std::string> out;
  for (const auto& entry : ordered) out.push_back(std::get<2>(entry));
  return out;
}

// The same strings from a simulation: each preemption event names the decision (schedule index)
// that caused it.
std::vector<std::string> simulator_decisions(const sim::Workload& workload, const sim::SimResult& result) {
  std::map<std::size_t, std::vector<std::pair<int, std::string>>> by_decision;
  for (const TraceEvent& e : result.timeline.events()) {
    if (e.category != "preempt" || e.track.rfind("request:", 0) != 0) continue;  // (dumps show on the link too)
    const std::string action = e.name.substr(0, e.name.find(' '));
    if (action == "resume") continue;
    by_decision[std::stoul(e.args.at("decision"))].emplace_back(
        rank_of(action), action + " " + e.args.at("model") + " " + e.args.at("after_step"));
  }
  std::vector<std::string> out;
  for (std::size_t i = 0; i < result.schedule.size(); ++i) {
    auto& before = by_decision[i];
    std::stable_sort(before.begin(), before.end());
    for (const auto& [rank, text] : before) out.push_back(text);
    const sim::ScheduledStep& s = result.schedule[i];
    out.push_back("pick " + workload.requests[s.request].model + " " + std::to_string(s.step));
  }
  return out;
}

sim::SimModel sim_model(const ModelInfo& info, const std::string& name) {
  sim::SimModel m;
  m.name = name;
  for (const StepInfo& s : info.steps) {
    sim::SimStep step;
    step.name = s.name;
    step.compute_us = std::max(s.compute_us, 0.01);
    step.memory_us = std::max(s.memory_us, 0.01);
    step.live_bytes_after = s.live_bytes_after;
    step.cancellation_point = s.cancellation_point;  // the executor's points, exactly
    m.steps.push_back(step);
  }
  return m;
}

std::uint64_t largest_live(const ModelInfo& info) {
  std::uint64_t most = 0;
  for (const StepInfo& s : info.steps) most = std::max(most, s.live_bytes_after);
  return most;
}

TEST(AdmissionReplay, ExecutorAndSimulatorDecideInTheSameOrder) {
  ExecutorOptions options;
  options.device = "cpu";
  options.profile = "none";
  options.policy = "fifo";
  options.cancellation_interval_us = 0;  // every boundary a point
  const Model long_model = workloads::resnet_cnn(1, workloads::Size::small, 11);
  const Model urgent_model = workloads::lstm_seq(1, workloads::Size::small, 12);
  ModelInfo long_info, urgent_info;
  {
    Executor probe(options);
    probe.load(long_model, "long");
    probe.load(urgent_model, "urgent");
    long_info = probe.model_info("long");
    urgent_info = probe.model_info("urgent");
    // Room for either request's arena, never both: the urgent one needs the long one's memory.
    options.arena_memory_limit_bytes = std::max(long_info.activation_bytes, urgent_info.activation_bytes);
    ASSERT_LT(options.arena_memory_limit_bytes, long_info.activation_bytes + urgent_info.activation_bytes);
  }
  const std::vector<std::size_t> points = cancellation_points(long_info);
  ASSERT_GE(points.size(), 2u);
  const auto long_in = random_inputs(long_model, 301), urgent_in = random_inputs(urgent_model, 302);

  // The simulator, from the executor's Steps, with room for one arena of its own measure.
  sim::Workload workload;
  workload.models = {sim_model(long_info, "long"), sim_model(urgent_info, "urgent")};
  sim::SimOptions sim_options;
  sim_options.device_memory_bytes = std::max(largest_live(long_info), largest_live(urgent_info));
  ASSERT_LT(sim_options.device_memory_bytes, largest_live(long_info) + largest_live(urgent_info));
  std::unique_ptr<SchedulingPolicy> fifo = make_policy("fifo");

  for (std::size_t k : {points.front(), points[points.size() / 2]}) {
    SCOPED_TRACE("urgent request after Step " + std::to_string(k) + " of the long one");
    // Executor: the urgent request reaches the dispatcher once the long one launched k+1 Steps.
    PreemptionHarness harness(options, long_model, urgent_model);
    (void)harness.run(long_in, urgent_in, k + 1);
    const std::vector<std::string> executed = executor_decisions(harness.executor().timeline().events());

    // Simulator: the urgent request arrives at the decision of the long one's Step k+1.
    sim::Workload alone = workload;
    alone.requests = {sim::SimRequest{"long", 0, 0}};
    const double arrival = sim::simulate(alone, *fifo, sim_options).schedule[k + 1].decided_us;
    workload.requests = {sim::SimRequest{"long", 0, static_cast<int>(Priority::normal)},
                         sim::SimRequest{"urgent", arrival, static_cast<int>(Priority::urgent)}};
    const std::vector<std::string> simulated =
        simulator_decisions(workload, sim::simulate(workload, *fifo, sim_options));

    EXPECT_EQ(executed, simulated);
    // And the scenario is the one meant: a pause, a dump and a restore after Step k.
    const std::string after = "long " + std::to_string(k);
    for (const char* action : {"pause ", "dump ", "restore "})
      EXPECT_NE(std::find(executed.begin(), executed.end(), action + after), executed.end()) << action << after;
  }
}

}  // namespace
