// The metrics endpoint scraped with a real HTTP client (httplib::Client): the MetricsServer alone,
// then an Executor serving its own stats while requests run, with the counters checked against
// what the test completed; a port in use, a bad port or address are errors that name them.
#include <gtest/gtest.h>

#include <httplib.h>

#include <atomic>
#include <future>
#include <memory>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "loom/executor.hpp"
#include "metrics/metrics_server.hpp"
#include "test_support.hpp"

using namespace loom;
using loom::test_support::expect_error;

namespace {

struct Scrape {
  int status = 0;
  std::string content_type;
  std::string body;
};

// GET http://127.0.0.1:port/path; nothing when no server answers. Every wait is bounded.
std::optional<Scrape> scrape(int port, const std::string& path = "/metrics") {
  httplib::Client client("127.0.0.1", port);
  client.set_connection_timeout(5, 0);
  client.set_read_timeout(10, 0);
  client.set_write_timeout(5, 0);
  auto response = client.Get(path.c_str());
  if (!response) return std::nullopt;
  return Scrape{response->status, response->get_header_value("Content-Type"), response->body};
}

// The value of one sample, its name and labels written exactly as served; nothing when absent.
std::optional<double> sample(const std::string& text, const std::string& series) {
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);)
    if (line.size() > series.size() && line.compare(0, series.size(), series) == 0 && line[series.size()] == ' ')
      return std::stod(line.substr(series.size() + 1));
  return std::nullopt;
}

// A port nothing listens on: the system picks one for a throwaway server, which frees it again.
int free_port() {
  metrics::MetricsServer probe("127.0.0.1", 0, [] { return std::string(); });
  return probe.port();
}

// An executor serving metrics on a free port, and the port. Another process may take the port
// between free_port() and the bind, so a port in use is retried with a fresh one.
struct ServedExecutor {
  std::unique_ptr<Executor> executor;
  int port = 0;
};
ServedExecutor executor_with_metrics(ExecutorOptions options) {
  for (int attempt = 1;; ++attempt) {
    options.metrics_port = free_port();
    try {
      return {std::make_unique<Executor>(options), options.metrics_port};
    } catch (const Error& e) {
      if (attempt == 5 || std::string(e.what()).find("in use") == std::string::npos) throw;
    }
  }
}

ExecutorOptions cpu_options() {
  ExecutorOptions o;
  o.device = "cpu";
  return o;
}

// y = x · W: one Gemm Step, so each request runs a known number of Steps.
Model gemm_model() {
  ModelBuilder mb("gemm");
  auto x = mb.input("x", DType::f32, Shape{2, 3});
  auto w = mb.constant("w", Tensor::from<float>(Shape{3, 2}, {1, 2, 3, 4, 5, 6}));
  mb.output(mb.op("Gemm", {x, w}));
  return mb.build();
}

void run_requests(Executor& executor, const std::string& model, int count) {
  std::vector<std::future<Outputs>> results;
  for (int i = 0; i < count; ++i)
    results.push_back(
        executor.submit(model, {Tensor::from<float>(Shape{2, 3}, {1, 0, 0, 0, 1, static_cast<float>(i)})}));
  for (auto& result : results) result.get();
}

}  // namespace

TEST(MetricsServer, ServesTheSourceTextAtEveryScrape) {
  std::atomic<int> calls{0};
  metrics::MetricsServer server("127.0.0.1", 0, [&calls] { return "scrape " + std::to_string(++calls) + "\n"; });
  ASSERT_GT(server.port(), 0);
  const auto first = scrape(server.port());
  ASSERT_TRUE(first);
  EXPECT_EQ(first->status, 200);
  EXPECT_EQ(first->content_type, metrics::kPrometheusContentType);
  EXPECT_EQ(first->body, "scrape 1\n");
  const auto second = scrape(server.port());
  ASSERT_TRUE(second);
  EXPECT_EQ(second->body, "scrape 2\n");
}

