// loom::serve::Service in process: the repository scan, config.json, metadata, infer against an
// Executor run directly (and hand-computed values), each validation failure, batching, timeouts
// and shutdown. Models are small ONNX files written with the protobuf API.
#include <atomic>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <cstring>
#include <future>
#include <set>
#include <thread>

#include <gtest/gtest.h>

#include "loom/onnx.hpp"
#include "serve/devices.hpp"
#include "serve/service.hpp"
#include "unit/onnx_proto_builder.hpp"

namespace loom::serve {
namespace {

namespace fs = std::filesystem;
using loom::testing::add_input;
using loom::testing::add_node;
using loom::testing::add_output;
using loom::testing::float_tensor;
using loom::testing::make_model;

// The affine test model: y = x · W + b (W 3x2 below, b = `bias` everywhere), z = x * x, with x
// of shape [batch_dims[0], 3].
constexpr float kW[3][2] = {{0.5f, -1.0f}, {2.0f, 0.25f}, {-1.5f, 3.0f}};
onnx::ModelProto affine_model(float bias, const std::string& batch_dim = "batch") {
  auto m = make_model(17);
  auto* g = m.mutable_graph();
  add_input(g, "x", onnx::TensorProto::FLOAT, {batch_dim, "3"});
  *g->add_initializer() = float_tensor("W", {3, 2}, {kW[0][0], kW[0][1], kW[1][0], kW[1][1], kW[2][0], kW[2][1]});
  *g->add_initializer() = float_tensor("b", {2}, {bias, bias});
  add_node(g, "MatMul", {"x", "W"}, {"xw"});
  add_node(g, "Add", {"xw", "b"}, {"y"});
  add_node(g, "Mul", {"x", "x"}, {"z"});
  add_output(g, "y");
  add_output(g, "z");
  return m;
}

// Two inputs a, c of shape [batch, 3]: s = a + c.
onnx::ModelProto sum_model() {
  auto m = make_model(17);
  auto* g = m.mutable_graph();
  add_input(g, "a", onnx::TensorProto::FLOAT, {"batch", "3"});
  add_input(g, "c", onnx::TensorProto::FLOAT, {"batch", "3"});
  add_node(g, "Add", {"a", "c"}, {"s"});
  add_output(g, "s");
  return m;
}

// x [batch, 3] → its transpose [3, batch]: the batch is not axis 0 of the output.
onnx::ModelProto transpose_model() {
  auto m = make_model(17);
  auto* g = m.mutable_graph();
  add_input(g, "x", onnx::TensorProto::FLOAT, {"batch", "3"});
  auto* t = add_node(g, "Transpose", {"x"}, {"t"});
  loom::testing::set_ints(t, "perm", {1, 0});
  add_output(g, "t");
  return m;
}

// x [batch, 3] → x · xᵀ, [batch, batch]: axis 0 is the batch, and so is axis 1, which a joined
// batch would widen to every client's rows.
onnx::ModelProto gram_model() {
  auto m = make_model(17);
  auto* g = m.mutable_graph();
  add_input(g, "x", onnx::TensorProto::FLOAT, {"batch", "3"});
  auto* t = add_node(g, "Transpose", {"x"}, {"xt"});
  loom::testing::set_ints(t, "perm", {1, 0});
  add_node(g, "MatMul", {"x", "xt"}, {"gram"});
  add_output(g, "gram");
  return m;
}

// A table lookup: ids [batch, 2] (INT64) → rows of a 5x3 table, [batch, 2, 3]. An id outside 0..4
// fails the request while it runs (Gather's index check).
onnx::ModelProto lookup_model() {
  auto m = make_model(17);
  auto* g = m.mutable_graph();
  add_input(g, "ids", onnx::TensorProto::INT64, {"batch", "2"});
  std::vector<float> table(15);
  for (int i = 0; i < 15; ++i) table[i] = 0.5f * static_cast<float>(i) - 3.0f;
  *g->add_initializer() = float_tensor("table", {5, 3}, table);
  add_node(g, "Gather", {"table", "ids"}, {"rows"});
  add_output(g, "rows");
  return m;
}

// Floats from a seeded generator, never all zero.
std::vector<float> values(std::size_t n, std::uint32_t seed) {
  std::vector<float> v(n);
  std::uint32_t s = seed * 2654435761u + 12345u;
  for (auto& x : v) {
    s = s * 1664525u + 1013904223u;
    x = static_cast<float>(static_cast<int>(s >> 9) % 2001 - 1000) / 250.0f;
  }
  return v;
}
Tensor rows_of_x(std::int64_t rows, std::uint32_t seed) {
  return Tensor::from<float>(Shape{rows, 3}, values(static_cast<std::size_t>(rows) * 3, seed));
}

struct Answer {
  std::optional<Failure> failure;
  InferResponse response;
};
// infer(), its one answer as a future.
std::future<Answer> infer_async(Service& service, InferRequest request) {
  auto promise = std::make_shared<std::promise<Answer>>();
  auto answer = promise->get_future();
  service.infer(std::move(request), [promise](std::optional<Failure> failure, InferResponse response) {
    promise->set_value(Answer{std::move(failure), std::move(response)});
  });
  return answer;
}
Answer infer_sync(Service& service, InferRequest request) { return infer_async(service, std::move(request)).get(); }

InferRequest request_x(const std::string& model, Tensor x) {
  InferRequest r;
  r.model = model;
  r.inputs.push_back({"x", std::move(x)});
  return r;
}

void expect_same_bits(const Tensor& actual, const Tensor& expected, const std::string& what) {
  ASSERT_EQ(actual.dtype(), expected.dtype()) << what;
  ASSERT_EQ(actual.shape(), expected.shape()) << what;
  ASSERT_EQ(actual.bytes(), expected.bytes()) << what;
  EXPECT_EQ(0, std::memcmp(actual.data(), expected.data(), actual.bytes())) << what << ": the bits differ";
}

class ServiceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    repo_ = fs::temp_directory_path() / ("loom_serve_" + std::to_string(::getpid()) + "_" + info->name());
    fs::remove_all(repo_);
    fs::create_directories(repo_);
  }
  void TearDown() override { fs::remove_all(repo_); }

