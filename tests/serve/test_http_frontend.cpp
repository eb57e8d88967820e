// loom-serve's HTTP front end (apps/serve/http_frontend.hpp) in process, over loopback with
// cpp-httplib's client: a repository with a small model written here (y = x + x) and a broken one;
// each route's status and body checked against values worked out by hand, and where it listens.
// tritonclient drives the same routes from Python (check_serve_http.py).
#include <gtest/gtest.h>
#include <httplib.h>

#include <atomic>
#include <cstring>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "http_frontend.hpp"
#include "loom/error.hpp"
#include "front_end_repository.hpp"
#include "unit/onnx_proto_builder.hpp"

namespace loom::serve {
namespace {

using nlohmann::json;

constexpr std::size_t kMaxRequestBytes = 4096;

class HttpFrontendTest : public FrontEndTest {
 protected:
  void SetUp() override {
    FrontEndTest::SetUp();
    ServiceOptions options;
    options.repository = write_front_end_repository();
    options.device = "cpu";
    options.executor.profile = "none";
    options.max_request_bytes = kMaxRequestBytes;
    service_ = std::make_unique<Service>(options);
    HttpOptions http;
    http.max_request_bytes = kMaxRequestBytes;
    http.threads = 4;
    frontend_ = std::make_unique<HttpFrontend>(*service_, "127.0.0.1", 0, http);
  }
  void TearDown() override {
    frontend_.reset();
    service_.reset();
    OnnxFileTest::TearDown();
  }

  // A client whose every call is bounded: a front end that never answers fails the test.
  httplib::Client client() const {
    httplib::Client c("127.0.0.1", frontend_->port());
    c.set_connection_timeout(30, 0);
    c.set_read_timeout(30, 0);
    c.set_write_timeout(30, 0);
    return c;
  }

  static std::string doubled_json(const std::vector<float>& x) {
    return json{{"id", "q1"}, {"inputs", {{{"name", "x"}, {"shape", {2, 3}}, {"datatype", "FP32"}, {"data", x}}}}}
        .dump();
  }

  // The message of the Error(invalid_argument) constructing a front end with these throws.
  std::string refusal(const std::string& address, int port, HttpOptions options = {}) {
    try {
      HttpFrontend frontend(*service_, address, port, options);
      ADD_FAILURE() << "listening on " << address << ":" << port;
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::invalid_argument);
      return e.what();
    }
    return {};
  }

