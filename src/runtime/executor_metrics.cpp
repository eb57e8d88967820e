// The executor's metrics endpoint (ExecutorOptions::metrics_port): its stats() as Prometheus text
// on http://metrics_address:metrics_port/metrics, from the constructor until shutdown().
#include <string>

#include "metrics/prometheus_text.hpp"
#include "runtime/executor_impl.hpp"

namespace loom {

void Executor::Impl::start_metrics(const Executor& executor) {
  const int port = options.metrics_port;
  if (port == 0) return;
  if (port < 0 || port > 65535)
    throw Error(ErrorCode::invalid_argument,
                "metrics port " + std::to_string(port) + " on " + options.metrics_address +
                    ": not a TCP port (ExecutorOptions::metrics_port: 1 to 65535; 0 = off)");
  metrics::ExecutorIdentity identity{version(), executor.device_name(), executor.backend_name(),
                                     executor.policy_name()};
  // The server answers on its own threads while the executor runs; stop() ends it before the
  // executor's state goes, so `executor` outlives every call.
  metrics_server = std::make_unique<metrics::MetricsServer>(
      options.metrics_address, port,
      [&executor, identity = std::move(identity)] { return metrics::prometheus_text(executor.stats(), identity); });
}

}  // namespace loom
