// loom-bench's per-Step profile from a hand-built timeline: counts, totals, averages, medians and
// shares per Step, a paused Step counted once, other events ignored; trtexec's JSON layout.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "bench_profile.hpp"

namespace {

loom::TraceEvent step_event(const std::string& model, std::size_t step, std::size_t request, double start_us,
                            double duration_us, bool paused_part = false) {
  loom::TraceEvent e;
  e.name = model + "/step" + std::to_string(step);
  e.category = "step";
  e.track = "stream:" + model;
  e.start_us = start_us;
  e.duration_us = duration_us;
  e.args = {{"model", model}, {"step", std::to_string(step)}, {"request", std::to_string(request)}};
  if (paused_part) e.args["paused_at_iteration"] = "3";
  return e;
}

loom::ModelInfo model(const std::string& name, std::size_t steps) {
  loom::ModelInfo info;
  info.name = name;
  for (std::size_t i = 0; i < steps; ++i) {
    loom::StepInfo step;
    step.name = "conv" + std::to_string(i);
    step.ops = {"Conv", "Relu"};
    info.steps.push_back(step);
  }
  return info;
}

// Model "a": Step 0 ran 1000, 3000 and 2000 us for requests 1, 2, 3; Step 1 ran 4000 us for
// request 1 and, for request 2, 1500 us before pausing and 500 us after. Step 2 never ran.
loom::Timeline hand_built() {
  loom::Timeline timeline;
  timeline.add(step_event("a", 0, 1, 0, 1000));
  timeline.add(step_event("a", 1, 1, 1000, 4000));
  timeline.add(step_event("a", 0, 2, 6000, 3000));
  timeline.add(step_event("a", 1, 2, 9000, 1500, true));
  timeline.add(step_event("a", 1, 2, 12000, 500));
  timeline.add(step_event("a", 0, 3, 14000, 2000));
  timeline.add(step_event("b", 0, 4, 0, 700));      // another model
  timeline.add(step_event("gone", 0, 5, 0, 9999));  // a model not asked about
  loom::TraceEvent copy = step_event("a", 0, 1, 0, 5000);
  copy.category = "copy";  // not a Step
  timeline.add(copy);
  loom::TraceEvent life = step_event("a", 0, 1, 0, 20000);
  life.category = "request";
  timeline.add(life);
  return timeline;
}

TEST(BenchProfile, StepsFoldedPerRequestWithCountsTotalsMediansAndShares) {
  const auto profiles = loom::bench::step_profile(hand_built(), {model("a", 3), model("b", 1)});
  ASSERT_EQ(profiles.size(), 2u);
  const auto& a = profiles[0];
  EXPECT_EQ(a.model, "a");
  EXPECT_EQ(a.requests, 3u);
  EXPECT_DOUBLE_EQ(a.total_ms, 12.0);  // 6 of Step 0 + 6 of Step 1
  // Per request: 5, 5, 2 ms; nearest-rank median 5.
  EXPECT_DOUBLE_EQ(a.median_request_ms, 5.0);
  ASSERT_EQ(a.steps.size(), 3u);
  EXPECT_EQ(a.steps[0].name, "a/conv0");
  EXPECT_EQ(a.steps[0].ops, (std::vector<std::string>{"Conv", "Relu"}));
  EXPECT_EQ(a.steps[0].count, 3u);
  EXPECT_DOUBLE_EQ(a.steps[0].total_ms, 6.0);
  EXPECT_DOUBLE_EQ(a.steps[0].average_ms, 2.0);
  EXPECT_DOUBLE_EQ(a.steps[0].median_ms, 2.0);
  EXPECT_DOUBLE_EQ(a.steps[0].percentage, 50.0);
  // The paused run of request 2 is one run of 2 ms.
  EXPECT_EQ(a.steps[1].count, 2u);
  EXPECT_DOUBLE_EQ(a.steps[1].total_ms, 6.0);
  EXPECT_DOUBLE_EQ(a.steps[1].median_ms, 2.0);  // of 4 and 2: rank 1 of the sorted
  EXPECT_EQ(a.steps[2].count, 0u);
  EXPECT_EQ(a.steps[2].total_ms, 0);
  EXPECT_EQ(a.steps[2].percentage, 0);
  const auto& b = profiles[1];
  EXPECT_EQ(b.requests, 1u);
  EXPECT_DOUBLE_EQ(b.steps[0].total_ms, 0.7);
  EXPECT_DOUBLE_EQ(b.steps[0].percentage, 100.0);
}

TEST(BenchProfile, NoEventsGivesEveryStepWithCountZero) {
  const auto profiles = loom::bench::step_profile(loom::Timeline{}, {model("a", 2)});
  ASSERT_EQ(profiles.size(), 1u);
  EXPECT_EQ(profiles[0].requests, 0u);
  ASSERT_EQ(profiles[0].steps.size(), 2u);
  EXPECT_EQ(profiles[0].steps[1].count, 0u);
}

TEST(BenchProfile, JsonFollowsTrtexecsLayoutPerModel) {
  const auto doc = loom::bench::profile_json(loom::bench::step_profile(hand_built(), {model("a", 3), model("b", 1)}));
  ASSERT_EQ(doc.size(), 1u + 3 + 1 + 1);  // per model its head, then its Steps
  EXPECT_EQ(doc[0]["count"], 3);
  EXPECT_EQ(doc[0]["model"], "a");
  EXPECT_DOUBLE_EQ(doc[0]["timeMs"].get<double>(), 12.0);
  // trtexec's five keys first, in its order.
  std::vector<std::string> keys;
  for (const auto& [key, value] : doc[1].items()) keys.push_back(key);
  ASSERT_GE(keys.size(), 5u);
  EXPECT_EQ(std::vector<std::string>(keys.begin(), keys.begin() + 5),
            (std::vector<std::string>{"name", "timeMs", "averageMs", "medianMs", "percentage"}));
  EXPECT_EQ(doc[1]["name"], "a/conv0");
  EXPECT_EQ(doc[1]["count"], 3);
  EXPECT_EQ(doc[1]["step"], 0);
  EXPECT_EQ(doc[1]["ops"], nlohmann::ordered_json({"Conv", "Relu"}));
  EXPECT_DOUBLE_EQ(doc[2]["averageMs"].get<double>(), 3.0);
  EXPECT_EQ(doc[4]["model"], "b");
  EXPECT_EQ(doc[4]["count"], 1);
  EXPECT_EQ(doc[5]["name"], "b/conv0");
}

TEST(BenchProfile, PrintedTableHasAHeadingARowPerStepAndATotal) {
  const auto lines = loom::bench::profile_lines(loom::bench::step_profile(hand_built(), {model("a", 3)}));
  ASSERT_EQ(lines.size(), 2u + 3 + 1);
  EXPECT_NE(lines[0].find("Profile: a (3 requests"), std::string::npos) << lines[0];
  EXPECT_NE(lines[1].find("Time(ms)"), std::string::npos);
  EXPECT_NE(lines[2].find("a/conv0 (Conv, Relu)"), std::string::npos) << lines[2];
  EXPECT_NE(lines[2].find("50.0"), std::string::npos) << lines[2];
  EXPECT_NE(lines[5].find("12.000"), std::string::npos) << lines[5];
  EXPECT_NE(lines[5].find("Total"), std::string::npos) << lines[5];
}

}  // namespace
