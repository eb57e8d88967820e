// The re-balancing rule of the host stages' threads.
#include "runtime/stage_balancer.hpp"

#include <algorithm>
#include <cstdio>
#include <limits>

namespace loom::runtime {
namespace {

double per_request(const StageLoad& s) {
  // A stage that finished nothing but was busy is at least that slow per request.
  if (s.items == 0) return s.busy_us;
  return s.busy_us / static_cast<double>(s.items);
}

// Requests per microsecond the stage can finish with `threads` threads.
double capacity(std::size_t threads, double us_per_request) {
  if (us_per_request <= 0) return std::numeric_limits<double>::infinity();
  return static_cast<double>(threads) / us_per_request;
}

std::string percent(double fraction) {
  char text[32];
  std::snprintf(text, sizeof text, "%.0f%%", fraction * 100);
  return text;
}

}  // namespace

RebalanceChoice choose_rebalance(const StageLoad& pre, const StageLoad& post, double interval_us, std::size_t budget) {
  using Move = RebalanceChoice::Move;
  RebalanceChoice choice;
  choice.pre_us_per_request = per_request(pre);
  choice.post_us_per_request = per_request(post);
  if (pre.items == 0 && post.items == 0) {
    choice.reason = "no request finished a host stage in the interval";
    return choice;
  }
  const double pre_capacity = capacity(pre.threads, choice.pre_us_per_request);
  const double post_capacity = capacity(post.threads, choice.post_us_per_request);
  const bool pre_limits = pre_capacity <= post_capacity;
  const StageLoad& limiting = pre_limits ? pre : post;
  const StageLoad& other = pre_limits ? post : pre;
  const double limiting_us = pre_limits ? choice.pre_us_per_request : choice.post_us_per_request;
  const double other_us = pre_limits ? choice.post_us_per_request : choice.pre_us_per_request;
  const char* limiting_name = pre_limits ? "pre-process" : "post-process";
  const double utilisation =
      interval_us > 0
          ? limiting.busy_us / (interval_us * static_cast<double>(std::max<std::size_t>(limiting.threads, 1)))
          : 0;
  if (utilisation < kStageSaturation) {
    choice.reason = std::string(limiting_name) + " limits the host stages but its threads were busy " +
                    percent(utilisation) + " of the time: more threads would not raise throughput";
    return choice;
  }
  choice.saturated = true;
  if (pre.threads + post.threads < budget) {
    choice.move = pre_limits ? Move::add_to_pre : Move::add_to_post;
    choice.reason =
        std::string(limiting_name) + " limits throughput (busy " + percent(utilisation) + "): a thread from the budget";
    return choice;
  }
  const double limit_now = capacity(limiting.threads, limiting_us);
  const double limiting_after = capacity(limiting.threads + 1, limiting_us);
  const double other_after = other.threads > 1 ? capacity(other.threads - 1, other_us) : 0;
  if (other.threads > 1 && std::min(limiting_after, other_after) > limit_now) {
    choice.move = pre_limits ? Move::post_to_pre : Move::pre_to_post;
    choice.reason = std::string(limiting_name) + " limits throughput (busy " + percent(utilisation) +
                    "), the budget is spent and the other stage keeps up with one thread fewer";
    return choice;
  }
  choice.reason = std::string(limiting_name) + " limits throughput (busy " + percent(utilisation) +
                  ") but the thread budget is spent and taking a thread from the other stage would not help";
  return choice;
}

}  // namespace loom::runtime