  std::string add_model(const std::string& name, const onnx::ModelProto& model, const std::string& version = "1") {
    const fs::path dir = repo_ / name / version;
    fs::create_directories(dir);
    std::ofstream out(dir / "model.onnx", std::ios::binary);
    EXPECT_TRUE(model.SerializeToOstream(&out));
    return (dir / "model.onnx").string();
  }
  void write(const std::string& relative, const std::string& text) {
    fs::create_directories((repo_ / relative).parent_path());
    std::ofstream(repo_ / relative) << text;
  }
  ServiceOptions options() const {
    ServiceOptions o;
    o.repository = repo_.string();
    o.device = "cpu";
    o.executor.cpu_threads = 1;
    return o;
  }
  // The model run by an Executor of its own, one request alone, with the batch dim open as the
  // Service opens it (1..max_rows).
  Outputs run_alone(const std::string& path, const std::vector<Tensor>& inputs, std::int64_t max_rows) {
    if (!reference_) {
      ExecutorOptions o;
      o.device = "cpu";
      o.cpu_threads = 1;
      reference_ = std::make_unique<Executor>(o);
    }
    if (!reference_loaded_.count(path)) {
      LoadOptions load;
      load.name = path;
      load.dim_ranges["batch"] = DimRange{1, max_rows, max_rows};
      reference_->load(load_onnx(path), load);
      reference_loaded_.insert(path);
    }
    return reference_->submit(path, inputs).get();
  }

  fs::path repo_;
  std::unique_ptr<Executor> reference_;
  std::set<std::string> reference_loaded_;
};

TEST_F(ServiceTest, DatatypeNamesRoundTrip) {
  for (DType dtype : kAllDTypes) {
    const std::string_view name = kserve_datatype(dtype);
    ASSERT_FALSE(name.empty()) << dtype_name(dtype);
    EXPECT_EQ(dtype_from_kserve(name), dtype) << name;
  }
  EXPECT_EQ(kserve_datatype(DType::f32), "FP32");
  EXPECT_EQ(kserve_datatype(DType::boolean), "BOOL");
  EXPECT_EQ(kserve_datatype(DType::u64), "UINT64");
  EXPECT_FALSE(dtype_from_kserve("BYTES").has_value());
}

TEST(ServeDevices, ExecutorsPerDeviceAndTheLeastLoadedRule) {
  EXPECT_EQ(executor_devices("auto", 0), std::vector<std::string>{"cpu"});
  EXPECT_EQ(executor_devices("auto", 2), (std::vector<std::string>{"cuda:0", "cuda:1"}));
  EXPECT_EQ(executor_devices("cuda", 3), (std::vector<std::string>{"cuda:0", "cuda:1", "cuda:2"}));
  EXPECT_EQ(executor_devices("cuda:1", 2), std::vector<std::string>{"cuda:1"});
  EXPECT_EQ(executor_devices("cpu", 2), std::vector<std::string>{"cpu"});
  EXPECT_EQ(loom::testing::error_of([] { executor_devices("cuda", 0); }).code, ErrorCode::invalid_argument);

  // Fewest weight bytes; on a tie the lowest index; a configured index wins when in range.
  EXPECT_EQ(choose_device({300, 100, 200}, std::nullopt), 1u);
  EXPECT_EQ(choose_device({100, 50, 50}, std::nullopt), 1u);
  EXPECT_EQ(choose_device({0, 0}, std::nullopt), 0u);
  EXPECT_EQ(choose_device({0, 500}, 1), 1u);
  EXPECT_FALSE(choose_device({0, 500}, 2).has_value());
  EXPECT_FALSE(choose_device({0}, -1).has_value());

  EXPECT_EQ(executor_metrics_port(9100, 0), 9100);
  EXPECT_EQ(executor_metrics_port(9100, 2), 9102);
  EXPECT_EQ(executor_metrics_port(0, 3), 0);
}

