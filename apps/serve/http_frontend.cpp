// The KServe v2 REST front end over cpp-httplib (Debian's libcpp-httplib-dev): routes, statuses and
// the wait for each inference; the bodies are http_codec's. Bound in the constructor so that a port
// in use is an error there.
#include "http_frontend.hpp"

#include <httplib.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstring>
#include <exception>
#include <future>
#include <mutex>
#include <thread>
#include <utility>

#include "http_codec.hpp"
#include "loom/error.hpp"
#include "loom/listen.hpp"

namespace loom::serve {
namespace {

constexpr const char* kJson = "application/json";
// The binary tensor extension's answers: JSON then raw bytes.
constexpr const char* kBinary = "application/octet-stream";

// httplib's default socket options set SO_REUSEPORT, which would let a second server share a port
// already listened on; SO_REUSEADDR alone still refuses a port in use. TCP_NODELAY (which Linux
// passes on to the accepted connections): httplib writes an answer's headers and body separately,
// and a small body held back by Nagle's algorithm until the client's delayed ACK costs 40 ms.
void listening_socket_options(socket_t sock) {
  int yes = 1;
  setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
  setsockopt(sock, IPPROTO_TCP, TCP_NODELAY, &yes, sizeof yes);
}

void reply_error(httplib::Response& response, int status, const std::string& message) {
  response.status = status;
  response.set_content(http_error_body(message), kJson);
}

void reply_failure(httplib::Response& response, const Failure& failure) {
  reply_error(response, http_status(failure.status), failure.message);
}

std::string model_label(const std::string& model, const std::string& version) {
  return "model '" + model + "'" + (version.empty() ? "" : " version '" + version + "'");
}

// The model a route names, or the Service's 404 / 503 answer already written.
std::optional<ModelEntry> find_model(const Service& service, const std::string& model, const std::string& version,
                                     httplib::Response& response, bool need_ready) {
  auto found = service.lookup(model, version, need_ready);
  if (auto* failure = std::get_if<Failure>(&found)) {
    reply_failure(response, *failure);
    return std::nullopt;
  }
  return std::get<ModelEntry>(std::move(found));
}

std::string match(const httplib::Request& request, std::size_t index) {
  return index < request.matches.size() ? std::string(request.matches[index]) : std::string();
}

// The Inference-Header-Content-Length header: nullopt when absent, a 400 when not a byte count.
std::optional<std::size_t> header_length(const httplib::Request& request) {
  if (!request.has_header("Inference-Header-Content-Length")) return std::nullopt;
  const std::string text = request.get_header_value("Inference-Header-Content-Length");
  std::size_t value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || error != std::errc() || end != text.data() + text.size())
    throw Error(ErrorCode::invalid_argument, "Inference-Header-Content-Length: '" + text + "' is not a byte count");
  return value;
}

// httplib decodes gzip, deflate and br bodies before the handler sees them, and passes any other
// encoding through undecoded: those are refused here rather than read as JSON.
bool encoding_supported(const std::string& encoding) {
  return encoding.empty() || encoding == "identity" || encoding == "gzip" || encoding == "deflate" || encoding == "br";
}

using InferResult = std::pair<std::optional<Failure>, InferResponse>;

}  // namespace

struct HttpFrontend::State {
  httplib::Server server;
  std::thread listener;
  std::atomic<bool> listen_returned{false};
  std::once_flag stopped;
};

