// Who may run, who pauses and who gives up memory: the admission and preemption rules (MISSION.md
// §3) that the executor and the simulator both obey. Pure functions over small views of the live
// requests, in arrival order; the callers apply the decisions (pause, dump, restore, launch), so
// one rule decides for both and a schedule replayed in the simulator is the executor's.
//
// The rules, at each decision:
//   - The running class is the highest priority among the live requests (whether or not they hold
//     memory).
//   - With preemption on, a started request of a lower class that does not stand at a
//     cancellation point (or must leave the Step it paused inside, needs_boundary) runs on to its
//     next point first: while there is any such request, exactly these are offered to the policy
//     ("draining"). One that stands at a point pauses there and resumes once its class is again
//     the running one.
//   - Otherwise the running class is offered: those holding memory at once; those without it
//     need memory first (most urgent first) and are offered once they get it. With preemption
//     off, started requests of lower classes are offered with the running class and run to their
//     end; unstarted ones wait.
//   - Memory for a request comes, when short, from requests of lower classes that hold memory and
//     are paused at a boundary (their live bytes are dumped) or have not started (they give their
//     memory back and load their inputs again later): lowest class first, newest first within a
//     class. A request paused inside a Step is never a victim (its live set there is not planned);
//     when memory is still short, such requests of lower classes must leave their Step and stop at
//     their next boundary (needs_boundary).
// When every live request is of one class, holds memory and is not paused, all are offered.
#pragma once

#include <cstddef>
#include <span>
#include <vector>

namespace loom::sched {

// What the rules need to know of one live request.
struct AdmissionView {
  int priority = 0;
  bool started = false;                // has launched a Step (or is paused inside one)
  bool at_cancellation_point = false;  // inside a Step, or the boundary after its last launched Step is a point
  bool inside_step = false;            // paused inside a Step
  bool holds_arena = false;            // its memory is on the device
  bool paused = false;
  bool needs_boundary = false;  // asked to leave its Step for memory (see the rules)
};

struct Admission {
  int running_class = 0;
  // Indices into the views, ascending: the requests offered to the policy now, before memory (the
  // requests of need_memory that get it are offered too, unless draining).
  std::vector<std::size_t> offered;
  // Lower-class requests to pause now (at their cancellation point; not already paused).
  std::vector<std::size_t> pause;
  // Requests that may run but hold no memory, most urgent class first, arrival order within one.
  std::vector<std::size_t> need_memory;
  // True when `offered` are lower-class requests running on to their next point: nothing else is
  // offered this time, though need_memory may still be served.
  bool draining = false;
};

// Decides for `live` into `out` (cleared first; its vectors keep their capacity, so a caller that
// decides at every scheduling point allocates nothing once warm).
void decide_admission(std::span<const AdmissionView> live, bool preemption, Admission& out);

// The requests that give up their memory so that live[for_request] fits, in order (see the rules).
std::vector<std::size_t> eviction_order(std::span<const AdmissionView> live, std::size_t for_request);

// When the victims' memory is not enough: the requests of classes below live[for_request]'s that
// hold memory while paused inside a Step, which must go on to their next boundary.
std::vector<std::size_t> must_leave_step(std::span<const AdmissionView> live, std::size_t for_request);

}  // namespace loom::sched