TEST_F(ServiceTest, MissingRepositoryIsAnError) {
  ServiceOptions o = options();
  o.repository = (repo_ / "nowhere").string();
  const auto error = loom::testing::error_of([&] { Service service(o); });
  EXPECT_EQ(error.code, ErrorCode::invalid_argument);
  EXPECT_NE(error.message.find("nowhere"), std::string::npos) << error.message;
}

TEST_F(ServiceTest, ScansVersionsAndKeepsBrokenModelsNotReady) {
  add_model("versioned", affine_model(1.0f), "1");
  add_model("versioned", affine_model(3.0f), "3");
  fs::create_directories(repo_ / "versioned" / "10");      // no model.onnx: not served
  fs::create_directories(repo_ / "versioned" / "latest");  // not a version
  write("broken/1/model.onnx", "this is not an ONNX file");
  fs::create_directories(repo_ / "empty");
  write("unversioned/model.onnx", "x");
  add_model("good", affine_model(0.5f));

  Service service(options());
  EXPECT_TRUE(service.live());
  EXPECT_FALSE(service.ready());  // not every model is ready
  EXPECT_EQ(service.devices(), std::vector<std::string>{"cpu"});
  const auto models = service.models();
  ASSERT_EQ(models.size(), 5u);
  std::map<std::string, ModelEntry> by_name;
  for (const auto& m : models) by_name[m.name] = m;
  ASSERT_EQ(by_name.count("versioned"), 1u);

  const ModelEntry& versioned = by_name["versioned"];
  EXPECT_TRUE(versioned.ready) << versioned.error;
  EXPECT_EQ(versioned.version, "3");
  EXPECT_EQ(versioned.path, (repo_ / "versioned" / "3" / "model.onnx").string());
  EXPECT_EQ(versioned.device, 0);

  const ModelEntry& broken = by_name["broken"];
  EXPECT_FALSE(broken.ready);
  EXPECT_EQ(broken.version, "1");
  // load_onnx's own message, naming the file.
  const std::string load_error = loom::testing::error_of([&] { load_onnx(broken.path); }).message;
  EXPECT_FALSE(load_error.empty());
  EXPECT_EQ(broken.error, load_error);

  EXPECT_FALSE(by_name["empty"].ready);
  EXPECT_NE(by_name["empty"].error.find("no version folder"), std::string::npos) << by_name["empty"].error;
  EXPECT_FALSE(by_name["unversioned"].ready);
  EXPECT_NE(by_name["unversioned"].error.find("no version folder"), std::string::npos);
  EXPECT_TRUE(by_name["good"].ready) << by_name["good"].error;

  // The served version answers, with its own bias (3): y = x · W + 3.
  const Tensor x = Tensor::from<float>(Shape{1, 3}, {1.0f, 2.0f, -0.5f});
  auto answer = infer_sync(service, request_x("versioned", x));
  ASSERT_FALSE(answer.failure) << answer.failure->message;
  ASSERT_EQ(answer.response.outputs.size(), 2u);
  EXPECT_EQ(answer.response.version, "3");
  const auto y = answer.response.outputs[0].tensor.values<float>();
  for (int j = 0; j < 2; ++j) {
    const double expected = 1.0 * kW[0][j] + 2.0 * kW[1][j] - 0.5 * kW[2][j] + 3.0;
    EXPECT_NEAR(y[j], expected, 1e-5) << j;
  }
  // Asking for version 1 (not served) is not_found; "3" and "" are the served one.
  InferRequest old = request_x("versioned", x);
  old.version = "1";
  answer = infer_sync(service, old);
  ASSERT_TRUE(answer.failure);
  EXPECT_EQ(answer.failure->status, Status::not_found);
  EXPECT_FALSE(service.model("versioned", "1"));
  EXPECT_TRUE(service.model("versioned", "3"));
  EXPECT_TRUE(service.model("versioned"));
  EXPECT_FALSE(service.model("nothing"));
  // lookup(): the same answers as infer() gives, for the front ends' metadata calls.
  const auto refused = [&](const std::string& name, const std::string& version, bool need_ready) {
    auto found = service.lookup(name, version, need_ready);
    return std::holds_alternative<Failure>(found) ? std::get<Failure>(found) : Failure{Status::ok, ""};
  };
  EXPECT_EQ(refused("versioned", "1", true).status, Status::not_found);
  EXPECT_EQ(refused("versioned", "1", true).message, answer.failure->message);
  EXPECT_NE(refused("versioned", "1", true).message.find("serves version 3"), std::string::npos);
  EXPECT_EQ(refused("nothing", "", false).status, Status::not_found);
  EXPECT_NE(refused("nothing", "", false).message.find("'nothing'"), std::string::npos);
  EXPECT_EQ(refused("broken", "", true).status, Status::unavailable);
  EXPECT_NE(refused("broken", "", true).message.find(load_error), std::string::npos);
  EXPECT_EQ(std::get<ModelEntry>(service.lookup("broken", "1", false)).name, "broken");
  EXPECT_EQ(std::get<ModelEntry>(service.lookup("versioned", "3", true)).version, "3");

  // The broken model answers unavailable with its load error; the others still serve.
  answer = infer_sync(service, request_x("broken", x));
  ASSERT_TRUE(answer.failure);
  EXPECT_EQ(answer.failure->status, Status::unavailable);
  EXPECT_EQ(answer.failure->message, refused("broken", "", true).message);
  EXPECT_NE(answer.failure->message.find(load_error), std::string::npos) << answer.failure->message;
  answer = infer_sync(service, request_x("good", x));
  EXPECT_FALSE(answer.failure);
}

