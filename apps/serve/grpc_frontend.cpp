// The KServe v2 gRPC front end (grpc_frontend.hpp) on gRPC's callback API: no thread waits for an
// inference; ModelInfer's reactor is finished from the Service's completion callback.
#include "grpc_frontend.hpp"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <limits>
#include <mutex>
#include <optional>
#include <utility>

#include <grpcpp/grpcpp.h>

#include "grpc_codec.hpp"
#include "grpc_predict_v2.grpc.pb.h"
#include "loom/error.hpp"
#include "loom/listen.hpp"

namespace loom::serve {
namespace {

// "host:port" as gRPC parses it: an IPv6 literal goes in brackets.
std::string endpoint(const std::string& address, int port) {
  const bool ipv6 = address.find(':') != std::string::npos && address.front() != '[';
  return (ipv6 ? "[" + address + "]" : address) + ":" + std::to_string(port);
}

grpc::ServerUnaryReactor* finish(grpc::CallbackServerContext* context, grpc::Status status) {
  auto* reactor = context->DefaultReactor();
  reactor->Finish(std::move(status));
  return reactor;
}

// The time the client's deadline leaves, in milliseconds; nullopt when it set none.
std::optional<double> remaining_ms(const grpc::CallbackServerContext* context) {
  const auto deadline = context->deadline();
  if (deadline == std::chrono::system_clock::time_point::max()) return std::nullopt;
  // gRPC reports "no deadline" as a time far in the future: anything beyond a day is none.
  const auto left = std::chrono::duration<double, std::milli>(deadline - std::chrono::system_clock::now()).count();
  if (left > 24.0 * 3600 * 1000) return std::nullopt;
  return left;
}

// The inference calls a handler has accepted, and the drain before gRPC's Shutdown: once closed,
// a new ModelInfer is answered UNAVAILABLE here (gRPC itself answers CANCELLED to the calls it no
// longer hands to a handler, which a client cannot tell from a call cut short), and
// close_and_drain() waits for the accepted ones to be answered.
class CallGate {
 public:
  bool enter() {
    std::lock_guard lock(mutex_);
    if (closed_) {
      ++counts_.refused;
      return false;
    }
    ++in_flight_;
    return true;
  }
  void leave() {
    std::lock_guard lock(mutex_);
    --in_flight_;
    ++counts_.answered;
    drained_.notify_all();
  }
  // Returns whether every accepted call was answered before `deadline`.
  bool close_and_drain(std::chrono::steady_clock::time_point deadline) {
    std::unique_lock lock(mutex_);
    closed_ = true;
    return drained_.wait_until(lock, deadline, [this] { return in_flight_ == 0; });
  }
  bool closed() const {
    std::lock_guard lock(mutex_);
    return closed_;
  }
  GrpcCallCounts counts() const {
    std::lock_guard lock(mutex_);
    return counts_;
  }

 private:
  mutable std::mutex mutex_;
  std::condition_variable drained_;
  bool closed_ = false;
  std::int64_t in_flight_ = 0;
  GrpcCallCounts counts_;
};

class InferenceService final : public inference::GRPCInferenceService::CallbackService {
 public:
  // loom::serve::Service spelled out: inside the generated base, `Service` names its own class.
  explicit InferenceService(loom::serve::Service& service) : service_(service) {}

  grpc::ServerUnaryReactor* ServerLive(grpc::CallbackServerContext* context, const inference::ServerLiveRequest*,
                                       inference::ServerLiveResponse* response) override {
    response->set_live(service_.live());
    return finish(context, grpc::Status::OK);
  }

  grpc::ServerUnaryReactor* ServerReady(grpc::CallbackServerContext* context, const inference::ServerReadyRequest*,
                                        inference::ServerReadyResponse* response) override {
    response->set_ready(service_.ready() && !gate_.closed());  // not ready once stopping
    return finish(context, grpc::Status::OK);
  }

  // An unknown model is not ready (false), not an error: the call asks a yes/no question.
  grpc::ServerUnaryReactor* ModelReady(grpc::CallbackServerContext* context,
                                       const inference::ModelReadyRequest* request,
                                       inference::ModelReadyResponse* response) override {
    const auto model = service_.model(request->name(), request->version());
    response->set_ready(model && model->ready);
    return finish(context, grpc::Status::OK);
  }

  grpc::ServerUnaryReactor* ServerMetadata(grpc::CallbackServerContext* context,
                                           const inference::ServerMetadataRequest*,
                                           inference::ServerMetadataResponse* response) override {
    encode_server_metadata(*response);
    return finish(context, grpc::Status::OK);
  }

  grpc::ServerUnaryReactor* ModelMetadata(grpc::CallbackServerContext* context,
                                          const inference::ModelMetadataRequest* request,
                                          inference::ModelMetadataResponse* response) override {
    const auto model = service_.lookup(request->name(), request->version(), true);
    if (const auto* failure = std::get_if<Failure>(&model)) return finish(context, to_grpc_status(*failure));
    encode_model_metadata(std::get<ModelEntry>(model), *response);
    return finish(context, grpc::Status::OK);
  }

