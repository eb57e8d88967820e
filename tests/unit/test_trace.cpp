// Timelines: the utilisation summary on hand-computed timelines, the Chrome trace round trip, the
// CPU backend's timed events, and what the executor records on the CPU.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "backend/backend.hpp"
#include "loom/executor.hpp"
#include "loom/trace.hpp"
#include "test_support.hpp"
#include "unit/executor_timeline_checks.hpp"

using namespace loom;
using loom::test_support::code_of;

namespace {

TraceEvent event(std::string track, double start, double duration, std::string name = "e") {
  TraceEvent e;
  e.name = std::move(name);
  e.category = duration > 0 ? "step" : "decision";
  e.track = std::move(track);
  e.start_us = start;
  e.duration_us = duration;
  return e;
}

const TrackUtilization* find_track(const UtilizationSummary& summary, const std::string& track) {
  for (const auto& t : summary.tracks)
    if (t.track == track) return &t;
  return nullptr;
}

}  // namespace

// Span 0..50 µs (set by the request); stream:a = [0,15) ∪ [20,30) = 25 µs, overlaps once;
// stream:b = [12,22) with [14,16) nested = 10 µs; sim:compute [40,45) = 5 µs. Device union:
// [0,30) ∪ [40,45) = 35 µs. The host track has only instants: 0 busy, but listed.
TEST(Timeline, UtilizationCountsOverlapsOnceAndDeviceTracksTogether) {
  Timeline t;
  t.add(event("stream:a", 0, 10));
  t.add(event("stream:a", 5, 10));
  t.add(event("stream:a", 20, 10));
  t.add(event("stream:b", 12, 10));
  t.add(event("stream:b", 14, 2));
  t.add(event("sim:compute", 40, 5));
  t.add(event("host:dispatcher", 45, 0));
  t.add(event("request:a", 2, 48));
  const UtilizationSummary u = t.utilization();
  EXPECT_DOUBLE_EQ(u.span_us, 50);
  ASSERT_EQ(u.tracks.size(), 5u);
  const auto* a = find_track(u, "stream:a");
  const auto* b = find_track(u, "stream:b");
  const auto* sim = find_track(u, "sim:compute");
  const auto* host = find_track(u, "host:dispatcher");
  const auto* request = find_track(u, "request:a");
  ASSERT_TRUE(a && b && sim && host && request);
  EXPECT_DOUBLE_EQ(a->busy_us, 25);
  EXPECT_DOUBLE_EQ(a->busy_fraction, 0.5);
  EXPECT_DOUBLE_EQ(b->busy_us, 10);
  EXPECT_DOUBLE_EQ(b->busy_fraction, 0.2);
  EXPECT_DOUBLE_EQ(sim->busy_us, 5);
  EXPECT_DOUBLE_EQ(host->busy_us, 0);
  EXPECT_DOUBLE_EQ(request->busy_us, 48);
  EXPECT_DOUBLE_EQ(request->busy_fraction, 0.96);
  // Host and request tracks do not count as device time.
  EXPECT_DOUBLE_EQ(u.device_busy_fraction, 0.7);
}

TEST(Timeline, UtilizationOfEmptyAndShiftedTimelines) {
  Timeline empty;
  const auto none = empty.utilization();
  EXPECT_EQ(none.span_us, 0);
  EXPECT_TRUE(none.tracks.empty());
  EXPECT_EQ(none.device_busy_fraction, 0);

  // The span starts at the first event, not at 0; touching events leave no gap.
  Timeline t;
  t.add(event("stream:x", 100, 10));
  t.add(event("stream:x", 110, 30));
  t.add(event("stream:y", 150, 10));
  const auto u = t.utilization();
  EXPECT_DOUBLE_EQ(u.span_us, 60);
  EXPECT_DOUBLE_EQ(find_track(u, "stream:x")->busy_us, 40);
  EXPECT_DOUBLE_EQ(u.device_busy_fraction, 50.0 / 60.0);
}

TEST(Timeline, EventsSortedTracksUniqueCopyAndClear) {
  Timeline t;
  EXPECT_TRUE(t.empty());
  t.add(event("stream:b", 5, 1, "late"));
  t.add(event("stream:b", 1, 1, "b-early"));
  t.add(event("stream:a", 1, 1, "a-early"));
  const auto events = t.events();
  ASSERT_EQ(events.size(), 3u);
  EXPECT_EQ(events[0].name, "a-early");  // same start: by track
  EXPECT_EQ(events[1].name, "b-early");
  EXPECT_EQ(events[2].name, "late");
  EXPECT_EQ(t.tracks(), (std::vector<std::string>{"stream:a", "stream:b"}));
  Timeline copy = t;
  t.clear();
  EXPECT_TRUE(t.empty());
  EXPECT_EQ(copy.events().size(), 3u);
  t = copy;
  EXPECT_EQ(t.events().size(), 3u);
}

