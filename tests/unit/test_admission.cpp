// The admission and preemption rules (sched/admission.hpp) that the executor and the simulator
// share, on hand-built request views with the expected decisions worked out from the rules.
#include <gtest/gtest.h>

#include <cstddef>
#include <string>
#include <vector>

#include "sched/admission.hpp"

namespace {

using loom::sched::Admission;
using loom::sched::AdmissionView;
using Indices = std::vector<std::size_t>;

constexpr int kBackground = -1, kNormal = 0, kUrgent = 1;

// Shorthands for the views the cases need.
AdmissionView waiting(int priority, bool holds_arena) {
  AdmissionView v;
  v.priority = priority;
  v.holds_arena = holds_arena;
  return v;
}
AdmissionView running(int priority, bool at_point) {
  AdmissionView v;
  v.priority = priority;
  v.started = true;
  v.at_cancellation_point = at_point;
  v.holds_arena = true;
  return v;
}
AdmissionView paused_at_boundary(int priority, bool holds_arena = true) {
  AdmissionView v = running(priority, true);
  v.paused = true;
  v.holds_arena = holds_arena;
  return v;
}
AdmissionView paused_inside_step(int priority) {
  AdmissionView v = paused_at_boundary(priority);
  v.inside_step = true;
  return v;
}

struct Case {
  std::string name;
  std::vector<AdmissionView> live;
  bool preemption = true;
  int running_class = 0;
  Indices offered, pause, need_memory;
  bool draining = false;
};

TEST(Admission, DecisionsMatchTheRules) {
  const std::vector<Case> cases = {
      {"nothing live", {}, true, 0, {}, {}, {}, false},
      {"one class, all ready: everyone is offered",
       {running(kNormal, false), waiting(kNormal, true), running(kNormal, true)},
       true,
       kNormal,
       {0, 1, 2},
       {},
       {},
       false},
      {"an urgent arrival pauses a normal request standing at a point; the urgent one needs memory",
       {running(kNormal, true), waiting(kUrgent, false)},
       true,
       kUrgent,
       {},
       {0},
       {1},
       false},
      {"a normal request between points runs on to its next one alone (draining)",
       {running(kNormal, false), waiting(kUrgent, true)},
       true,
       kUrgent,
       {0},
       {},
       {},
       true},
      {"draining does not stop the urgent request from asking for memory",
       {running(kNormal, false), waiting(kUrgent, false)},
       true,
       kUrgent,
       {0},
       {},
       {1},
       true},
      {"asked to leave its Step: runs on even at a point",
       {[] {
          AdmissionView v = paused_inside_step(kNormal);
          v.needs_boundary = true;
          return v;
        }(),
        waiting(kUrgent, false)},
       true,
       kUrgent,
       {0},
       {},
       {1},
       true},
      {"a request already paused is not paused again; the urgent one runs",
       {paused_at_boundary(kNormal), waiting(kUrgent, true)},
       true,
       kUrgent,
       {1},
       {},
       {},
       false},
      {"unstarted lower classes wait; they are neither paused nor offered",
       {waiting(kBackground, true), waiting(kNormal, true), waiting(kUrgent, true)},
       true,
       kUrgent,
       {2},
       {},
       {},
       false},
      {"preemption off: a started lower class is offered with the running class",
       {running(kNormal, false), waiting(kUrgent, true), running(kBackground, true)},
       false,
       kUrgent,
       {0, 1, 2},
       {},
       {},
       false},
      {"preemption off: an unstarted lower class still waits",
       {waiting(kNormal, true), waiting(kUrgent, true)},
       false,
       kUrgent,
       {1},
       {},
       {},
       false},
      {"memory goes to the most urgent class first, arrival order within one",
       {paused_at_boundary(kBackground, false), waiting(kUrgent, false), waiting(kUrgent, false),
        [] {
          AdmissionView v = running(kNormal, true);
          v.holds_arena = false;
          return v;
        }()},
       false,
       kUrgent,
       {},
       {},
       {1, 2, 3, 0},
       false},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    Admission a;
    a.offered = {99};  // stale content must not survive
    loom::sched::decide_admission(c.live, c.preemption, a);
    EXPECT_EQ(a.running_class, c.running_class);
    EXPECT_EQ(a.offered, c.offered);
    EXPECT_EQ(a.pause, c.pause);
    EXPECT_EQ(a.need_memory, c.need_memory);
    EXPECT_EQ(a.draining, c.draining);
  }
}

// Requester 4 (urgent). Victims: lower classes holding memory, paused at a boundary or unstarted;
// lowest class first, newest first: background 2 then 0, then normal 1. Not 3 (paused inside a
// Step), not 5 (dumped already), not 6 (urgent, same class).
const std::vector<AdmissionView> kMemoryScene = {paused_at_boundary(kBackground), waiting(kNormal, true),
                                                 waiting(kBackground, true),      paused_inside_step(kNormal),
                                                 waiting(kUrgent, false),         paused_at_boundary(kNormal, false),
                                                 waiting(kUrgent, true)};

TEST(Admission, EvictionOrderIsLowestClassThenNewest) {
  EXPECT_EQ(loom::sched::eviction_order(kMemoryScene, 4), (Indices{2, 0, 1}));
}

TEST(Admission, ANormalRequesterEvictsOnlyBackground) {
  std::vector<AdmissionView> live = kMemoryScene;
  live[4].priority = kNormal;
  EXPECT_EQ(loom::sched::eviction_order(live, 4), (Indices{2, 0}));
}

TEST(Admission, RequestsPausedInsideAStepMustLeaveIt) {
  EXPECT_EQ(loom::sched::must_leave_step(kMemoryScene, 4), (Indices{3}));
  EXPECT_TRUE(loom::sched::must_leave_step(kMemoryScene, 0).empty());  // background: nothing below it
}

TEST(Admission, NoVictimsWhenNothingLowerHoldsMemory) {
  const std::vector<AdmissionView> live = {running(kUrgent, false), waiting(kUrgent, false)};
  EXPECT_TRUE(loom::sched::eviction_order(live, 1).empty());
}

}  // namespace
