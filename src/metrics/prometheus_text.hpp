// An Executor's stats as Prometheus metrics (the loom_* families of docs/metrics.md), in text
// exposition format 0.0.4: what the metrics endpoint serves.
#pragma once

#include <string>

#include "loom/stats.hpp"

namespace loom::metrics {

// What loom_info labels: which Loom, on what, scheduling how.
struct ExecutorIdentity {
  std::string version;  // loom::version()
  std::string device;   // Executor::device_name()
  std::string backend;  // Executor::backend_name()
  std::string policy;   // Executor::policy_name()
};

// Every loom_* family, in the order docs/metrics.md lists them, each with its HELP and TYPE lines
// (also when it has no sample yet: a family per model or per stage before any is known). Times
// are in seconds, sizes in bytes; counters end in _total.
std::string prometheus_text(const ExecutorStats& stats, const ExecutorIdentity& identity);

}  // namespace loom::metrics
