// The admission and preemption rules of admission.hpp.
#include "sched/admission.hpp"

#include <algorithm>

namespace loom::sched {

void decide_admission(std::span<const AdmissionView> live, bool preemption, Admission& a) {
  a.running_class = 0;
  a.offered.clear();
  a.pause.clear();
  a.need_memory.clear();
  a.draining = false;
  if (live.empty()) return;
  a.running_class = live.front().priority;
  bool uniform = true;
  for (const AdmissionView& r : live) {
    uniform = uniform && r.priority == live.front().priority && r.holds_arena && !r.paused;
    a.running_class = std::max(a.running_class, r.priority);
  }
  if (uniform) {
    for (std::size_t i = 0; i < live.size(); ++i) a.offered.push_back(i);
    return;
  }
  if (preemption) {
    for (std::size_t i = 0; i < live.size(); ++i) {
      const AdmissionView& r = live[i];
      if (r.priority == a.running_class || !r.started) continue;
      if (!r.at_cancellation_point || r.needs_boundary)
        a.offered.push_back(i);  // runs on to its next cancellation point first
      else if (!r.paused)
        a.pause.push_back(i);
    }
  }
  a.draining = !a.offered.empty();
  for (std::size_t i = 0; i < live.size(); ++i) {
    const AdmissionView& r = live[i];
    const bool eligible = r.priority == a.running_class || (!preemption && r.started);
    if (!eligible) continue;
    if (!r.holds_arena)
      a.need_memory.push_back(i);
    else if (!a.draining)
      a.offered.push_back(i);
  }
  std::stable_sort(a.need_memory.begin(), a.need_memory.end(),
                   [&](std::size_t x, std::size_t y) { return live[x].priority > live[y].priority; });
}

std::vector<std::size_t> eviction_order(std::span<const AdmissionView> live, std::size_t for_request) {
  std::vector<std::size_t> victims;
  const int priority = live[for_request].priority;
  for (std::size_t i = 0; i < live.size(); ++i) {
    const AdmissionView& r = live[i];
    if (i != for_request && r.holds_arena && r.priority < priority && ((r.paused && !r.inside_step) || !r.started))
      victims.push_back(i);
  }
  std::stable_sort(victims.begin(), victims.end(), [&](std::size_t x, std::size_t y) {
    return live[x].priority != live[y].priority ? live[x].priority < live[y].priority : x > y;
  });
  return victims;
}

std::vector<std::size_t> must_leave_step(std::span<const AdmissionView> live, std::size_t for_request) {
  std::vector<std::size_t> leaving;
  for (std::size_t i = 0; i < live.size(); ++i)
    if (live[i].holds_arena && live[i].priority < live[for_request].priority && live[i].inside_step)
      leaving.push_back(i);
  return leaving;
}

}  // namespace loom::sched