  std::unique_ptr<Service> service_;
  std::unique_ptr<HttpFrontend> frontend_;
};

// The status of `result` and its {"error": ...} message ("" when the body is not one).
std::pair<int, std::string> error_of(const httplib::Result& result) {
  if (!result) return {-1, "no answer: " + httplib::to_string(result.error())};
  const json body = json::parse(result->body, nullptr, false);
  return {result->status, body.is_object() && body.contains("error") ? body["error"].get<std::string>() : ""};
}

TEST_F(HttpFrontendTest, HealthReadinessAndMetadata) {
  auto c = client();
  EXPECT_EQ(c.Get("/v2/health/live")->status, 200);
  const auto ready = error_of(c.Get("/v2/health/ready"));
  EXPECT_EQ(ready.first, 503);  // 'broken' is in the repository
  EXPECT_NE(ready.second.find("'broken'"), std::string::npos) << ready.second;
  EXPECT_EQ(c.Get("/v2/models/doubled/ready")->status, 200);
  EXPECT_EQ(c.Get("/v2/models/doubled/versions/1/ready")->status, 200);
  EXPECT_EQ(c.Get("/v2/models/doubled/versions/2/ready")->status, 404);
  EXPECT_EQ(c.Get("/v2/models/broken/ready")->status, 503);
  EXPECT_EQ(c.Get("/v2/models/nothing/ready")->status, 404);

  const auto metadata = c.Get("/v2/models/doubled");
  ASSERT_TRUE(metadata);
  EXPECT_EQ(metadata->status, 200);
  const json m = json::parse(metadata->body);
  EXPECT_EQ(m["name"], "doubled");
  EXPECT_EQ(m["versions"], json::array({"1"}));
  EXPECT_EQ(m["inputs"], json::parse(R"([{"name": "x", "datatype": "FP32", "shape": [2, 3]}])"));
  EXPECT_EQ(m["outputs"][0]["name"], "y");
  const auto broken = error_of(c.Get("/v2/models/broken"));
  EXPECT_EQ(broken.first, 503);
  EXPECT_NE(broken.second.find("not ready"), std::string::npos) << broken.second;
  EXPECT_EQ(json::parse(c.Get("/v2")->body)["name"], "loom");
  const json index = json::parse(c.Post("/v2/repository/index", "", "application/json")->body);
  ASSERT_EQ(index.size(), 2u);
  EXPECT_EQ(index[0]["name"], "broken");
  EXPECT_EQ(index[0]["state"], "UNAVAILABLE");
  EXPECT_EQ(index[1]["state"], "READY");
  EXPECT_EQ(error_of(c.Get("/v2/models/doubled/nowhere")).first, 404);
}

TEST_F(HttpFrontendTest, InferWithJsonTensors) {
  auto c = client();
  const auto result = c.Post("/v2/models/doubled/infer", doubled_json({1, -2, 3.5f, 0, 1e-3f, -7}), "application/json");
  ASSERT_TRUE(result);
  ASSERT_EQ(result->status, 200) << result->body;
  EXPECT_FALSE(result->has_header("Inference-Header-Content-Length"));
  const json answer = json::parse(result->body);
  EXPECT_EQ(answer["model_name"], "doubled");
  EXPECT_EQ(answer["model_version"], "1");
  EXPECT_EQ(answer["id"], "q1");
  EXPECT_EQ(answer["outputs"][0]["name"], "y");
  EXPECT_EQ(answer["outputs"][0]["shape"], json::array({2, 3}));
  EXPECT_EQ(answer["outputs"][0]["data"].get<std::vector<float>>(), (std::vector<float>{2, -4, 7, 0, 2e-3f, -14}));
}

TEST_F(HttpFrontendTest, InferWithBinaryTensors) {
  const std::vector<float> x{0.5f, 1, -1.5f, 2, 3, -4};
  const std::string header = R"({"inputs": [{"name": "x", "shape": [2, 3], "datatype": "FP32",
                                             "parameters": {"binary_data_size": 24}}],
                                 "outputs": [{"name": "y", "parameters": {"binary_data": true}}]})";
  httplib::Headers headers{{"Inference-Header-Content-Length", std::to_string(header.size())}};
  auto c = client();
  const auto result =
      c.Post("/v2/models/doubled/infer", headers, header + std::string(reinterpret_cast<const char*>(x.data()), 24),
             "application/octet-stream");
  ASSERT_TRUE(result);
  ASSERT_EQ(result->status, 200) << result->body;
  const std::size_t json_bytes = std::stoul(result->get_header_value("Inference-Header-Content-Length"));
  const json answer = json::parse(result->body.substr(0, json_bytes));
  EXPECT_EQ(answer["outputs"][0]["parameters"]["binary_data_size"], 24);
  ASSERT_EQ(result->body.size(), json_bytes + 24);
  std::vector<float> y(6);
  std::memcpy(y.data(), result->body.data() + json_bytes, 24);
  EXPECT_EQ(y, (std::vector<float>{1, 2, -3, 4, 6, -8}));
}

TEST_F(HttpFrontendTest, BadRequestsAnswerTheProtocolsErrorsAndServingGoesOn) {
  auto c = client();
  const std::string good = doubled_json({1, 2, 3, 4, 5, 6});
  auto unknown = error_of(c.Post("/v2/models/nothing/infer", good, "application/json"));
  EXPECT_EQ(unknown.first, 404);
  EXPECT_NE(unknown.second.find("'nothing'"), std::string::npos) << unknown.second;
  EXPECT_EQ(error_of(c.Post("/v2/models/broken/infer", good, "application/json")).first, 503);
  auto malformed = error_of(c.Post("/v2/models/doubled/infer", good.substr(0, 20), "application/json"));
  EXPECT_EQ(malformed.first, 400);
  EXPECT_NE(malformed.second.find("malformed JSON at byte offset 20"), std::string::npos) << malformed.second;
  const std::string wrong_shape =
      R"({"inputs": [{"name": "x", "shape": [3, 2], "datatype": "FP32", "data": [1, 2, 3, 4, 5, 6]}]})";
  auto shape = error_of(c.Post("/v2/models/doubled/infer", wrong_shape, "application/json"));
  EXPECT_EQ(shape.first, 400);
  EXPECT_NE(shape.second.find("'x'"), std::string::npos) << shape.second;
  const std::string wrong_dtype =
      R"({"inputs": [{"name": "x", "shape": [2, 3], "datatype": "INT32", "data": [1, 2, 3, 4, 5, 6]}]})";
  EXPECT_EQ(error_of(c.Post("/v2/models/doubled/infer", wrong_dtype, "application/json")).first, 400);
  auto large = error_of(c.Post("/v2/models/doubled/infer", std::string(kMaxRequestBytes + 1, ' '), "application/json"));
  EXPECT_EQ(large.first, 413);
  EXPECT_NE(large.second.find(std::to_string(kMaxRequestBytes)), std::string::npos) << large.second;
  httplib::Headers compress{{"Content-Encoding", "compress"}};
  auto encoding = error_of(c.Post("/v2/models/doubled/infer", compress, good, "application/json"));
  EXPECT_EQ(encoding.first, 400);
  EXPECT_NE(encoding.second.find("'compress'"), std::string::npos) << encoding.second;
  httplib::Headers bad_length{{"Inference-Header-Content-Length", "12x"}};
  EXPECT_EQ(error_of(c.Post("/v2/models/doubled/infer", bad_length, good, "application/json")).first, 400);

  const auto after = c.Post("/v2/models/doubled/infer", good, "application/json");
  ASSERT_TRUE(after);
  EXPECT_EQ(after->status, 200);
}