TEST_F(ServiceTest, ConfigErrorsNameTheFileAndTheKey) {
  struct Case {
    std::string model, config, key;
  };
  const std::vector<Case> cases = {
      {"unknown_key", R"({"colour": "blue"})", "colour"},
      {"wrong_type", R"({"max_batch_size": "4"})", "max_batch_size"},
      {"bad_priority", R"({"priority": "asap"})", "priority"},
      // 2^64 - 1 read as an int64 is -1, which is in range: refused as the huge number it is.
      {"huge_stream_priority", R"({"stream_priority": 18446744073709551615})", "stream_priority"},
      {"negative_delay", R"({"max_queue_delay_us": -1})", "max_queue_delay_us"},
      {"bad_range", R"({"dim_ranges": {"batch": [4, 2, 8]}})", "dim_ranges.batch"},
      {"bad_dim", R"({"dims": {"batch": 0}})", "dims.batch"},
      {"device_out_of_range", R"({"device": 3})", "device"},
      {"fixed_batch", R"({"max_batch_size": 4})", "max_batch_size"},
      {"transposed", R"({"max_batch_size": 4})", "max_batch_size"},
  };
  for (const auto& c : cases) {
    if (c.model == "fixed_batch")
      add_model(c.model, affine_model(1.0f, "2"));
    else if (c.model == "transposed")
      add_model(c.model, transpose_model());
    else
      add_model(c.model, affine_model(1.0f));
    write(c.model + "/config.json", c.config);
  }
  write("malformed/config.json", "{\"priority\": ");
  add_model("malformed", affine_model(1.0f));
  add_model("fine", affine_model(1.0f));
  write("fine/config.json", R"({"priority": "urgent", "timeout_ms": 50, "stream_priority": 1, "dims": {"batch": 2}})");

  Service service(options());
  for (const auto& c : cases) {
    const auto m = service.model(c.model);
    ASSERT_TRUE(m) << c.model;
    EXPECT_FALSE(m->ready) << c.model;
    const std::string file = (repo_ / c.model / "config.json").string();
    EXPECT_NE(m->error.find(file), std::string::npos) << c.model << ": " << m->error;
    EXPECT_NE(m->error.find("\"" + c.key + "\""), std::string::npos) << c.model << ": " << m->error;
  }
  const auto malformed = service.model("malformed");
  EXPECT_FALSE(malformed->ready);
  EXPECT_NE(malformed->error.find("config.json"), std::string::npos) << malformed->error;

  const auto fine = service.model("fine");
  ASSERT_TRUE(fine->ready) << fine->error;
  EXPECT_EQ(fine->config.priority, Priority::urgent);
  EXPECT_EQ(fine->config.timeout_ms, 50);
  EXPECT_EQ(fine->config.stream_priority, 1);
  // "dims" binds the batch at load: the metadata shows it fixed.
  ASSERT_EQ(fine->inputs.size(), 1u);
  EXPECT_EQ(fine->inputs[0].shape, (std::vector<std::int64_t>{2, 3}));
}

