// The metrics endpoint over cpp-httplib (Debian's libcpp-httplib-dev): bound in the constructor so
// that a port in use is an error there, served from a thread of its own, stopped in the destructor.
#include "metrics/metrics_server.hpp"

#include <httplib.h>
#include <netdb.h>
#include <sys/socket.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <exception>
#include <thread>
#include <utility>

#include "loom/error.hpp"
#include "loom/listen.hpp"

namespace loom::metrics {
namespace {

// Scrapes are rare (Prometheus: every 15 s or so); two workers let one slow client not block the
// next, where httplib's default would start at least eight threads per server.
constexpr std::size_t kWorkerThreads = 2;
// Short socket timeouts, and one request per connection, so that stopping never waits long for an
// idle or stalled client.
constexpr time_t kSocketTimeoutSeconds = 2;

// httplib's default options set SO_REUSEPORT, which lets a second server bind a port already
// listened on (both then share it silently). SO_REUSEADDR alone still refuses a port in use, and
// only lets a port be bound again while the previous server's closed connections linger in
// TIME_WAIT (loom-bench --compare runs one executor after the other on the same port).
void exclusive_port_options(socket_t sock) {
  int yes = 1;
  setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
}

}  // namespace

struct MetricsServer::State {
  httplib::Server server;
  std::thread listener;
  std::atomic<bool> listen_returned{false};
};

MetricsServer::MetricsServer(std::string address, int port, TextSource source)
    : address_(std::move(address)), port_(port), state_(std::make_unique<State>()) {
  const std::string where = "metrics port " + std::to_string(port) + " on " + address_;
  if (port < 0 || port > 65535)
    throw Error(ErrorCode::invalid_argument, where + ": not a TCP port (1 to 65535; 0 picks a free one)");
  if (!source) throw Error(ErrorCode::invalid_argument, where + ": no function gives the metrics text");
  check_listen_address(address_, where);

  auto& server = state_->server;
  server.set_socket_options(exclusive_port_options);
  server.new_task_queue = [] { return new httplib::ThreadPool(kWorkerThreads); };
  server.set_keep_alive_max_count(1);
  server.set_read_timeout(kSocketTimeoutSeconds, 0);
  server.set_write_timeout(kSocketTimeoutSeconds, 0);
  server.Get("/metrics", [source = std::move(source)](const httplib::Request&, httplib::Response& response) {
    response.set_content(source(), kPrometheusContentType);
  });
  server.set_exception_handler([](const httplib::Request&, httplib::Response& response, std::exception_ptr error) {
    std::string message = "unknown exception";
    try {
      std::rethrow_exception(error);
    } catch (const std::exception& e) {
      message = e.what();
    } catch (...) {
    }
    response.status = 500;
    response.set_content("loom metrics: " + message + "\n", "text/plain; charset=utf-8");
  });
  server.set_error_handler([](const httplib::Request& request, httplib::Response& response) {
    if (response.status == 404)
      response.set_content("loom: no page at " + request.path + "; the metrics are at /metrics\n",
                           "text/plain; charset=utf-8");
  });

  errno = 0;
  const int bound = port == 0 ? server.bind_to_any_port(address_) : (server.bind_to_port(address_, port) ? port : -1);
  if (bound <= 0) throw Error(ErrorCode::invalid_argument, where + ": " + listen_failure_reason(errno));
  port_ = bound;
  state_->listener = std::thread([state = state_.get()] {
    state->server.listen_after_bind();
    state->listen_returned = true;
  });
}

MetricsServer::~MetricsServer() {
  // httplib's stop() does nothing until listen_after_bind() has marked the server running, and the
  // listener would then accept for ever: wait for that mark (it is set first thing on the listening
  // thread), or for the listener to have given up on its own.
  while (!state_->server.is_running() && !state_->listen_returned) std::this_thread::yield();
  state_->server.stop();
  state_->listener.join();
}

}  // namespace loom::metrics