  grpc::ServerUnaryReactor* ModelConfig(grpc::CallbackServerContext* context,
                                        const inference::ModelConfigRequest* request,
                                        inference::ModelConfigResponse* response) override {
    const auto model = service_.lookup(request->name(), request->version(), true);
    if (const auto* failure = std::get_if<Failure>(&model)) return finish(context, to_grpc_status(*failure));
    encode_model_config(std::get<ModelEntry>(model), *response);
    return finish(context, grpc::Status::OK);
  }

  // `request` and `response` stay valid until the reactor finishes: the Service's callback, on an
  // executor's thread, fills the response and finishes it.
  grpc::ServerUnaryReactor* ModelInfer(grpc::CallbackServerContext* context,
                                       const inference::ModelInferRequest* request,
                                       inference::ModelInferResponse* response) override {
    if (!gate_.enter())
      return finish(context, grpc::Status(grpc::StatusCode::UNAVAILABLE, "loom-serve is shutting down"));
    // Nothing may escape a handler into gRPC: a decoding failure not foreseen (out of memory) is
    // the call's INTERNAL.
    std::variant<InferRequest, Failure> decoded;
    try {
      decoded = decode_infer_request(*request, remaining_ms(context));
    } catch (const std::exception& error) {
      decoded = Failure{Status::internal, std::string("decoding the request: ") + error.what()};
    }
    if (auto* failure = std::get_if<Failure>(&decoded)) {
      gate_.leave();
      return finish(context, to_grpc_status(*failure));
    }
    auto* reactor = context->DefaultReactor();
    // A call is finished exactly once: by the Service's callback or, should infer() throw without
    // having called it, here. The gate is left before Finish: once finished, the call may be over
    // and the front end gone.
    auto finished = std::make_shared<std::atomic<bool>>(false);
    try {
      service_.infer(std::get<InferRequest>(std::move(decoded)),
                     [this, reactor, response, finished](std::optional<Failure> failure, InferResponse answer) {
                       if (finished->exchange(true)) return;
                       grpc::Status status = grpc::Status::OK;
                       if (failure)
                         status = to_grpc_status(*failure);
                       else
                         encode_infer_response(answer, *response);
                       gate_.leave();
                       reactor->Finish(std::move(status));
                     });
    } catch (const std::exception& error) {
      if (!finished->exchange(true)) {
        gate_.leave();
        reactor->Finish(grpc::Status(grpc::StatusCode::INTERNAL, error.what()));
      }
    }
    return reactor;
  }

 public:
  CallGate& gate() noexcept { return gate_; }

 private:
  loom::serve::Service& service_;
  CallGate gate_;
};

}  // namespace

struct GrpcFrontend::Impl {
  explicit Impl(Service& service) : handlers(service) {}
  InferenceService handlers;
  std::unique_ptr<grpc::Server> server;
  std::chrono::milliseconds grace{};
  std::once_flag stopped;
};

GrpcFrontend::GrpcFrontend(Service& service, std::string address, int port, GrpcFrontendOptions options)
    : impl_(std::make_unique<Impl>(service)), address_(std::move(address)) {
  if (port < 0 || port > 65535)
    throw Error(ErrorCode::invalid_argument, "gRPC: port " + std::to_string(port) + " is not a TCP port (0..65535)");
  const std::string where = endpoint(address_, port);
  check_listen_address(address_, "gRPC port " + std::to_string(port) + " on " + address_);
  grpc::ServerBuilder builder;
  // gRPC sets SO_REUSEPORT by default, which lets a second server bind a port already in use
  // without an error; a port in use must fail here instead.
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  builder.SetMaxReceiveMessageSize(
      static_cast<int>(std::min<std::size_t>(options.max_request_bytes, std::numeric_limits<int>::max())));
  builder.SetMaxSendMessageSize(-1);  // answers are as large as the model's outputs
  int selected_port = 0;
  builder.AddListeningPort(where, grpc::InsecureServerCredentials(), &selected_port);
  builder.RegisterService(&impl_->handlers);
  impl_->server = builder.BuildAndStart();
  if (!impl_->server || selected_port == 0)
    throw Error(ErrorCode::invalid_argument,
                "gRPC: cannot listen on " + where + " (the port is in use or the address is not this machine's)");
  port_ = selected_port;
  impl_->grace = options.shutdown_grace;
}

GrpcFrontend::~GrpcFrontend() { stop(); }

void GrpcFrontend::stop() {
  std::call_once(impl_->stopped, [this] {
    // New inference calls are refused (UNAVAILABLE) while the accepted ones finish; then gRPC stops
    // listening, cancelling whatever the grace left unanswered, and every handler returns.
    const auto grace_end = std::chrono::steady_clock::now() + impl_->grace;
    impl_->handlers.gate().close_and_drain(grace_end);
    const auto left = std::max(grace_end - std::chrono::steady_clock::now(), std::chrono::steady_clock::duration{0});
    impl_->server->Shutdown(std::chrono::system_clock::now() +
                            std::chrono::duration_cast<std::chrono::system_clock::duration>(left));
    impl_->server->Wait();
  });
}

GrpcCallCounts GrpcFrontend::calls() const { return impl_->handlers.gate().counts(); }

}  // namespace loom::serve
