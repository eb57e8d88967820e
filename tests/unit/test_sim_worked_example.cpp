// Seed 002's worked example (MISSION.md §3) on the simulator: bench/workloads/seed002-worked-example.json
// simulated with preemption off and on, the pipeline time of every frame derived by hand; and the
// host stage (SimRequest::host_us) that models its CPU post-processing, checked on its own.
#include <gtest/gtest.h>

#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "loom/error.hpp"
#include "loom/sim.hpp"

using namespace loom;
using namespace loom::sim;

namespace {

Workload worked_example() {
  const auto path = std::filesystem::path(LOOM_SOURCE_DIR) / "bench/workloads/seed002-worked-example.json";
  return read_workload(path.string());
}

// One model's data at a time in device memory: 25 MB live at every boundary of both models, so
// the planning model only fits once a paused perception is dumped. At the default host link
// (25 GB/s = 25e3 bytes/us) each dump and each restore takes 25e6 / 25e3 = 1000 us = 1 ms.
SimOptions worked_example_options(bool preemption) {
  SimOptions o;
  o.preemption = preemption;
  o.device_memory_bytes = 25'000'000;
  return o;
}

// Frame k = requests 2k (perception) and 2k+1 (planning). Its pipeline time: from its perception
// starting on the accelerator to its planning's end.
std::vector<double> pipeline_ms(const SimResult& r, std::size_t frames) {
  std::vector<double> ms;
  for (std::size_t k = 0; k < frames; ++k)
    ms.push_back((r.requests[2 * k + 1].finish_us - r.requests[2 * k].start_us) / 1000);
  return ms;
}

}  // namespace

