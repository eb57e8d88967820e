// loom-serve's KServe v2 gRPC front end: the GRPCInferenceService of proto/grpc_predict_v2.proto
// (health, metadata, infer) over gRPC's callback API, each call answered by the Service
// (service.hpp); the messages are converted by grpc_codec.hpp. docs/serve.md, "gRPC".
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include "service.hpp"

namespace loom::serve {

struct GrpcFrontendOptions {
  // Larger messages are refused by gRPC with RESOURCE_EXHAUSTED before they are read
  // (ServiceOptions::max_request_bytes).
  std::size_t max_request_bytes = std::size_t{64} << 20;
  // How long stop() lets accepted calls finish before gRPC cancels the ones left.
  std::chrono::milliseconds shutdown_grace{5000};
};

// ModelInfer calls so far: answered (accepted by the front end and answered, whatever the
// status) and refused (arrived once stop() had begun: UNAVAILABLE).
struct GrpcCallCounts {
  std::uint64_t answered = 0;
  std::uint64_t refused = 0;
};

class GrpcFrontend {
 public:
  // Listens on address:port (port 0: any free port, port() tells which) and starts serving.
  // Throws loom::Error(invalid_argument) naming address and port when it cannot listen there (in
  // use, bad address). `service` must outlive the front end.
  GrpcFrontend(Service& service, std::string address, int port, GrpcFrontendOptions options = {});
  ~GrpcFrontend();  // stop()
  GrpcFrontend(const GrpcFrontend&) = delete;
  GrpcFrontend& operator=(const GrpcFrontend&) = delete;

  const std::string& address() const noexcept { return address_; }
  int port() const noexcept { return port_; }  // the port bound, never 0

  // Stops accepting inference calls (a new one is answered UNAVAILABLE; ServerReady says false),
  // lets the accepted ones finish, then stops gRPC (cancelling any call still open after
  // shutdown_grace) and returns when every handler has returned. Idempotent.
  void stop();
  GrpcCallCounts calls() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  std::string address_;
  int port_ = 0;
};

}  // namespace loom::serve