TEST_F(ServiceTest, MetadataShowsOpenDimsAsMinusOne) {
  add_model("batched", affine_model(1.0f));
  write("batched/config.json", R"({"max_batch_size": 4})");
  add_model("ranged", affine_model(1.0f));
  write("ranged/config.json", R"({"dim_ranges": {"batch": [1, 2, 6]}})");
  add_model("plain", affine_model(1.0f));

  Service service(options());
  EXPECT_TRUE(service.ready());
  for (const char* name : {"batched", "ranged"}) {
    const auto m = service.model(name);
    ASSERT_TRUE(m && m->ready) << name << ": " << (m ? m->error : "");
    ASSERT_EQ(m->inputs.size(), 1u);
    EXPECT_EQ(m->inputs[0].name, "x");
    EXPECT_EQ(m->inputs[0].datatype, "FP32");
    EXPECT_EQ(m->inputs[0].shape, (std::vector<std::int64_t>{-1, 3})) << name;
    ASSERT_EQ(m->outputs.size(), 2u);
    EXPECT_EQ(m->outputs[0].name, "y");
    EXPECT_EQ(m->outputs[0].shape, (std::vector<std::int64_t>{-1, 2})) << name;
    EXPECT_EQ(m->outputs[1].name, "z");
    EXPECT_EQ(m->outputs[1].shape, (std::vector<std::int64_t>{-1, 3})) << name;
  }
  // Without batching or ranges the symbolic batch is bound at load (to 1).
  const auto plain = service.model("plain");
  EXPECT_EQ(plain->inputs[0].shape, (std::vector<std::int64_t>{1, 3}));
  EXPECT_EQ(plain->outputs[0].shape, (std::vector<std::int64_t>{1, 2}));

  // A size in the range runs; outputs equal the model run alone.
  const Tensor x = rows_of_x(5, 7);
  auto answer = infer_sync(service, request_x("ranged", x));
  ASSERT_FALSE(answer.failure) << answer.failure->message;
  const Outputs alone = run_alone(service.model("ranged")->path, {x}, 6);
  expect_same_bits(answer.response.outputs[0].tensor, alone[0], "y");
  expect_same_bits(answer.response.outputs[1].tensor, alone[1], "z");
}

TEST_F(ServiceTest, InferSelectsOutputsInRequestOrder) {
  add_model("affine", affine_model(-2.0f));
  Service service(options());
  const Tensor x = Tensor::from<float>(Shape{1, 3}, {0.5f, -1.0f, 4.0f});
  InferRequest request = request_x("affine", x);
  request.id = "req-7";
  request.outputs = {{"z", true}, {"y", false}};
  const auto answer = infer_sync(service, request);
  ASSERT_FALSE(answer.failure) << answer.failure->message;
  EXPECT_EQ(answer.response.model, "affine");
  EXPECT_EQ(answer.response.version, "1");
  EXPECT_EQ(answer.response.id, "req-7");
  ASSERT_EQ(answer.response.outputs.size(), 2u);
  EXPECT_EQ(answer.response.outputs[0].name, "z");
  EXPECT_TRUE(answer.response.outputs[0].binary);
  EXPECT_EQ(answer.response.outputs[1].name, "y");
  EXPECT_FALSE(answer.response.outputs[1].binary);
  const auto z = answer.response.outputs[0].tensor.values<float>();
  const auto xs = x.values<float>();
  for (int i = 0; i < 3; ++i) EXPECT_EQ(z[i], xs[i] * xs[i]);
  const auto y = answer.response.outputs[1].tensor.values<float>();
  for (int j = 0; j < 2; ++j) EXPECT_NEAR(y[j], 0.5 * kW[0][j] - 1.0 * kW[1][j] + 4.0 * kW[2][j] - 2.0, 1e-5);
}