// The timeline, in ms. P(k) = perception of frame k (30 Steps of 1 ms, a point after each),
// C(k) = its CPU post-processing (host stage, 15), L(k) = its planning (10, urgent). P(k+1) is
// submitted when P(k) ends (frames back to back); C(k) starts then too, L(k) arrives when it ends.
//
// Without preemption (the text's figure 3), P(k+1) runs while C(k) does and L(k) waits for it:
//   P0 [0,30]; C0 [30,45]; P1 [30,60]; L0 [60,70]            frame 0: 70 (no L(-1) in the way)
//   P2 submitted at 60 waits for L0 (urgent): P2 [70,100]; C1 [60,75]; L1 [100,110]
//                                                           frame 1: 110 - 30 = 80
//   from then on every 40: P(k) [40k-10, 40k+20], L(k) [40k+60, 40k+70] → 80 = 30 (P(k)) + 10
//   (L(k-1)) + 30 (P(k+1)) + 10 (L(k)): the text's "80 ms (30 ms 30 ms 10 ms 10 ms)".
//   The last frame (7) has no P(8) to wait for: 30 + 15 + 10 = 55.
// With preemption, 1 ms dump + 1 ms restore (figure 4): L(k) arrives at P(k+1)'s 15th boundary,
// a cancellation point; P(k+1) pauses there, is dumped (1), L(k) runs (10), P(k+1) is restored (1)
// and resumes: P(k+1) takes 30 + 12 = 42.
//   P0 [0,30]; C0 [30,45]; P1 [30,45], dump [45,46], L0 [46,56], restore [56,57], P1 [57,72]
//                                                           frame 0: 56 (P0 was not interrupted)
//   P2 [72,87], C1 [72,87], dump [87,88], L1 [88,98], ...   frame 1: 98 - 30 = 68
//   every frame after: 42 (P(k), interrupted once) + 15 + 1 (its own dump of P(k+1)) + 10 = 68.
//   The last frame pauses nothing for its planning: 42 + 15 + 10 = 67.
// The text says 67 for the pipeline with preemption: 55 + 12 for the one interruption of the
// frame's perception; it leaves out the 1 ms its own planning waits for P(k+1)'s dump, which a
// frame in the middle of the stream pays (68; the last frame, 67). Both are within 1 ms of 67.
// The ideal: 30 + 15 + 10 = 55, the perception alone, the host stage, the planning alone.
TEST(SimWorkedExample, Seed002PipelineIs80WithoutPreemptionAnd67With) {
  const Workload w = worked_example();
  ASSERT_EQ(w.requests.size(), 16u);
  constexpr std::size_t frames = 8;
  FifoPolicy fifo;

  const SimResult off = simulate(w, fifo, worked_example_options(false));
  EXPECT_TRUE(off.preemptions.empty());
  const std::vector<double> without = pipeline_ms(off, frames);
  EXPECT_DOUBLE_EQ(without.front(), 70);
  for (std::size_t k = 1; k + 1 < frames; ++k) {
    EXPECT_DOUBLE_EQ(without[k], 80) << "frame " << k;
    EXPECT_NEAR(without[k], 80, 1) << "frame " << k;  // the text's figure
  }
  EXPECT_DOUBLE_EQ(without.back(), 55);
  EXPECT_DOUBLE_EQ(off.requests[3].finish_us, 110'000);  // L1, as derived above

  const SimResult on = simulate(w, fifo, worked_example_options(true));
  const std::vector<double> with = pipeline_ms(on, frames);
  EXPECT_DOUBLE_EQ(with.front(), 56);
  for (std::size_t k = 1; k + 1 < frames; ++k) {
    EXPECT_DOUBLE_EQ(with[k], 68) << "frame " << k;
    EXPECT_NEAR(with[k], 67, 1) << "frame " << k;  // the text's figure
  }
  EXPECT_DOUBLE_EQ(with.back(), 67);
  // One pause per planning that finds a perception running (frames 0 to 6), each after the
  // perception's 15th Step, 25 MB dumped and restored in 1 ms each.
  ASSERT_EQ(on.preemptions.size(), frames - 1);
  for (const Preemption& p : on.preemptions) {
    EXPECT_EQ(p.after_step, 14u);
    EXPECT_EQ(p.bytes_dumped, 25'000'000u);
    EXPECT_DOUBLE_EQ(p.dump_end_us - p.dump_start_us, 1000);
    EXPECT_DOUBLE_EQ(p.restore_end_us - p.restore_start_us, 1000);
  }
  const Preemption& first = on.preemptions[0];
  EXPECT_EQ(first.request, 2u);  // P1
  EXPECT_DOUBLE_EQ(first.paused_at_us, 45'000);
  EXPECT_DOUBLE_EQ(first.dump_start_us, 45'000);
  EXPECT_DOUBLE_EQ(first.restore_start_us, 56'000);
  EXPECT_DOUBLE_EQ(first.resumed_at_us, 57'000);

  // The ideal bound: every frame takes at least its perception alone + host stage + planning alone.
  const double ideal_ms = (on.model_alone_us[0] + w.requests[1].host_us + on.model_alone_us[1]) / 1000;
  EXPECT_DOUBLE_EQ(ideal_ms, 55);
  for (std::size_t k = 0; k < frames; ++k) {
    EXPECT_GE(without[k], ideal_ms) << "frame " << k;
    EXPECT_GE(with[k], ideal_ms) << "frame " << k;
  }
  // The host stages never overlap (one CPU): 8 of 15 ms.
  EXPECT_DOUBLE_EQ(on.host_cpu_busy_us, 8 * 15'000);
  EXPECT_DOUBLE_EQ(on.requests[1].host_start_us, 30'000);
  EXPECT_DOUBLE_EQ(on.requests[1].arrival_us, 45'000);
}

// Two host stages submitted while the host CPU is busy wait for it, first submitted first.
//   "m": one Step, memory 1, compute 1. r0 live at 0 (no host stage). r1 and r2 follow r0, each
//   with 3 us of host work and delays 0 and 1: r0 ends at 2; r1 submitted at 2, host [2,5], live
//   at 5: memory [5,6], compute [6,7]; r2 submitted at 3, waits for the CPU, host [5,8], live at 8:
//   [8,9] [9,10]. A request with neither `follows` nor host work is unchanged.
TEST(SimWorkedExample, HostStagesShareOneHostCpu) {
  Workload w;
  w.models = {{"m", {{"s", 1, 1, 0}}}};
  w.requests = {{"m", 0, 0}, {"m", 0, 0, 0, 3}, {"m", 1, 0, 0, 3}};
  FifoPolicy fifo;
  const SimResult r = simulate(w, fifo);
  EXPECT_DOUBLE_EQ(r.requests[1].submitted_us, 2);
  EXPECT_DOUBLE_EQ(r.requests[1].host_start_us, 2);
  EXPECT_DOUBLE_EQ(r.requests[1].arrival_us, 5);
  EXPECT_DOUBLE_EQ(r.requests[1].finish_us, 7);
  EXPECT_DOUBLE_EQ(r.requests[2].submitted_us, 3);
  EXPECT_DOUBLE_EQ(r.requests[2].host_start_us, 5);
  EXPECT_DOUBLE_EQ(r.requests[2].arrival_us, 8);
  EXPECT_DOUBLE_EQ(r.requests[2].finish_us, 10);
  EXPECT_DOUBLE_EQ(r.requests[2].latency_us, 2);  // device side only
  EXPECT_DOUBLE_EQ(r.host_cpu_busy_us, 6);
  EXPECT_DOUBLE_EQ(r.requests[0].submitted_us, 0);
  std::vector<std::string> host;
  for (const TraceEvent& e : r.timeline.events())
    if (e.track == "sim:host-cpu") host.push_back(e.name + "@" + std::to_string(static_cast<int>(e.start_us)));
  EXPECT_EQ(host, (std::vector<std::string>{"host m#1@2", "host m#2@5"}));
  const auto doc = nlohmann::json::parse(result_json(r, w, "fifo"));
  EXPECT_DOUBLE_EQ(doc.at("host_cpu_busy_us").get<double>(), 6);
  EXPECT_DOUBLE_EQ(doc.at("requests")[2].at("host_start_us").get<double>(), 5);

  // Without `follows`: submitted at arrival_us, live host_us later.
  w.requests = {{"m", 4, 0, std::nullopt, 2.5}};
  const SimResult alone = simulate(w, fifo);
  EXPECT_DOUBLE_EQ(alone.requests[0].arrival_us, 6.5);
  EXPECT_DOUBLE_EQ(alone.requests[0].finish_us, 8.5);

  w.requests[0].host_us = -1;
  try {
    simulate(w, fifo);
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("requests[0].host_us"), std::string::npos) << e.what();
  }
}

// The file field: read, validated with the field named, and written back by workload_json.
TEST(SimWorkedExample, HostUsInTheWorkloadFile) {
  const std::string text = R"({"models": [{"name": "m", "steps": [{"compute_us": 1, "memory_us": 1}]}],
    "requests": [{"model": "m"}, {"model": "m", "follows": 0, "host_us": 1500}]})";
  std::istringstream in(text);
  const Workload w = parse_workload(in, "w.json");
  ASSERT_EQ(w.requests.size(), 2u);
  EXPECT_DOUBLE_EQ(w.requests[0].host_us, 0);
  EXPECT_DOUBLE_EQ(w.requests[1].host_us, 1500);
  std::istringstream back(workload_json(w));
  const Workload again = parse_workload(back, "again.json");
  EXPECT_DOUBLE_EQ(again.requests[1].host_us, 1500);
  EXPECT_EQ(nlohmann::json::parse(workload_json(w)).at("requests")[0].count("host_us"), 0u);  // 0 is not written

  for (const char* bad : {R"("host_us": -2)", R"("host_us": "15 ms")"}) {
    std::istringstream bad_in(std::string(R"({"models": [{"name": "m", "steps": [{"compute_us": 1, "memory_us": 1}]}],
      "requests": [{"model": "m", )") +
                              bad + "}]}");
    try {
      parse_workload(bad_in, "w.json");
      ADD_FAILURE() << "no error for " << bad;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("w.json: requests[0].host_us"), std::string::npos) << e.what();
    }
  }
}
