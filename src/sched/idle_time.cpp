// The idle-time policy of MISSION.md §1: starvation guard, then the candidate whose Step (and the
// greedy continuation over every request's window after it) idles the two resources least; equal
// candidates go to the one waiting longest.
#include <algorithm>
#include <cmath>
#include <limits>
#include <span>

#include "loom/error.hpp"
#include "loom/policy.hpp"
#include "sched/device_shadow.hpp"

namespace loom {
namespace {

using sched::DeviceShadow;
using sched::Idle;

// What a look-ahead costs, compared in this order: the idle it causes (total, then memory idle),
// then how far apart the two resources' free times are after each placement, summed (the idle it
// leaves for later: a resource that runs ahead waits for the other at the end). Each part only
// grows as placements are added.
using Score = detail::IdleTimeScore;

// `idle` of a placement: after it, compute is free imbalance_us after memory.
void add(Score& score, const Idle& idle) noexcept {
  score.total += idle.total();
  score.memory += idle.memory_us;
  score.imbalance += std::abs(idle.imbalance_us);
}

bool better(const Score& a, const Score& b) noexcept {
  if (a.total != b.total) return a.total < b.total;
  if (a.memory != b.memory) return a.memory < b.memory;
  return a.imbalance < b.imbalance;
}

// Orders of a window searched in full while (candidates)^(window - 1) is at most this; beyond,
// the look-ahead continues greedily. 128: two requests with any window, four with a window of 4.
constexpr double kSearchLeaves = 128;

// The least score over every order of `depth` more placements from `shadow` (each request's
// Steps in model order, within its window), added to `partial`, into `best`. A branch stops as
// soon as it is no better than `best` or worse than `bound` (the best other first choice).
void search_orders(std::span<const StepCandidate> candidates, std::span<std::uint8_t> cursor,
                   std::span<const std::uint8_t> steps, const DeviceShadow& shadow, std::size_t depth,
                   const Score& partial, const Score& bound, Score& best) noexcept {
  bool placed = false;
  if (depth > 0)
    for (std::size_t j = 0; j < candidates.size(); ++j) {
      if (cursor[j] >= steps[j]) continue;
      placed = true;
      DeviceShadow next = shadow;
      const StepCost step = cursor[j] == 0 ? candidates[j].cost() : candidates[j].lookahead[cursor[j] - 1];
      Score score = partial;
      add(score, next.place(step));
      if (!better(score, best) || better(bound, score)) continue;
      ++cursor[j];
      search_orders(candidates, cursor, steps, next, depth - 1, score, bound, best);
      --cursor[j];
    }
  if (!placed && better(partial, best)) best = partial;  // the windows are used up, or the depth
}

// The order of waiting: passed over more, then the earlier arrival. The guard takes the first
// starved candidate in it, and it breaks ties between equal scores, so that equally good
// candidates take turns: ties to the earliest arrival alone serve the oldest requests and starve
// the rest, which then reach the guard together and are forced one after another whatever they
// cost (docs/simulator.md, "The idle-time policy").
bool waits_longer(const StepCandidate& a, const StepCandidate& b) noexcept {
  if (a.passed_over != b.passed_over) return a.passed_over > b.passed_over;
  return a.request_id < b.request_id;
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

  // On a device that runs each model's Steps on one stream, only the oldest request of each
  // model competes: a younger one's Steps would queue behind the older one's anyway, and taking
  // turns with it only delays the older request (the same model's p99 grows, nothing overlaps).
  excluded_.assign(n, 0);
  std::size_t eligible = n;
  if (state.one_stream_per_model) {
    std::size_t models = 0;
    for (const StepCandidate& c : candidates) models = std::max(models, c.model_index + 1);
    oldest_.assign(models, n);
    for (std::size_t i = 0; i < n; ++i) {
      std::size_t& oldest = oldest_[candidates[i].model_index];
      if (oldest == n || candidates[i].request_id < candidates[oldest].request_id) oldest = i;
    }
    for (std::size_t i = 0; i < n; ++i) excluded_[i] = oldest_[candidates[i].model_index] != i;
    eligible = oldest_.size() - static_cast<std::size_t>(std::count(oldest_.begin(), oldest_.end(), n));
    if (eligible == 1) return oldest_[candidates[0].model_index];
  }

  // Starvation guard: the longest-waiting candidate at or past the limit. The limit is at least
  // one full turn of the others (n - 1): n candidates served in turn are each passed over n - 1
  // times, so a lower limit would fire at almost every decision and the guard, not the estimate,
  // would set the order.
  const std::uint64_t limit = std::max<std::uint64_t>(options_.starvation_limit, eligible - 1);
  std::size_t starved = n;
  for (std::size_t i = 0; i < n; ++i)
    if (!excluded_[i] && candidates[i].passed_over >= limit &&
        (starved == n || waits_longer(candidates[i], candidates[starved])))
      starved = i;
  if (starved < n) return starved;

  // With candidates in arrival order, an option idling nothing cannot be beaten by a later one.
  const bool ascending = std::is_sorted(candidates.begin(), candidates.end(),
                                        [](const auto& a, const auto& b) { return a.request_id < b.request_id; });
  const std::size_t window = options_.window;
  const DeviceShadow start(state);

  // Each candidate's own Step first; look-aheads then run from the most promising, so the best
  // score so far prunes the others early. The order does not change the answer, only the work.
  first_.resize(n);
  order_.clear();
  steps_.resize(n);
  for (std::size_t i = 0; i < n; ++i) {
    first_[i] = Score{};
    add(first_[i], start.estimate(candidates[i].cost()));
    if (!excluded_[i]) order_.push_back(i);
    steps_[i] = excluded_[i] ? 0 : static_cast<std::uint8_t>(window_steps(candidates[i], window));
  }
  std::sort(order_.begin(), order_.end(), [&](std::size_t a, std::size_t b) {
    if (better(first_[a], first_[b])) return true;
    if (better(first_[b], first_[a])) return false;
    return waits_longer(candidates[a], candidates[b]);
  });

  cursor_.resize(n);
  std::size_t best = n;
  constexpr double kInf = std::numeric_limits<double>::infinity();
  Score best_score{kInf, kInf, kInf};
  // Every part of a score only grows as placements are added. The candidates are looked at in
  // order of their first Step's score, then of waiting, and a later one must do strictly better
  // than the best so far (equal scores go to the earlier: better first Step, or waiting longer);
  // so a partial score no better than the best cannot win, and once a first Step scores no better,
  // no later candidate can.
  const auto can_win = [&](const Score& score) { return best == n || better(score, best_score); };
  const bool exhaustive =
      window > 2 && std::pow(static_cast<double>(order_.size()), static_cast<double>(window - 1)) <= kSearchLeaves;
  for (std::size_t i : order_) {
    if (!can_win(first_[i])) break;
    DeviceShadow shadow = start;
    Score score;
    add(score, shadow.place(candidates[i].cost()));
    std::fill(cursor_.begin(), cursor_.end(), std::uint8_t{0});
    cursor_[i] = 1;
    if (exhaustive) {
      Score leaf{kInf, kInf, kInf};
      search_orders(candidates, cursor_, steps_, shadow, window - 1, score, best_score, leaf);
      score = leaf;
    } else {
      for (std::size_t depth = 1; depth < window && can_win(score); ++depth) {
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
        // The greedy continuation counts idle only; the imbalance stays the first Step's, so
        // that candidates equal in idle need no full look-ahead to be told apart.
        score.total += next_idle.total();
        score.memory += next_idle.memory_us;
      }
    }
    if (can_win(score)) {
      best = i;
      best_score = score;
    }
  }
  return best;
}

}  // namespace loom