TEST_F(ServiceTest, ValidationFailuresNameWhatAndWhere) {
  add_model("sum", sum_model());
  add_model("batched", affine_model(1.0f));
  write("batched/config.json", R"({"max_batch_size": 2, "max_queue_delay_us": 0})");
  write("broken/1/model.onnx", "garbage");
  ServiceOptions o = options();
  o.max_request_bytes = 100;
  Service service(o);

  const Tensor row = rows_of_x(1, 1);
  auto sum = [&](std::vector<InferInput> inputs) {
    InferRequest r;
    r.model = "sum";
    r.inputs = std::move(inputs);
    return r;
  };
  struct Case {
    std::string what;
    InferRequest request;
    Status status;
    std::vector<std::string> mentions;
  };
  std::vector<Case> cases;
  cases.push_back({"unknown model", request_x("nope", row), Status::not_found, {"'nope'"}});
  {
    InferRequest r = sum({{"a", row}, {"c", row}});
    r.version = "2";
    cases.push_back({"unknown version", r, Status::not_found, {"'sum'", "'2'"}});
  }
  cases.push_back({"not ready", request_x("broken", row), Status::unavailable, {"'broken'", "not ready"}});
  cases.push_back({"unknown input", sum({{"a", row}, {"c", row}, {"d", row}}), Status::bad_request, {"'d'"}});
  cases.push_back({"missing input", sum({{"a", row}}), Status::bad_request, {"'c'", "missing"}});
  cases.push_back(
      {"duplicate input", sum({{"a", row}, {"a", row}, {"c", row}}), Status::bad_request, {"'a'", "twice"}});
  cases.push_back({"datatype",
                   sum({{"a", row}, {"c", Tensor::from<std::int64_t>(Shape{1, 3}, {1, 2, 3})}}),
                   Status::bad_request,
                   {"'c'", "INT64", "FP32"}});
  cases.push_back({"rank",
                   sum({{"a", row}, {"c", Tensor::from<float>(Shape{3}, {1, 2, 3})}}),
                   Status::bad_request,
                   {"'c'", "rank"}});
  cases.push_back({"fixed dim",
                   sum({{"a", row}, {"c", Tensor::from<float>(Shape{1, 2}, {1, 2})}}),
                   Status::bad_request,
                   {"'c'", "axis 1", "expected 3"}});
  {
    InferRequest r = sum({{"a", row}, {"c", row}});
    r.outputs = {{"nothing", false}};
    cases.push_back({"unknown output", r, Status::bad_request, {"'nothing'"}});
  }
  cases.push_back({"too many rows",
                   request_x("batched", rows_of_x(3, 2)),
                   Status::bad_request,
                   {"'batched'", "'x'", "axis 0", "max_batch_size"}});
  {
    InferRequest r;
    r.model = "batched";
    r.inputs.push_back({"x", rows_of_x(2, 3)});
    r.inputs.push_back({"x", rows_of_x(2, 3)});
    cases.push_back({"duplicate batched input", r, Status::bad_request, {"twice"}});
  }
  cases.push_back({"too large", request_x("batched", Tensor(DType::f32, Shape{10, 3})), Status::too_large, {"100"}});

  for (auto& c : cases) {
    const auto answer = infer_sync(service, c.request);
    ASSERT_TRUE(answer.failure) << c.what;
    EXPECT_EQ(answer.failure->status, c.status) << c.what << ": " << answer.failure->message;
    for (const auto& word : c.mentions)
      EXPECT_NE(answer.failure->message.find(word), std::string::npos)
          << c.what << ": '" << word << "' not in: " << answer.failure->message;
  }
  // The same service still answers good requests.
  const auto ok = infer_sync(service, sum({{"a", row}, {"c", row}}));
  ASSERT_FALSE(ok.failure) << ok.failure->message;
  const auto s = ok.response.outputs[0].tensor.values<float>();
  const auto a = row.values<float>();
  for (int i = 0; i < 3; ++i) EXPECT_EQ(s[i], a[i] + a[i]);

  service.shutdown();
  const auto after = infer_sync(service, sum({{"a", row}, {"c", row}}));
  ASSERT_TRUE(after.failure);
  EXPECT_EQ(after.failure->status, Status::unavailable);
  EXPECT_FALSE(service.ready());
}

TEST_F(ServiceTest, BatchingJoinsRequestsAndSplitsTheirRowsBack) {
  const std::string path = add_model("batched", affine_model(0.25f));
  // A long delay: batches go out when 4 rows are queued, which the requests below give at once.
  write("batched/config.json", R"({"max_batch_size": 4, "max_queue_delay_us": 5000000})");
  Service service(options());
  ASSERT_TRUE(service.ready()) << service.model("batched")->error;
  // Loading made a plan for each batch size 1..4 (the batch is the only open dim), so no batch
  // below waits for one: the requests add no plan.
  EXPECT_EQ(service.model("batched")->shape_plans, 4u);

  constexpr int kRequests = 8;
  std::vector<Tensor> inputs;
  std::vector<std::future<Answer>> answers;
  for (int i = 0; i < kRequests; ++i) {
    inputs.push_back(rows_of_x(1, 100 + i));
    InferRequest r = request_x("batched", inputs.back());
    r.id = std::to_string(i);
    answers.push_back(infer_async(service, std::move(r)));
  }
  for (int i = 0; i < kRequests; ++i) {
    const Answer answer = answers[i].get();
    ASSERT_FALSE(answer.failure) << answer.failure->message;
    EXPECT_EQ(answer.response.id, std::to_string(i));
    const Outputs alone = run_alone(path, {inputs[i]}, 4);
    ASSERT_EQ(answer.response.outputs.size(), 2u);
    expect_same_bits(answer.response.outputs[0].tensor, alone[0], "y of request " + std::to_string(i));
    expect_same_bits(answer.response.outputs[1].tensor, alone[1], "z of request " + std::to_string(i));
  }
  const BatchCounts counts = service.model("batched")->batching;
  EXPECT_EQ(counts.requests, static_cast<std::uint64_t>(kRequests));
  EXPECT_GT(counts.largest_batch, 1u);  // requests were joined
  EXPECT_LE(counts.largest_batch_rows, 4);
  EXPECT_LT(counts.batches, static_cast<std::uint64_t>(kRequests));
  EXPECT_EQ(service.model("batched")->shape_plans, 4u);
}