TEST(Timeline, ChromeTraceRoundTripKeepsNamesTracksTimesArgs) {
  Timeline t;
  auto step = event("stream:bert", 10.5, 20.25, "bert/MatMul_3");
  step.args = {{"request", "12"}, {"step", "3"}, {"ops", "MatMul,Add"}};
  t.add(step);
  auto pick = event("host:dispatcher", 9.125, 0, "pick bert#12 step 3");
  pick.args = {{"candidates", "2"}};
  t.add(pick);
  t.add(event("stream:upload", 0, 3.5, "H2D \"quoted\" \\ ünïcode"));
  // Two overlapping lives on one track: written on two rows, read back as one track.
  t.add(event("request:bert", 0, 40, "bert#12"));
  t.add(event("request:bert", 5, 40, "bert#13"));
  t.add(event("sim:memory", 1e6 + 0.001, 2, "sim"));

  std::stringstream text;
  t.write_chrome_trace(text);
  const std::string json = text.str();
  EXPECT_NE(json.find("\"traceEvents\""), std::string::npos);
  EXPECT_NE(json.find("\"thread_name\""), std::string::npos);

  const Timeline back = read_chrome_trace(text);
  const auto original = t.events();
  const auto parsed = back.events();
  ASSERT_EQ(parsed.size(), original.size());
  for (std::size_t i = 0; i < original.size(); ++i) {
    SCOPED_TRACE(original[i].name);
    EXPECT_EQ(parsed[i].name, original[i].name);
    EXPECT_EQ(parsed[i].category, original[i].category);
    EXPECT_EQ(parsed[i].track, original[i].track);
    EXPECT_NEAR(parsed[i].start_us, original[i].start_us, 1e-3);
    EXPECT_NEAR(parsed[i].duration_us, original[i].duration_us, 1e-3);
    EXPECT_EQ(parsed[i].args, original[i].args);
  }
  EXPECT_EQ(back.tracks(), t.tracks());
}

TEST(Timeline, ChromeTraceFileAndErrors) {
  Timeline t;
  t.add(event("stream:a", 1, 2, "x"));
  const auto path = (std::filesystem::temp_directory_path() / "loom_test_trace.json").string();
  t.write_chrome_trace(path);
  std::ifstream in(path);
  EXPECT_EQ(read_chrome_trace(in).events().size(), 1u);
  in.close();
  std::remove(path.c_str());

  EXPECT_EQ(code_of([&] { t.write_chrome_trace(std::string("/nonexistent-dir/trace.json")); }),
            ErrorCode::invalid_argument);
  for (const char* bad :
       {"not json", "{\"traceEvents\": 3}", "42", "[{\"ph\":\"X\",\"name\":\"a\",\"pid\":1,\"tid\":1,\"ts\":1}]",
        "[{\"ph\":\"i\",\"name\":\"a\",\"ts\":\"soon\"}]", "[3]"}) {
    std::istringstream input(bad);
    EXPECT_EQ(code_of([&] { read_chrome_trace(input); }), ErrorCode::invalid_argument) << bad;
  }
  // The bare-array form of the format, and a row without a thread name.
  std::istringstream bare("[{\"ph\":\"X\",\"name\":\"a\",\"pid\":1,\"tid\":4,\"ts\":1,\"dur\":2}]");
  const auto events = read_chrome_trace(bare).events();
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].track, "thread 1/4");
}

// --- the CPU backend's timed events ---

namespace {
// An event of no backend at all, to check that mixing is refused.
class ForeignEvent final : public backend::Event {
 public:
  void synchronize() override {}
  bool ready() override { return true; }
  double microseconds_since(backend::Event&) override { return 0; }
};
}  // namespace

TEST(CpuTimedEvents, OrderedAndNonNegative) {
  auto device = backend::make_cpu_backend();
  auto stream = device->create_stream();
  auto first = stream->record_timed();
  std::vector<char> src(1 << 16, 1), dst(1 << 16);
  stream->copy_to_device(dst.data(), src.data(), src.size());
  auto second = stream->record_timed();
  auto third = stream->record_timed();
  EXPECT_EQ(first->microseconds_since(*first), 0.0);
  const double a = second->microseconds_since(*first);
  const double b = third->microseconds_since(*first);
  EXPECT_GE(a, 0.0);
  EXPECT_GE(b, a);
  EXPECT_LE(first->microseconds_since(*second), 0.0);
}

TEST(CpuTimedEvents, UntimedOrForeignEventsAreRefused) {
  auto device = backend::make_cpu_backend();
  auto stream = device->create_stream();
  auto timed = stream->record_timed();
  auto untimed = stream->record();
  ForeignEvent foreign;
  EXPECT_EQ(code_of([&] { untimed->microseconds_since(*timed); }), ErrorCode::invalid_argument);
  EXPECT_EQ(code_of([&] { timed->microseconds_since(*untimed); }), ErrorCode::invalid_argument);
  EXPECT_EQ(code_of([&] { timed->microseconds_since(foreign); }), ErrorCode::invalid_argument);
}

// --- the executor's timeline on the CPU ---

TEST(ExecutorTimeline, RecordsStepsCopiesDecisionsAndLivesOnTheirTracks) {
  timeline_checks::record_and_check("cpu", timeline_checks::kCpuTimeTolerance_us);
}

TEST(ExecutorTimeline, NothingRecordedWhenOff) {
  ExecutorOptions options;
  options.device = "cpu";
  Executor executor(options);
  timeline_checks::run_timeline_models(executor, 3);
  EXPECT_TRUE(executor.timeline().empty());
}
