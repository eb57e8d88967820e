// loom-serve: serves a Triton-style model repository over the KServe v2 protocol (HTTP REST with
// the binary tensor extension; gRPC where built), every request through Loom's executors. Prints
// one line per listening endpoint and "loom-serve: ready"; SIGINT/SIGTERM stop it cleanly (exit 0).
#include <CLI/CLI.hpp>
#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <memory>
#include <optional>
#include <string>

#include "cli_support.hpp"
#include "loom/loom.hpp"
#include "serve/http_frontend.hpp"
#ifdef LOOM_SERVE_GRPC
#include "serve/grpc_frontend.hpp"  // gRPC front end (serve-grpc)
#endif
#include "serve/repository.hpp"
#include "serve/service.hpp"

namespace cli = loom::cli;

namespace {

struct ServeFlags {
  std::string repository;
  int http_port = 8000;
  int metrics_port = 8002;
  // --- gRPC front end (serve-grpc): its port flag, 8001 by default, -1 off. ---
  int grpc_port = 8001;
  std::string address = "127.0.0.1";
  std::string device = "auto";
  std::string policy = "fifo";
  std::size_t cpu_threads = 0;
  bool cpu_stream_shares = false;
  std::size_t http_threads = 64;
  std::size_t max_request_bytes = std::size_t{64} << 20;
};

// The footer of --help; the config keys come from the parser's own list.
std::string footer() {
  return std::string(R"(Model repository (docs/serve.md):
  REPO/<model>/<version>/model.onnx, the highest numeric version served; REPO/<model>/config.json
  (optional), its keys:
  )") + loom::serve::kModelConfigKeys +
         R"(.
  A model that fails to load is reported not ready with its error; the others are served.
Ports:
  0 picks a free port (the "listening" line gives it); -1 turns that endpoint off. Executor i (one
  per device) serves its metrics on --metrics-port + i, one "metrics listening" line each. With
  --metrics-port 0 the system picks a free port for the first, handed to the executors (another
  process could take it in between: give fixed ports in production).
Output:
  "loom-serve: HTTP listening on ADDRESS:PORT" (and gRPC, metrics: one line per endpoint), then
  "loom-serve: ready" on stdout; each model's state on stderr. SIGINT or SIGTERM: stop accepting,
  finish the requests accepted, exit 0. Errors (bad flags, an unreadable repository, a port in use)
  exit 1 with the reason on stderr.
Example:
  loom-serve --model-repository models --http-port 8000 --metrics-port -1 --device cpu
  curl -s localhost:8000/v2/models/<model>)";
}

CLI::Validator port_or_off() {
  return CLI::Validator(
      [](std::string& value) -> std::string {
        try {
          std::size_t used = 0;
          const int port = std::stoi(value, &used);
          if (used == value.size() && port >= -1 && port <= 65535) return {};
        } catch (const std::exception&) {
        }
        return "expected a TCP port (1 to 65535), 0 for any free port or -1 for off, got '" + value + "'";
      },
      "");
}

// A free TCP port on `address`, as the system picks it for a socket bound to port 0 and closed
// again: for the executors' metrics endpoint, whose own 0 means "off".
int pick_free_port(const std::string& address) {
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (getaddrinfo(address.c_str(), nullptr, &hints, &found) != 0 || !found)
    throw loom::Error(loom::ErrorCode::invalid_argument,
                      "metrics port 0 on " + address + ": the address does not resolve");
  const int sock = socket(found->ai_family, SOCK_STREAM, 0);
  int port = -1;
  if (sock >= 0 && bind(sock, found->ai_addr, found->ai_addrlen) == 0) {
    sockaddr_storage bound{};
    socklen_t length = sizeof bound;
    if (getsockname(sock, reinterpret_cast<sockaddr*>(&bound), &length) == 0)
      port = ntohs(bound.ss_family == AF_INET6 ? reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port
                                               : reinterpret_cast<sockaddr_in*>(&bound)->sin_port);
  }
  const int error = errno;
  if (sock >= 0) close(sock);
  freeaddrinfo(found);
  if (port <= 0)
    throw loom::Error(loom::ErrorCode::invalid_argument,
                      "metrics port 0 on " + address + ": no free port (" + std::strerror(error) + ")");
  return port;
}

