// What every timeline the executor records must satisfy, whichever backend ran it: shared by the
// CPU test (tests/unit/test_trace.cpp) and the CUDA one (tests/gpu/test_trace_cuda.cpp).
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <future>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "loom/executor.hpp"
#include "loom/trace.hpp"

namespace loom::timeline_checks {

// Models the tests run together: different Step counts, so a mix-up between them shows.
inline Model timeline_model_alpha() {
  ModelBuilder mb("alpha", 7);
  auto x = mb.input("x", DType::f32, Shape{2, 8});
  x = mb.relu(mb.linear(x, 8, 16));
  x = mb.relu(mb.linear(x, 16, 16));
  mb.output(mb.linear(x, 16, 4));
  return mb.build();
}

inline Model timeline_model_beta() {
  ModelBuilder mb("beta", 8);
  auto x = mb.input("x", DType::f32, Shape{3, 6});
  x = mb.layer_norm(mb.linear(x, 6, 6), 6);
  mb.output(mb.relu(mb.linear(x, 6, 2)));
  return mb.build();
}

// Loads both models and runs `requests_per_model` requests of each from two client threads at
// once, so that the dispatcher chooses between the models' Steps. Returns the models' infos.
inline std::map<std::string, ModelInfo> run_timeline_models(Executor& executor, std::size_t requests_per_model) {
  const Model alpha = timeline_model_alpha(), beta = timeline_model_beta();
  executor.load(alpha);
  executor.load(beta);
  auto client = [&](const Model& model) {
    std::vector<std::future<Outputs>> futures;
    for (std::size_t i = 0; i < requests_per_model; ++i)
      futures.push_back(executor.submit(model.name, random_inputs(model, i)));
    for (auto& f : futures) f.get();
  };
  std::thread a(client, std::cref(alpha)), b(client, std::cref(beta));
  a.join();
  b.join();
  return {{"alpha", executor.model_info("alpha")}, {"beta", executor.model_info("beta")}};
}

// Times come from two clocks (timed device events, the host clock). On the CPU backend both are
// the host's steady clock, written to the ns; CUDA events resolve about 0.5 µs, and a start taken
// from the epoch in float milliseconds rounds differently from the previous end on the same stream.
constexpr double kCpuTimeTolerance_us = 1e-3;
constexpr double kCudaTimeTolerance_us = 2.0;

inline double end_of(const TraceEvent& e) { return e.start_us + e.duration_us; }

// `models`: name → info of every model that ran `requests_per_model` requests, all completed.
inline void expect_executor_timeline(const Timeline& timeline, const std::map<std::string, ModelInfo>& models,
                                     std::size_t requests_per_model, double tolerance_us) {
  const std::vector<TraceEvent> events = timeline.events();
  const std::vector<std::string> tracks = timeline.tracks();
  std::set<std::string> expected_tracks = {"stream:upload", "stream:download", "host:dispatcher"};
  for (const auto& [name, info] : models) {
    expected_tracks.insert("stream:" + name);
    expected_tracks.insert("request:" + name);
  }
  EXPECT_EQ(std::set<std::string>(tracks.begin(), tracks.end()), expected_tracks);

  // request id → its life, its Steps (step index → count), its copies.
  struct Seen {
    const TraceEvent* life = nullptr;
    std::string model;
    std::map<std::size_t, int> steps;
    std::vector<const TraceEvent*> step_events;
    int uploads = 0, downloads = 0, picks = 0;
  };
  std::map<std::string, Seen> requests;
  std::map<std::string, std::vector<const TraceEvent*>> stream_events;
  std::size_t total_steps = 0;
  for (const auto& e : events) {
    ASSERT_TRUE(e.args.count("request")) << e.name << " has no request arg";
    ASSERT_TRUE(e.args.count("model")) << e.name;
    Seen& seen = requests[e.args.at("request")];
    const std::string& model = e.args.at("model");
    if (seen.model.empty()) seen.model = model;
    EXPECT_EQ(seen.model, model) << e.name;
    ASSERT_TRUE(models.count(model)) << e.name;
    const ModelInfo& info = models.at(model);
    EXPECT_GE(e.start_us, 0.0) << e.name;
    EXPECT_GE(e.duration_us, 0.0) << e.name;
    if (e.track.rfind("stream:", 0) == 0) stream_events[e.track].push_back(&e);
    if (e.track == "request:" + model) {
      EXPECT_EQ(e.category, "request");
      EXPECT_EQ(e.args.at("status"), "ok");
      EXPECT_EQ(seen.life, nullptr) << "two lives for " << e.name;
      seen.life = &e;
    } else if (e.track == "stream:" + model) {
      EXPECT_EQ(e.category, "step");
      const std::size_t step = std::stoul(e.args.at("step"));
      ASSERT_LT(step, info.steps.size()) << e.name;
      EXPECT_EQ(e.name, model + "/" + info.steps[step].name);
      EXPECT_FALSE(e.args.at("ops").empty()) << e.name;
      ++seen.steps[step];
      seen.step_events.push_back(&e);
      ++total_steps;
    } else if (e.track == "stream:upload") {
      EXPECT_EQ(e.category, "copy");
      ++seen.uploads;
    } else if (e.track == "stream:download") {
      EXPECT_EQ(e.category, "copy");
      ++seen.downloads;
    } else if (e.track == "host:dispatcher") {
      EXPECT_EQ(e.category, "decision");
      EXPECT_EQ(e.duration_us, 0.0) << "decisions are instants";
      EXPECT_GE(std::stoul(e.args.at("candidates")), 1u);
      ++seen.picks;
    } else {
      ADD_FAILURE() << "event " << e.name << " on unexpected track " << e.track;
    }
  }

  std::map<std::string, std::size_t> lives_per_model;
  for (const auto& [id, seen] : requests) {
    const ModelInfo& info = models.at(seen.model);
    ASSERT_NE(seen.life, nullptr) << "request " << id << " has events but no life";
    ++lives_per_model[seen.model];
    EXPECT_EQ(seen.uploads, 1) << "request " << id;
    EXPECT_EQ(seen.downloads, 1) << "request " << id;
    EXPECT_EQ(seen.picks, static_cast<int>(info.steps.size())) << "request " << id;
    EXPECT_EQ(seen.steps.size(), info.steps.size()) << "request " << id;
    for (const auto& [step, count] : seen.steps) EXPECT_EQ(count, 1) << "request " << id << " step " << step;
    for (const TraceEvent* step : seen.step_events) {
      EXPECT_GE(step->start_us, seen.life->start_us - tolerance_us) << step->name << " of request " << id;
      EXPECT_LE(end_of(*step), end_of(*seen.life) + tolerance_us) << step->name << " of request " << id;
    }
  }
  for (const auto& [name, info] : models) EXPECT_EQ(lives_per_model[name], requests_per_model) << name;

  std::size_t expected_steps = 0;
  for (const auto& [name, info] : models) expected_steps += info.steps.size() * requests_per_model;
  EXPECT_EQ(total_steps, expected_steps);

  // A stream runs its work in order: its events follow one another.
  for (auto& [track, list] : stream_events) {
    std::sort(list.begin(), list.end(), [](auto* a, auto* b) { return a->start_us < b->start_us; });
    for (std::size_t i = 1; i < list.size(); ++i)
      EXPECT_GE(list[i]->start_us, end_of(*list[i - 1]) - tolerance_us)
          << track << ": " << list[i]->name << " overlaps " << list[i - 1]->name;
  }
}

// Runs both models on `device` with recording on, then checks the timeline, its summary, and the
// same timeline written as a Chrome trace and read back.
inline void record_and_check(const std::string& device, double tolerance_us) {
  ExecutorOptions options;
  options.device = device;
  options.record_timeline = true;
  Executor executor(options);
  constexpr std::size_t kRequests = 6;
  const auto models = run_timeline_models(executor, kRequests);
  ASSERT_GE(models.at("alpha").steps.size(), 3u);
  ASSERT_GE(models.at("beta").steps.size(), 2u);
  const Timeline timeline = executor.timeline();
  expect_executor_timeline(timeline, models, kRequests, tolerance_us);

  const auto u = timeline.utilization();
  EXPECT_GT(u.span_us, 0);
  EXPECT_GT(u.device_busy_fraction, 0);
  EXPECT_LE(u.device_busy_fraction, 1.0 + 1e-9);

  std::stringstream text;
  timeline.write_chrome_trace(text);
  const Timeline back = read_chrome_trace(text);
  EXPECT_EQ(back.tracks(), timeline.tracks());
  EXPECT_EQ(back.events().size(), timeline.events().size());
  expect_executor_timeline(back, models, kRequests, tolerance_us);
}

}  // namespace loom::timeline_checks