HttpFrontend::HttpFrontend(Service& service, std::string address, int port, HttpOptions options)
    : address_(std::move(address)), port_(port), state_(std::make_unique<State>()) {
  const std::string where = "HTTP port " + std::to_string(port) + " on " + address_;
  if (port < 0 || port > 65535)
    throw Error(ErrorCode::invalid_argument, where + ": not a TCP port (1 to 65535; 0 picks a free one)");
  if (options.threads == 0) throw Error(ErrorCode::invalid_argument, where + ": 0 threads cannot answer requests");
  if (options.max_request_bytes == 0)
    throw Error(ErrorCode::invalid_argument, where + ": a request size limit of 0 bytes refuses every request");
  check_listen_address(address_, where);

  auto& server = state_->server;
  server.set_socket_options(listening_socket_options);
  const std::size_t threads = options.threads;
  server.new_task_queue = [threads] { return new httplib::ThreadPool(threads); };
  server.set_read_timeout(options.socket_timeout_seconds, 0);
  server.set_write_timeout(options.socket_timeout_seconds, 0);
  server.set_payload_max_length(options.max_request_bytes);

  Service* svc = &service;
  server.Get("/v2/health/live", [svc](const httplib::Request&, httplib::Response& response) {
    response.status = svc->live() ? 200 : 503;
  });
  server.Get("/v2/health/ready", [svc](const httplib::Request&, httplib::Response& response) {
    if (svc->ready()) return;
    std::string waiting;
    for (const auto& model : svc->models())
      if (!model.ready) waiting += (waiting.empty() ? "'" : ", '") + model.name + "'";
    reply_error(response, 503,
                waiting.empty() ? "the server is not ready" : "not every model is ready: " + waiting + " not ready");
  });
  server.Get("/v2", [](const httplib::Request&, httplib::Response& response) {
    response.set_content(encode_server_metadata(), kJson);
  });
  server.Post("/v2/repository/index", [svc](const httplib::Request&, httplib::Response& response) {
    response.set_content(encode_repository_index(svc->models()), kJson);
  });
  server.Get(R"(/v2/models/([^/]+)(?:/versions/([^/]+))?/ready)",
             [svc](const httplib::Request& request, httplib::Response& response) {
               if (find_model(*svc, match(request, 1), match(request, 2), response, true)) response.status = 200;
             });
  server.Get(R"(/v2/models/([^/]+)(?:/versions/([^/]+))?/config)",
             [svc](const httplib::Request& request, httplib::Response& response) {
               if (auto entry = find_model(*svc, match(request, 1), match(request, 2), response, true))
                 response.set_content(encode_model_config(*entry), kJson);
             });
  server.Get(R"(/v2/models/([^/]+)(?:/versions/([^/]+))?)",
             [svc](const httplib::Request& request, httplib::Response& response) {
               if (auto entry = find_model(*svc, match(request, 1), match(request, 2), response, true))
                 response.set_content(encode_model_metadata(*entry), kJson);
             });
  const std::size_t max_bytes = options.max_request_bytes;
  const double wait_cap_seconds = options.wait_cap_seconds;
  // The infer route reads its body through a ContentReader: httplib would otherwise parse a body
  // sent as application/x-www-form-urlencoded (curl -d's default) as a form, and refuse one over
  // 8 KiB. The reader still applies the payload limit and decodes gzip/deflate/br.
  server.Post(
      R"(/v2/models/([^/]+)(?:/versions/([^/]+))?/infer)",
      [svc, max_bytes, wait_cap_seconds](const httplib::Request& request, httplib::Response& response,
                                         const httplib::ContentReader& content_reader) {
        // The whole body is read (the connection may carry the next request), but kept only up to
        // the limit: a small compressed body may decode to much more.
        std::string body;
        std::size_t body_bytes = 0;
        const bool read = content_reader([&](const char* data, std::size_t length) {
          body_bytes += length;
          if (body_bytes <= max_bytes) body.append(data, length);
          return true;
        });
        // httplib refuses a Content-Length over its payload limit (the same max_bytes) unread.
        if (!read && response.status == 413)
          return reply_error(response, 413,
                             "the request body is over the server's limit of " + std::to_string(max_bytes) + " bytes");
        if (!read)
          return reply_error(response, 400, "the request body could not be read (cut short, or badly encoded)");
        const std::string encoding = request.get_header_value("Content-Encoding");
        if (!encoding_supported(encoding))
          return reply_error(response, 400,
                             "Content-Encoding '" + encoding + "' is unsupported (identity, gzip, deflate or br)");
        if (body_bytes > max_bytes)
          return reply_error(response, 413,
                             "the request body is " + std::to_string(body_bytes) +
                                 " bytes once decoded, over the server's limit of " + std::to_string(max_bytes));
        // An unknown model is 404 whatever the body holds; readiness and the inputs are the
        // Service's to check.
        if (auto refused = svc->refusal(match(request, 1), match(request, 2), false))
          return reply_failure(response, *refused);
        DecodedInfer decoded;
        try {
          decoded = decode_infer_request(body, header_length(request), match(request, 1), match(request, 2));
        } catch (const Error& e) {
          return reply_error(response, 400, e.what());
        }
        const bool all_binary = decoded.request.outputs.empty() && decoded.binary_data_output;
        const std::string label = model_label(decoded.request.model, decoded.request.version);
        // Bounded so that a huge timeout still converts to the clock's nanoseconds.
        const double wait_seconds = std::min(wait_cap_seconds + decoded.request.timeout_ms / 1000.0, 1e8);

        // The answer may come on an executor's thread after this handler gave up waiting:
        // the promise is shared with the callback.
        auto promise = std::make_shared<std::promise<InferResult>>();
        auto future = promise->get_future();
        svc->infer(std::move(decoded.request), [promise](std::optional<Failure> failure, InferResponse answer) {
          promise->set_value(InferResult{std::move(failure), std::move(answer)});
        });
        if (future.wait_for(std::chrono::duration<double>(wait_seconds)) != std::future_status::ready)
          return reply_error(response, 504, label + ": no answer within " + std::to_string(wait_seconds) + " s");
        auto [failure, answer] = future.get();
        if (failure) return reply_failure(response, *failure);
        EncodedInfer encoded = encode_infer_response(answer, all_binary);
        if (encoded.header_length)
          response.set_header("Inference-Header-Content-Length", std::to_string(*encoded.header_length));
        response.set_content(std::move(encoded.body), encoded.header_length ? kBinary : kJson);
      });

  server.set_exception_handler([](const httplib::Request&, httplib::Response& response, std::exception_ptr error) {
    std::string message = "unknown exception";
    try {
      std::rethrow_exception(error);
    } catch (const std::exception& e) {
      message = e.what();
    } catch (...) {
    }
    reply_error(response, 500, "loom-serve: " + message);
  });
  // httplib's own refusals (no route, a body over the limit, a malformed request line) arrive with
  // an empty body: the protocol wants {"error": ...}.
  server.set_error_handler([max_bytes](const httplib::Request& request, httplib::Response& response) {
    if (!response.body.empty()) return;
    if (response.status == 404)
      reply_error(response, 404, "no route for " + request.method + " " + request.path + " (KServe v2: /v2/...)");
    else if (response.status == 413)
      reply_error(response, 413,
                  "the request body is over the server's limit of " + std::to_string(max_bytes) + " bytes");
    else if (response.status == 400)
      reply_error(response, 400, "the HTTP request could not be read (a body needs a Content-Length or chunks)");
    else
      reply_error(response, response.status, "HTTP status " + std::to_string(response.status));
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

void HttpFrontend::stop() {
  std::call_once(state_->stopped, [this] {
    // httplib's stop() does nothing until listen_after_bind() has marked the server running: wait
    // for that mark (set first thing on the listening thread) or for the listener to have returned.
    while (!state_->server.is_running() && !state_->listen_returned) std::this_thread::yield();
    state_->server.stop();
    // listen_after_bind() returns once its thread pool has answered every accepted connection.
    state_->listener.join();
  });
}

HttpFrontend::~HttpFrontend() { stop(); }

}  // namespace loom::serve