TEST_F(ServiceTest, BatchingRefusesAnOutputWhoseOtherAxesFollowTheBatch) {
  // Joined, two one-row requests would get [2, 2] split into two [1, 2]: the other's rows mixed
  // into each answer, where alone each is [1, 1].
  add_model("gram", gram_model());
  write("gram/config.json", R"({"max_batch_size": 4})");
  add_model("gram_plain", gram_model());
  write("gram_plain/config.json", R"({"dim_ranges": {"batch": [1, 2, 4]}})");
  Service service(options());
  const auto gram = service.model("gram");
  ASSERT_TRUE(gram);
  EXPECT_FALSE(gram->ready);
  EXPECT_NE(gram->error.find("max_batch_size"), std::string::npos) << gram->error;
  EXPECT_NE(gram->error.find("'gram'"), std::string::npos) << gram->error;
  EXPECT_NE(gram->error.find("axis 1"), std::string::npos) << gram->error;
  // Without batching the same model serves: x · xᵀ of one row is its squared norm.
  ASSERT_TRUE(service.model("gram_plain")->ready) << service.model("gram_plain")->error;
  const auto answer = infer_sync(service, request_x("gram_plain", Tensor::from<float>(Shape{1, 3}, {1, 2, 3})));
  ASSERT_FALSE(answer.failure) << answer.failure->message;
  ASSERT_EQ(answer.response.outputs.at(0).tensor.shape(), (Shape{1, 1}));
  EXPECT_EQ(answer.response.outputs[0].tensor.values<float>()[0], 14.0f);
}

TEST_F(ServiceTest, ConcurrentClientsWithUnevenRowsGetTheirOwnRows) {
  const std::string path = add_model("batched", affine_model(-0.75f));
  write("batched/config.json", R"({"max_batch_size": 4, "max_queue_delay_us": 2000})");
  add_model("plain", sum_model());
  Service service(options());
  ASSERT_TRUE(service.ready());

  constexpr int kThreads = 4, kPerThread = 6;
  std::atomic<int> failures{0};
  std::vector<std::vector<std::pair<Tensor, Answer>>> results(kThreads);
  std::vector<std::thread> clients;
  for (int t = 0; t < kThreads; ++t)
    clients.emplace_back([&, t] {
      for (int i = 0; i < kPerThread; ++i) {
        const std::int64_t rows = 1 + (t + i) % 3;
        Tensor x = rows_of_x(rows, static_cast<std::uint32_t>(1000 + t * 100 + i));
        if (service.models().size() != 2) ++failures;  // metadata reads beside infer
        results[t].emplace_back(x, infer_sync(service, request_x("batched", x)));
      }
    });
  for (auto& c : clients) c.join();
  EXPECT_EQ(failures.load(), 0);
  for (int t = 0; t < kThreads; ++t)
    for (const auto& [x, answer] : results[t]) {
      ASSERT_FALSE(answer.failure) << answer.failure->message;
      const Outputs alone = run_alone(path, {x}, 4);
      expect_same_bits(answer.response.outputs[0].tensor, alone[0], "y");
      expect_same_bits(answer.response.outputs[1].tensor, alone[1], "z");
    }
  EXPECT_EQ(service.model("batched")->batching.requests, static_cast<std::uint64_t>(kThreads * kPerThread));
}

TEST_F(ServiceTest, AFailingBatchFailsEachOfItsRequests) {
  add_model("lookup", lookup_model());
  write("lookup/config.json", R"({"max_batch_size": 4, "max_queue_delay_us": 5000000})");
  Service service(options());
  ASSERT_TRUE(service.ready()) << service.model("lookup")->error;
  auto ids = [](std::vector<std::int64_t> v) {
    const auto rows = static_cast<std::int64_t>(v.size() / 2);
    InferRequest r;
    r.model = "lookup";
    r.inputs.push_back({"ids", Tensor::from<std::int64_t>(Shape{rows, 2}, v)});
    return r;
  };
  // Four rows in four requests: one batch, one of them with an id outside the table.
  const std::vector<std::vector<std::int64_t>> batch = {{0, 1}, {2, 3}, {4, 99}, {1, 1}};
  std::vector<std::future<Answer>> answers;
  for (const auto& v : batch) {
    answers.push_back(infer_async(service, ids(v)));
  }
  for (auto& a : answers) {
    const Answer answer = a.get();
    ASSERT_TRUE(answer.failure);
    EXPECT_EQ(answer.failure->status, Status::bad_request) << answer.failure->message;
    EXPECT_NE(answer.failure->message.find("99"), std::string::npos) << answer.failure->message;
  }
  EXPECT_EQ(service.model("lookup")->batching.largest_batch, 4u);

  // The model still serves: rows of the table (0.5 * i - 3), hand-computed.
  std::vector<std::future<Answer>> good;
  for (const auto& v : std::vector<std::vector<std::int64_t>>{{4, 0, 2, 1}, {3, 3, 0, 4}}) {
    good.push_back(infer_async(service, ids(v)));
  }
  const std::vector<std::vector<std::int64_t>> expected_ids = {{4, 0, 2, 1}, {3, 3, 0, 4}};
  for (std::size_t r = 0; r < good.size(); ++r) {
    const Answer answer = good[r].get();
    ASSERT_FALSE(answer.failure) << answer.failure->message;
    const Tensor& rows = answer.response.outputs.at(0).tensor;
    ASSERT_EQ(rows.shape(), (Shape{static_cast<std::int64_t>(expected_ids[r].size() / 2), 2, 3}));
    const auto got = rows.values<float>();
    for (std::size_t k = 0; k < expected_ids[r].size(); ++k)
      for (int c = 0; c < 3; ++c)
        EXPECT_EQ(got[k * 3 + c], 0.5f * static_cast<float>(expected_ids[r][k] * 3 + c) - 3.0f);
  }
}