TEST(MetricsServer, OtherPathsAre404AndAThrowingSourceIs500) {
  metrics::MetricsServer server("127.0.0.1", 0, []() -> std::string { throw std::runtime_error("stats unreadable"); });
  const auto other = scrape(server.port(), "/");
  ASSERT_TRUE(other);
  EXPECT_EQ(other->status, 404);
  EXPECT_NE(other->body.find("/metrics"), std::string::npos) << other->body;
  const auto failing = scrape(server.port());
  ASSERT_TRUE(failing);
  EXPECT_EQ(failing->status, 500);
  EXPECT_NE(failing->body.find("stats unreadable"), std::string::npos) << failing->body;
}

TEST(MetricsServer, StopsServingWhenDestroyedAndFreesThePort) {
  auto server = std::make_unique<metrics::MetricsServer>("127.0.0.1", 0, [] { return std::string("x\n"); });
  const int port = server->port();
  ASSERT_TRUE(scrape(port));
  server.reset();
  EXPECT_FALSE(scrape(port));
  // Bound again at once, although the last connection's socket may linger in TIME_WAIT.
  metrics::MetricsServer again("127.0.0.1", port, [] { return std::string("y\n"); });
  const auto answer = scrape(port);
  ASSERT_TRUE(answer);
  EXPECT_EQ(answer->body, "y\n");
}

TEST(ExecutorMetrics, CountersMatchWhatCompletedAndGrowBetweenScrapes) {
  auto [executor, port] = executor_with_metrics(cpu_options());
  executor->load(gemm_model(), "gemm");
  const double steps_per_request = static_cast<double>(executor->model_info("gemm").steps.size());
  ASSERT_GE(steps_per_request, 1);

  run_requests(*executor, "gemm", 6);
  const auto first = scrape(port);
  ASSERT_TRUE(first);
  EXPECT_EQ(first->status, 200);
  EXPECT_EQ(first->content_type, metrics::kPrometheusContentType);
  const std::string& text = first->body;
  EXPECT_NE(text.find("loom_info{version=\"" + std::string(version()) + "\",device=\"" + executor->device_name() +
                      "\",backend=\"cpu\",policy=\"fifo\"} 1\n"),
            std::string::npos)
      << text;
  // Every future has returned, and the executor counts a request before completing it.
  EXPECT_EQ(sample(text, "loom_requests_submitted_total"), 6);
  EXPECT_EQ(sample(text, R"(loom_requests_total{model="gemm",status="completed"})"), 6);
  EXPECT_EQ(sample(text, R"(loom_requests_total{model="gemm",status="failed"})"), 0);
  EXPECT_EQ(sample(text, R"(loom_request_duration_seconds_count{model="gemm"})"), 6);
  EXPECT_EQ(sample(text, R"(loom_request_duration_seconds_bucket{model="gemm",le="+Inf"})"), 6);
  EXPECT_GT(sample(text, R"(loom_request_duration_seconds_sum{model="gemm"})").value_or(0), 0);
  EXPECT_EQ(sample(text, R"(loom_steps_total{model="gemm"})"), 6 * steps_per_request);
  EXPECT_EQ(sample(text, R"(loom_stage_items_total{stage="pre-process",kind="host"})"), 6);
  EXPECT_EQ(sample(text, R"(loom_stage_items_total{stage="post-process",kind="host"})"), 6);
  EXPECT_EQ(sample(text, R"(loom_stage_items_total{stage="stream:gemm",kind="device"})"), 6 * steps_per_request);
  EXPECT_GT(sample(text, R"(loom_stage_busy_seconds_total{stage="stream:gemm",kind="device"})").value_or(0), 0);
  EXPECT_EQ(sample(text, R"(loom_stage_threads{stage="pre-process",kind="host"})"), 1);
  EXPECT_GT(sample(text, "loom_pool_allocations_total").value_or(0), 0);

  run_requests(*executor, "gemm", 4);
  const auto second = scrape(port);
  ASSERT_TRUE(second);
  EXPECT_EQ(sample(second->body, R"(loom_requests_total{model="gemm",status="completed"})"), 10);
  EXPECT_EQ(sample(second->body, R"(loom_steps_total{model="gemm"})"), 10 * steps_per_request);
  EXPECT_GT(sample(second->body, "loom_uptime_seconds").value_or(0), sample(text, "loom_uptime_seconds").value_or(0));
}

