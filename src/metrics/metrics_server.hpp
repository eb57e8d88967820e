// The metrics endpoint: an HTTP server (cpp-httplib, on threads of its own) answering GET /metrics
// with the text a caller-supplied function returns, from construction to destruction.
#pragma once

#include <functional>
#include <memory>
#include <string>

namespace loom::metrics {

// The Content-Type of Prometheus text exposition format 0.0.4.
inline constexpr const char* kPrometheusContentType = "text/plain; version=0.0.4; charset=utf-8";

class MetricsServer {
 public:
  using TextSource = std::function<std::string()>;

  // Listens on address:port before returning (port 0: a free port the system picks; port() says
  // which), so that a port in use fails here. Throws Error(invalid_argument) "metrics port N on
  // ADDRESS: <why>" for a port outside 0..65535, an address that does not resolve, a port already
  // listened on or an address this host does not have. `source` is called on the server's threads,
  // possibly two at once, for every GET /metrics; an exception from it answers 500 with its
  // message. Any other path answers 404.
  MetricsServer(std::string address, int port, TextSource source);
  // Stops listening, waits for the requests being answered, and frees the port.
  ~MetricsServer();
  MetricsServer(const MetricsServer&) = delete;
  MetricsServer& operator=(const MetricsServer&) = delete;

  int port() const noexcept { return port_; }
  const std::string& address() const noexcept { return address_; }

 private:
  struct State;  // the httplib server and its listening thread, kept out of this header
  std::string address_;
  int port_ = 0;
  std::unique_ptr<State> state_;
};

}  // namespace loom::metrics
