// The idle-time policy of MISSION.md §1: starvation guard, then the candidate whose Step (and the
// greedy continuation over every request's window after it) idles the two resources least; equal
// candidates go to the one waiting longest.
#include <algorithm>
#include <cmath>
#include <limits>

#include "loom/error.hpp"
#include "loom/policy.hpp"
#include "sched/device_shadow.hpp"

namespace loom {
namespace {

using sched::DeviceShadow;
using sched::Idle;

// Idle summed over a look-ahead; compared total first, then memory idle.
struct Score {
  double total = 0;
  double memory = 0;
  void add(const Idle& idle) noexcept {
    total += idle.total();
    memory += idle.memory_us;
  }
};

// The order of waiting: passed over more, then the earlier arrival. The guard takes the first
// starved candidate in it, and it breaks ties between equal scores, so that equally good
// candidates take turns: ties to the earliest arrival alone serve the oldest requests and starve
// the rest, which then reach the guard together and are forced one after another whatever they
// cost (docs/simulator.md, "The idle-time policy").
bool waits_longer(const StepCandidate& a, const StepCandidate& b) noexcept {
  if (a.passed_over != b.passed_over) return a.passed_over > b.passed_over;
  return a.request_id < b.request_id;
}

bool less(double total_a, double memory_a, const StepCandidate& a, double total_b, double memory_b,
          const StepCandidate& b) noexcept {
  if (total_a != total_b) return total_a < total_b;
  if (memory_a != memory_b) return memory_a < memory_b;
  return waits_longer(a, b);
}

// The look-ahead's next placement: least idle, then least memory idle, then the one leaving the
// resources most balanced (compute and memory free closest: the next Step can overlap best), then
// the earliest arrival. Without the balance key a look-ahead of 3 on MISSION.md's example follows
// arrival order where it ties, and misjudges the first choice.
bool better_continuation(const Idle& a, std::uint64_t id_a, const Idle& b, std::uint64_t id_b) noexcept {
  if (a.total() != b.total()) return a.total() < b.total();
  if (a.memory_us != b.memory_us) return a.memory_us < b.memory_us;
  if (a.imbalance_us != b.imbalance_us) return a.imbalance_us < b.imbalance_us;
  return id_a < id_b;
}

// Steps of the candidate the policy may look at: its own and its lookahead, within the window.
std::size_t window_steps(const StepCandidate& c, std::size_t window) noexcept {
  return std::min(window, 1 + std::min(c.lookahead_count, kMaxLookahead));
}

StepCost step_at(const StepCandidate& c, std::size_t position) noexcept {
  return position == 0 ? c.cost() : c.lookahead[position - 1];
}

double duration_us(const StepCandidate& c) noexcept { return c.compute_us + c.memory_us; }

}  // namespace

IdleTimePolicy::IdleTimePolicy(PolicyOptions options) : options_(options) {
  if (options_.starvation_limit == 0)
    throw Error(ErrorCode::invalid_argument, "idle-time policy: starvation_limit must be at least 1");
  if (options_.window < 1 || options_.window > kMaxLookahead + 1)
    throw Error(ErrorCode::invalid_argument, "idle-time policy: window must be 1 to " +
                                                 std::to_string(kMaxLookahead + 1) + ", got " +
                                                 std::to_string(options_.window));
  if (!std::isfinite(options_.block_us) || options_.block_us < 0)
    throw Error(ErrorCode::invalid_argument, "idle-time policy: block_us must be a finite time >= 0");
}

std::size_t IdleTimePolicy::pick(std::span<const StepCandidate> candidates, const AcceleratorState& state) {
  const double block_us = options_.block_us;
  if (block_active_) {
    for (std::size_t i = 0; i < candidates.size(); ++i) {
      const StepCandidate& c = candidates[i];
      if (c.request_id != block_request_ || c.step_index != block_next_step_) continue;
      if (block_used_us_ + duration_us(c) < block_us) {
        block_used_us_ += duration_us(c);
        ++block_next_step_;
        return i;
      }
      break;
    }
    block_active_ = false;  // the unit is complete (or its request is no longer a candidate)
  }
  const std::size_t chosen = choose(candidates, state);
  const StepCandidate& c = candidates[chosen];
  if (block_us > 0 && duration_us(c) < block_us) {
    block_active_ = true;
    block_request_ = c.request_id;
    block_next_step_ = c.step_index + 1;
    block_used_us_ = duration_us(c);
  }
  return chosen;
}

std::size_t IdleTimePolicy::choose(std::span<const StepCandidate> candidates, const AcceleratorState& state) {
  const std::size_t n = candidates.size();
  if (n == 1) return 0;
  // A device that cannot overlap Steps has no idle time to save: every order keeps it equally
  // busy, and interleaving only costs cache locality. Run requests one after another, as FIFO.
  if (!state.steps_overlap)
    return static_cast<std::size_t>(
        std::min_element(candidates.begin(), candidates.end(),
                         [](const StepCandidate& a, const StepCandidate& b) { return a.request_id < b.request_id; }) -
        candidates.begin());

  // Starvation guard: the longest-waiting candidate at or past the limit. The limit is at least
  // one full turn of the others (n - 1): n candidates served in turn are each passed over n - 1
  // times, so a lower limit would fire at almost every decision and the guard, not the estimate,
  // would set the order.
  const std::uint64_t limit = std::max<std::uint64_t>(options_.starvation_limit, n - 1);
  std::size_t starved = n;
  for (std::size_t i = 0; i < n; ++i)
    if (candidates[i].passed_over >= limit && (starved == n || waits_longer(candidates[i], candidates[starved])))
      starved = i;
  if (starved < n) return starved;

  // With candidates in arrival order, an option idling nothing cannot be beaten by a later one.
  const bool ascending = std::is_sorted(candidates.begin(), candidates.end(),
                                        [](const auto& a, const auto& b) { return a.request_id < b.request_id; });
  const std::size_t window = options_.window;
  const DeviceShadow start(state);

  // Each candidate's own Step first; look-aheads then run from the most promising, so the best
  // score so far prunes the others early. The order does not change the answer, only the work.
  first_compute_idle_.resize(n);
  first_memory_idle_.resize(n);
  order_.resize(n);
  steps_.resize(n);
  for (std::size_t i = 0; i < n; ++i) {
    const Idle own = start.estimate(candidates[i].cost());
    first_compute_idle_[i] = own.compute_us;
    first_memory_idle_[i] = own.memory_us;
    order_[i] = i;
    steps_[i] = static_cast<std::uint8_t>(window_steps(candidates[i], window));
  }
  std::sort(order_.begin(), order_.end(), [&](std::size_t a, std::size_t b) {
    return less(first_compute_idle_[a] + first_memory_idle_[a], first_memory_idle_[a], candidates[a],
                first_compute_idle_[b] + first_memory_idle_[b], first_memory_idle_[b], candidates[b]);
  });

  cursor_.resize(n);
  std::size_t best = n;
  Score best_score{std::numeric_limits<double>::infinity(), std::numeric_limits<double>::infinity()};
  // A score only grows as a look-ahead goes on, and (total, memory, waiting) order is kept under
  // growth: a candidate whose partial score does not beat the best cannot win.
  const auto can_win = [&](const Score& score, std::size_t i) {
    return best == n ||
           less(score.total, score.memory, candidates[i], best_score.total, best_score.memory, candidates[best]);
  };
  for (std::size_t i : order_) {
    Score score;
    score.add(Idle{first_compute_idle_[i], first_memory_idle_[i]});
    if (!can_win(score, i)) break;  // sorted: every later candidate starts no better
    if (window > 1) {
      DeviceShadow shadow = start;
      shadow.place(candidates[i].cost());
      std::fill(cursor_.begin(), cursor_.end(), std::uint8_t{0});
      cursor_[i] = 1;
      for (std::size_t depth = 1; depth < window && can_win(score, i); ++depth) {
        std::size_t next = n;
        Idle next_idle;
        for (std::size_t j = 0; j < n; ++j) {
          if (cursor_[j] >= steps_[j]) continue;
          const StepCandidate& c = candidates[j];
          const Idle idle = shadow.estimate(step_at(c, cursor_[j]));
          if (next == n || better_continuation(idle, c.request_id, next_idle, candidates[next].request_id)) {
            next = j;
            next_idle = idle;
            if (ascending && idle.total() == 0 && idle.imbalance_us == 0) break;
          }
        }
        if (next == n) break;  // every window is used up
        shadow.place(step_at(candidates[next], cursor_[next]));
        ++cursor_[next];
        score.add(next_idle);
      }
    }
    if (can_win(score, i)) {
      best = i;
      best_score = score;
    }
  }
  return best;
}

}  // namespace loom