// Clients on threads of their own, each with its own inputs: every answer is its own 2x.
TEST_F(HttpFrontendTest, ConcurrentClientsEachGetTheirOwnAnswers) {
  constexpr int kClients = 8, kRequests = 10;
  // One request first, alone: cpp-httplib initialises function-local statics (its request-line
  // regex) on the worker that parses the first request, and the other workers read them through
  // the inline fast path of the guard, in the library, which ThreadSanitizer does not instrument:
  // it would report that read as a race with the initialisation. Once the first worker has gone
  // back to the pool's queue, every worker taking a job later is ordered after it by the queue's
  // mutex, which ThreadSanitizer sees.
  ASSERT_EQ(client().Post("/v2/models/doubled/infer", doubled_json({1, 2, 3, 4, 5, 6}), "application/json")->status,
            200);
  std::atomic<int> right{0};
  std::vector<std::thread> clients;
  for (int i = 0; i < kClients; ++i)
    clients.emplace_back([&, i] {
      auto c = client();
      for (int r = 0; r < kRequests; ++r) {
        const float v = static_cast<float>(i * 100 + r);
        const auto result = c.Post("/v2/models/doubled/infer", doubled_json({v, v, v, v, v, -v}), "application/json");
        if (!result || result->status != 200) continue;
        const auto y = json::parse(result->body)["outputs"][0]["data"].get<std::vector<float>>();
        if (y == std::vector<float>{2 * v, 2 * v, 2 * v, 2 * v, 2 * v, -2 * v}) ++right;
      }
    });
  for (auto& t : clients) t.join();
  EXPECT_EQ(right.load(), kClients * kRequests);
}

TEST_F(HttpFrontendTest, PortZeroTakesAFreePortAndAPortInUseIsRefusedByName) {
  EXPECT_GT(frontend_->port(), 0);
  EXPECT_EQ(frontend_->address(), "127.0.0.1");
  const std::string message = refusal("127.0.0.1", frontend_->port());
  EXPECT_NE(message.find("HTTP port " + std::to_string(frontend_->port()) + " on 127.0.0.1"), std::string::npos)
      << message;
  EXPECT_NE(message.find("in use"), std::string::npos) << message;
}

TEST_F(HttpFrontendTest, StopFreesThePortAndIsIdempotent) {
  const int port = frontend_->port();
  frontend_->stop();
  frontend_->stop();
  EXPECT_FALSE(client().Get("/v2/health/live"));  // no longer listening
  frontend_.reset();                              // the destructor after two stops
  HttpFrontend again(*service_, "127.0.0.1", port);
  EXPECT_EQ(again.port(), port);
}

TEST_F(HttpFrontendTest, RefusesBadPortsAddressesAndOptions) {
  EXPECT_NE(refusal("127.0.0.1", 70000).find("HTTP port 70000 on 127.0.0.1: not a TCP port"), std::string::npos);
  EXPECT_NE(refusal("127.0.0.1", -1).find("not a TCP port"), std::string::npos);
  EXPECT_NE(refusal("", 0).find("the address is empty"), std::string::npos);
  // 192.0.2.1 (TEST-NET-1, RFC 5737) is a valid address that no host here has.
  const std::string absent = refusal("192.0.2.1", 0);
  EXPECT_NE(absent.find("HTTP port 0 on 192.0.2.1"), std::string::npos) << absent;
  EXPECT_NE(absent.find("no such address"), std::string::npos) << absent;
  HttpOptions no_threads;
  no_threads.threads = 0;
  EXPECT_NE(refusal("127.0.0.1", 0, no_threads).find("0 threads"), std::string::npos);
  HttpOptions no_bytes;
  no_bytes.max_request_bytes = 0;
  EXPECT_NE(refusal("127.0.0.1", 0, no_bytes).find("limit of 0 bytes"), std::string::npos);
}

}  // namespace
}  // namespace loom::serve