// Scrapes on the server's threads while the pipeline's threads run requests (stats() from both
// sides at once): the completed count only grows from scrape to scrape, and the last sees them all.
TEST(ExecutorMetrics, ScrapesWhileRequestsRunSeeCountersOnlyGrow) {
  auto [executor, port] = executor_with_metrics(cpu_options());
  executor->load(gemm_model(), "gemm");
  constexpr int kRequests = 60;
  std::atomic<bool> done{false};
  std::thread client([&ex = *executor, &done] {
    run_requests(ex, "gemm", kRequests);
    done = true;
  });
  const std::string completed_series = R"(loom_requests_total{model="gemm",status="completed"})";
  double last_completed = 0;
  while (!done) {
    const auto answer = scrape(port);
    if (!answer) {
      ADD_FAILURE() << "no answer on port " << port << " while requests ran";
      break;  // the client is joined below either way
    }
    const double completed = sample(answer->body, completed_series).value_or(-1);
    EXPECT_GE(completed, last_completed);
    last_completed = completed;
  }
  client.join();
  const auto last = scrape(port);
  ASSERT_TRUE(last);
  EXPECT_EQ(sample(last->body, completed_series), kRequests);
}

TEST(ExecutorMetrics, APortInUseIsAnErrorNamingItAndTheFirstKeepsServing) {
  auto [first, port] = executor_with_metrics(cpu_options());
  ExecutorOptions options = cpu_options();
  options.metrics_port = port;
  expect_error([&] { Executor second(options); }, ErrorCode::invalid_argument,
               {"metrics port " + std::to_string(port) + " on 127.0.0.1", "in use"});
  const auto still = scrape(port);
  ASSERT_TRUE(still);
  EXPECT_EQ(still->status, 200);
}

TEST(ExecutorMetrics, ShutdownStopsServingAndTheNextExecutorTakesThePort) {
  auto [first, port] = executor_with_metrics(cpu_options());
  first->load(gemm_model(), "gemm");
  run_requests(*first, "gemm", 2);
  ASSERT_TRUE(scrape(port));
  first->shutdown();
  EXPECT_FALSE(scrape(port));
  // As loom-bench --compare does: one executor after the other on the same port, counting afresh.
  ExecutorOptions options = cpu_options();
  options.metrics_port = port;
  options.policy = "round-robin";
  Executor second(options);
  second.load(gemm_model(), "gemm");
  run_requests(second, "gemm", 1);
  const auto answer = scrape(port);
  ASSERT_TRUE(answer);
  EXPECT_NE(answer->body.find("policy=\"round-robin\""), std::string::npos);
  EXPECT_EQ(sample(answer->body, R"(loom_requests_total{model="gemm",status="completed"})"), 1);
}

TEST(ExecutorMetrics, ABadPortOrAddressIsAnErrorNamingIt) {
  ExecutorOptions options = cpu_options();
  for (int port : {-1, 65536}) {
    options.metrics_port = port;
    expect_error([&] { Executor e(options); }, ErrorCode::invalid_argument,
                 {"metrics port " + std::to_string(port), "not a TCP port"});
  }
  options.metrics_port = free_port();
  // TEST-NET-1 (RFC 5737): a literal address no host of ours has, so no name lookup is made.
  options.metrics_address = "192.0.2.1";
  expect_error([&] { Executor e(options); }, ErrorCode::invalid_argument,
               {"metrics port " + std::to_string(options.metrics_port) + " on 192.0.2.1"});
  options.metrics_address = "";
  expect_error([&] { Executor e(options); }, ErrorCode::invalid_argument, {"the address is empty"});
}
