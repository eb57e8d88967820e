// loom-serve's HTTP front end: the KServe v2 REST API (Open Inference Protocol) with the binary
// tensor extension, over cpp-httplib, in front of a Service. Routes and errors: docs/serve.md "HTTP".
#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include "service.hpp"

namespace loom::serve {

struct HttpOptions {
  // Threads answering connections. Each infer request holds its thread until its inference is
  // done, and a kept-alive connection holds it between requests (up to 5 s idle), so this bounds the
  // requests in progress at once, and with them how full a model's batches can get; further
  // connections wait in the pool's queue. Blocked threads cost no CPU.
  std::size_t threads = 64;
  // Request bodies larger than this are answered 413 (cpp-httplib's payload limit, and a check on
  // a compressed body's size once decompressed).
  std::size_t max_request_bytes = std::size_t{64} << 20;
  // How long a handler waits for its inference beyond the request's own timeout (or alone, when
  // the request has none) before answering 504; the inference itself carries on in the executor.
  double wait_cap_seconds = 600;
  // Seconds a read or write on a connection may stall. (A kept-alive connection's idle time
  // between requests is cpp-httplib's own: 5 s, at most 5 requests; docs/serve.md "HTTP".)
  int socket_timeout_seconds = 30;
};

class HttpFrontend {
 public:
  // Listens on address:port before returning (port 0: a free port the system picks; port() says
  // which) and serves from threads of its own. Throws Error(invalid_argument) "HTTP port N on
  // ADDRESS: <why>" for a port outside 0..65535, an address that does not resolve or that this host
  // does not have, or a port already in use. `service` must outlive the front end.
  HttpFrontend(Service& service, std::string address, int port, HttpOptions options = {});
  // stop(), then frees the port.
  ~HttpFrontend();
  HttpFrontend(const HttpFrontend&) = delete;
  HttpFrontend& operator=(const HttpFrontend&) = delete;

  int port() const noexcept { return port_; }
  const std::string& address() const noexcept { return address_; }

  // Stops accepting connections and waits for the requests being answered (an infer request for
  // its inference). Idempotent.
  void stop();

 private:
  struct State;  // the httplib server and its listening thread, kept out of this header
  std::string address_;
  int port_ = 0;
  std::unique_ptr<State> state_;
};

}  // namespace loom::serve