void print_line(const std::string& line) {
  std::fputs(line.c_str(), stdout);
  std::fputc('\n', stdout);
  std::fflush(stdout);
}

int serve(const ServeFlags& flags, const sigset_t& stop_signals) {
  loom::serve::ServiceOptions options;
  options.repository = flags.repository;
  options.device = flags.device;
  options.max_request_bytes = flags.max_request_bytes;
  options.executor.policy = flags.policy;
  options.executor.cpu_threads = flags.cpu_threads;
  options.executor.cpu_stream_shares = flags.cpu_stream_shares;
  options.executor.metrics_address = flags.address;
  options.executor.metrics_port = flags.metrics_port < 0    ? 0
                                  : flags.metrics_port == 0 ? pick_free_port(flags.address)
                                                            : flags.metrics_port;

  loom::serve::Service service(options);
  const auto devices = service.devices();
  for (const auto& model : service.models()) {
    if (model.ready)
      std::fprintf(
          stderr, "loom-serve: model %s version %s: ready on %s\n", model.name.c_str(), model.version.c_str(),
          model.device >= 0 && model.device < static_cast<int>(devices.size()) ? devices[model.device].c_str() : "?");
    else
      std::fprintf(stderr, "loom-serve: model %s version %s: not ready: %s\n", model.name.c_str(),
                   model.version.c_str(), model.error.c_str());
  }

  std::unique_ptr<loom::serve::HttpFrontend> http;
  if (flags.http_port >= 0) {
    loom::serve::HttpOptions http_options;
    http_options.threads = flags.http_threads;
    http_options.max_request_bytes = flags.max_request_bytes;
    http = std::make_unique<loom::serve::HttpFrontend>(service, flags.address, flags.http_port, http_options);
    print_line("loom-serve: HTTP listening on " + http->address() + ":" + std::to_string(http->port()));
  }
  // --- gRPC front end (serve-grpc): started here, its "gRPC listening on" line printed. ---
#ifdef LOOM_SERVE_GRPC
  std::unique_ptr<loom::serve::GrpcFrontend> grpc;
  if (flags.grpc_port >= 0) {
    loom::serve::GrpcFrontendOptions grpc_options;
    grpc_options.max_request_bytes = flags.max_request_bytes;
    grpc = std::make_unique<loom::serve::GrpcFrontend>(service, flags.address, flags.grpc_port, grpc_options);
    print_line("loom-serve: gRPC listening on " + grpc->address() + ":" + std::to_string(grpc->port()));
  }
#else
  std::fprintf(stderr, "loom-serve: built without gRPC (cmake/loom_grpc.cmake): KServe v2 over HTTP only\n");
#endif
  // Executor i serves its metrics on metrics_port + i (docs/serve.md "Devices").
  if (options.executor.metrics_port > 0)
    for (std::size_t i = 0; i < devices.size(); ++i)
      print_line("loom-serve: metrics listening on " + flags.address + ":" +
                 std::to_string(options.executor.metrics_port + static_cast<int>(i)));
  print_line("loom-serve: ready");

  int signal_number = 0;
  sigwait(&stop_signals, &signal_number);
  std::fprintf(stderr, "loom-serve: %s: finishing the requests accepted\n", strsignal(signal_number));
  // The batchers stop waiting for their delay first: the front ends wait for the requests they
  // accepted, and gRPC cancels the calls still open after its grace.
  service.drain();
  // Front ends next (no new requests; each waits for those it accepted), then the executors.
  // --- gRPC front end (serve-grpc): stopped here, before the service. ---
#ifdef LOOM_SERVE_GRPC
  if (grpc) {
    grpc->stop();
    const auto calls = grpc->calls();
    std::fprintf(stderr, "loom-serve: gRPC: %llu inference calls answered, %llu refused while stopping\n",
                 static_cast<unsigned long long>(calls.answered), static_cast<unsigned long long>(calls.refused));
  }
#endif
  if (http) http->stop();
  service.shutdown();
  std::fprintf(stderr, "loom-serve: stopped\n");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  // SIGINT and SIGTERM are taken by sigwait() on the main thread: blocked before any thread starts,
  // so that every thread the executors and front ends start inherits the mask.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);

  ServeFlags flags;
  CLI::App app{
      "Serves the ONNX models of a model repository over the KServe v2 protocol (Triton's clients,\n"
      "perf_analyzer and KServe speak it), every request scheduled by Loom's executors.",
      "loom-serve"};
  app.footer(footer());
  app.get_formatter()->column_width(36);
  try {
    app.set_version_flag("--version", std::string("loom-serve ") + loom::version(), "Print the version and exit");
    app.add_option("--model-repository", flags.repository, "The model repository folder (required)")
        ->required()
        ->type_name("DIR");
    app.add_option("--http-port", flags.http_port, "KServe v2 REST port; 0: any free port; -1: no HTTP")
        ->check(port_or_off())
        ->type_name("PORT")
        ->capture_default_str();
    // --- gRPC front end (serve-grpc): --grpc-port here. ---
#ifdef LOOM_SERVE_GRPC
    app.add_option("--grpc-port", flags.grpc_port, "KServe v2 gRPC port; 0: any free port; -1: no gRPC")
        ->check(port_or_off())
        ->type_name("PORT")
        ->capture_default_str();
#endif
    app.add_option("--metrics-port", flags.metrics_port,
                   "Prometheus metrics port (GET /metrics, docs/metrics.md); 0: any free port; -1: no metrics")
        ->check(port_or_off())
        ->type_name("PORT")
        ->capture_default_str();
    app.add_option("--address", flags.address,
                   "Address every endpoint listens on: 127.0.0.1 this host only, 0.0.0.0 every interface")
        ->type_name("ADDRESS")
        ->capture_default_str();
    app.add_option("--device", flags.device,
                   "auto (every GPU when there is one, else the CPU), cpu, cuda (every GPU), cuda:N, or cpu:accel")
        ->type_name("auto|cpu|cpu:accel|cuda|cuda:N")
        ->check(cli::device_name())
        ->capture_default_str();
    app.add_option(
           "--policy", flags.policy,
           "The executors' scheduling policy: " +
               [] {
                 std::string names;
                 for (const auto& name : loom::policy_names()) names += (names.empty() ? "" : ", ") + name;
                 return names;
               }())
        ->type_name("NAME")
        ->capture_default_str();
    app.add_option("--cpu-threads", flags.cpu_threads, "CPU backend: threads a kernel may use (0: one per core)")
        ->check(cli::non_negative_integer())
        ->type_name("N")
        ->capture_default_str();
    app.add_flag("--cpu-stream-shares", flags.cpu_stream_shares,
                 "CPU backend: each model's stream gets a worker thread and a share of the cores, so Steps of "
                 "different models run at the same time (docs/cpu-threads.md); off: one Step at a time on every core");
    app.add_option("--http-threads", flags.http_threads,
                   "Threads answering HTTP connections: the requests in progress at once (each waits for its "
                   "inference), which also bounds how full batches get")
        ->check(cli::positive_integer())
        ->type_name("N")
        ->capture_default_str();
    app.add_option("--max-request-bytes", flags.max_request_bytes,
                   "Larger request bodies are refused (HTTP 413, gRPC RESOURCE_EXHAUSTED)")
        ->check(cli::positive_integer())
        ->type_name("BYTES")
        ->capture_default_str();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "loom-serve: %s\n", e.what());
    return 1;
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // --help and --version exit 0; every flag mistake exits 1 with CLI11's message.
    return app.exit(e) == 0 ? 0 : 1;
  }
  return cli::run_guarded("loom-serve", [&] { return serve(flags, stop_signals); });
}
