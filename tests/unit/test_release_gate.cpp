// ReleaseGate (backend/release_gate.hpp): device-synchronising releases wait for the end of every
// graph capture in flight on their device, run in the order asked for, and no capture begins
// while they run. The CUDA backend routes cudaFree, cudaFreeHost and handle destruction through
// it; here the releases are plain functions, so the rules are checked on any machine.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "backend/release_gate.hpp"

namespace {

using loom::backend::ReleaseGate;
using namespace std::chrono_literals;

TEST(ReleaseGate, RunsAtOnceWithNoCaptureInFlight) {
  ReleaseGate gate;
  int runs = 0;
  gate.release([&] { ++runs; });
  EXPECT_EQ(runs, 1);
  EXPECT_EQ(gate.queued(), 0u);
}

TEST(ReleaseGate, WaitsForTheLastCaptureThenRunsInOrder) {
  ReleaseGate gate;
  std::vector<std::string> log;
  gate.begin_capture();
  gate.begin_capture();  // a second stream of the same device capturing too
  gate.release([&] { log.push_back("a"); });
  gate.release([&] { log.push_back("b"); });
  EXPECT_TRUE(log.empty());
  EXPECT_EQ(gate.queued(), 2u);
  EXPECT_EQ(gate.captures_in_flight(), 2u);
  gate.end_capture();
  EXPECT_TRUE(log.empty()) << "one capture is still in flight";
  gate.end_capture();
  EXPECT_EQ(log, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(gate.queued(), 0u);
  EXPECT_EQ(gate.captures_in_flight(), 0u);
  // Afterwards releases run at once again.
  gate.release([&] { log.push_back("c"); });
  EXPECT_EQ(log.size(), 3u);
}

TEST(ReleaseGate, AReleaseFromAnotherThreadDuringACaptureIsHeldBack) {
  ReleaseGate gate;
  std::atomic<int> runs{0};
  gate.begin_capture();
  std::thread other([&] { gate.release([&] { ++runs; }); });
  other.join();  // release() returned without running it
  EXPECT_EQ(runs.load(), 0);
  gate.end_capture();
  EXPECT_EQ(runs.load(), 1);
}

TEST(ReleaseGate, AReleaseMayReleaseAgainWithoutDeadlock) {
  // A stream's teardown destroys its handles, each of which is itself a gated release.
  ReleaseGate gate;
  std::vector<std::string> log;
  gate.begin_capture();
  gate.release([&] {
    log.push_back("outer");
    gate.release([&] { log.push_back("inner"); });
  });
  gate.end_capture();
  EXPECT_EQ(log, (std::vector<std::string>{"outer", "inner"}));
  gate.release([&] { gate.release([&] { log.push_back("nested at once"); }); });
  EXPECT_EQ(log.back(), "nested at once");
}

TEST(ReleaseGate, NoCaptureBeginsWhileAReleaseRuns) {
  ReleaseGate gate;
  std::promise<void> release_started, let_release_finish;
  std::atomic<bool> release_done{false}, capture_began{false};
  std::thread releaser([&] {
    gate.release([&] {
      release_started.set_value();
      let_release_finish.get_future().wait();
      release_done = true;
    });
  });
  release_started.get_future().wait();
  std::thread capturer([&] {
    gate.begin_capture();
    capture_began = true;
    // The release had finished before this capture could begin.
    EXPECT_TRUE(release_done.load());
    gate.end_capture();
  });
  // Give the capturer every chance to (wrongly) begin; it must still be waiting.
  std::this_thread::sleep_for(50ms);
  EXPECT_FALSE(capture_began.load());
  let_release_finish.set_value();
  releaser.join();
  capturer.join();
  EXPECT_TRUE(capture_began.load());
}

TEST(ReleaseGate, AThrowingReleaseDoesNotStopTheOthers) {
  ReleaseGate gate;
  int runs = 0;
  gate.begin_capture();
  gate.release([] { throw std::runtime_error("a failing free"); });
  gate.release([&] { ++runs; });
  gate.end_capture();
  EXPECT_EQ(runs, 1);
  EXPECT_NO_THROW(gate.release([] { throw std::runtime_error("again"); }));
}

TEST(ReleaseGate, EndingMoreCapturesThanBeganIsHarmless) {
  ReleaseGate gate;
  gate.end_capture();
  EXPECT_EQ(gate.captures_in_flight(), 0u);
  int runs = 0;
  gate.release([&] { ++runs; });
  EXPECT_EQ(runs, 1);
}

TEST(ReleaseGate, OneGatePerDevice) {
  EXPECT_EQ(&ReleaseGate::for_device(0), &ReleaseGate::for_device(0));
  EXPECT_NE(&ReleaseGate::for_device(0), &ReleaseGate::for_device(1));
  // Device 7's captures do not hold back device 6's releases.
  ReleaseGate::for_device(7).begin_capture();
  int runs = 0;
  ReleaseGate::for_device(6).release([&] { ++runs; });
  EXPECT_EQ(runs, 1);
  ReleaseGate::for_device(7).end_capture();
}

}  // namespace