TEST_F(ServiceTest, TimeoutsAnswerTimeout) {
  add_model("batched", affine_model(1.0f));
  // One row never fills a batch of 4: the request waits the whole delay, past its timeout.
  write("batched/config.json", R"({"max_batch_size": 4, "max_queue_delay_us": 200000})");
  add_model("plain", affine_model(1.0f));
  write("plain/config.json", R"({"timeout_ms": 0.000001})");  // a deadline at once
  Service service(options());

  InferRequest waiting = request_x("batched", rows_of_x(1, 5));
  waiting.timeout_ms = 1;
  auto answer = infer_sync(service, waiting);
  ASSERT_TRUE(answer.failure);
  EXPECT_EQ(answer.failure->status, Status::timeout) << answer.failure->message;

  // The config's timeout applies when the request gives none: the executor finds the deadline
  // passed before the request's first Step.
  answer = infer_sync(service, request_x("plain", rows_of_x(1, 6)));
  ASSERT_TRUE(answer.failure);
  EXPECT_EQ(answer.failure->status, Status::timeout) << answer.failure->message;
  EXPECT_NE(answer.failure->message.find("'plain'"), std::string::npos) << answer.failure->message;

  // Without a timeout the same model answers.
  InferRequest patient = request_x("batched", rows_of_x(1, 5));
  answer = infer_sync(service, patient);
  EXPECT_FALSE(answer.failure) << answer.failure->message;
}

TEST_F(ServiceTest, ShutdownSubmitsQueuedRequests) {
  const std::string path = add_model("batched", affine_model(2.0f));
  // A delay far beyond the test: only shutdown sends these requests.
  write("batched/config.json", R"({"max_batch_size": 8, "max_queue_delay_us": 600000000})");
  std::vector<Tensor> inputs;
  std::vector<std::future<Answer>> answers;
  {
    Service service(options());
    for (int i = 0; i < 3; ++i) {
      inputs.push_back(rows_of_x(1 + i, 50 + i));
      answers.push_back(infer_async(service, request_x("batched", inputs.back())));
    }
    for (auto& a : answers)
      EXPECT_EQ(a.wait_for(std::chrono::seconds(0)), std::future_status::timeout);  // still queued
  }                                                                                 // the destructor shuts down
  for (int i = 0; i < 3; ++i) {
    ASSERT_EQ(answers[i].wait_for(std::chrono::seconds(0)), std::future_status::ready);
    const Answer answer = answers[i].get();
    ASSERT_FALSE(answer.failure) << answer.failure->message;
    const Outputs alone = run_alone(path, {inputs[i]}, 8);
    expect_same_bits(answer.response.outputs[0].tensor, alone[0], "y");
  }
}

TEST_F(ServiceTest, DrainSendsHeldRequestsWithoutTheDelayAndStillAccepts) {
  // What loom-serve does on SIGTERM before its front ends wait for their requests: with a delay
  // far beyond the test, only drain() can send these before shutdown.
  const std::string path = add_model("batched", affine_model(-2.0f));
  write("batched/config.json", R"({"max_batch_size": 8, "max_queue_delay_us": 600000000})");
  Service service(options());
  ASSERT_TRUE(service.ready()) << service.model("batched")->error;
  std::vector<Tensor> inputs;
  std::vector<std::future<Answer>> answers;
  for (int i = 0; i < 2; ++i) {
    inputs.push_back(rows_of_x(1 + i, 70 + i));
    answers.push_back(infer_async(service, request_x("batched", inputs.back())));
  }
  service.drain();
  // One more after drain(): accepted, and sent at once too.
  inputs.push_back(rows_of_x(3, 72));
  answers.push_back(infer_async(service, request_x("batched", inputs.back())));
  for (std::size_t i = 0; i < answers.size(); ++i) {
    const Answer answer = answers[i].get();  // while the Service still runs
    ASSERT_FALSE(answer.failure) << answer.failure->message;
    expect_same_bits(answer.response.outputs[0].tensor, run_alone(path, {inputs[i]}, 8)[0], "y");
  }
  EXPECT_TRUE(service.ready());
}

}  // namespace
}  // namespace loom::serve
