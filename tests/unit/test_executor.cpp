// The executor on the CPU backend: correctness under many threads, nothing lost, typed errors for
// bad input, and the pipeline carrying on after each.
#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <cstring>
#include <thread>

#include "core/random.hpp"
#include "test_support.hpp"
#include "loom/executor.hpp"
#include "loom/workloads.hpp"

using namespace loom;
using loom::test_support::code_of;

namespace {

// y = relu(x · W + b) with W, b known to the test, so every output can be checked by hand.
struct Affine {
  static constexpr int in = 6, out = 5;
  std::vector<float> w, b;
  Model model;
  Affine() {
    SplitMix64 rng(42);
    for (int i = 0; i < in * out; ++i) w.push_back(rng.uniform(-1, 1));
    for (int i = 0; i < out; ++i) b.push_back(rng.uniform(-1, 1));
    ModelBuilder mb("affine");
    auto x = mb.input("x", DType::f32, Shape{2, in});
    auto wv = mb.constant("w", Tensor::from<float>(Shape{in, out}, w));
    auto bv = mb.constant("b", Tensor::from<float>(Shape{out}, b));
    mb.output(mb.relu(mb.op("Gemm", {x, wv, bv})));
    model = mb.build();
  }
  std::vector<double> expected(const Tensor& x) const {
    std::vector<double> y(2 * out);
    auto xv = x.values<float>();
    for (int r = 0; r < 2; ++r)
      for (int j = 0; j < out; ++j) {
        double acc = b[j];
        for (int k = 0; k < in; ++k) acc += double(xv[r * in + k]) * w[k * out + j];
        y[r * out + j] = std::max(acc, 0.0);
      }
    return y;
  }
};

Tensor random_x(std::uint64_t seed) {
  SplitMix64 rng(seed);
  Tensor x(DType::f32, Shape{2, Affine::in});
  for (auto& v : x.values<float>()) v = rng.uniform(-2, 2);
  return x;
}

ExecutorOptions cpu_options() {
  ExecutorOptions o;
  o.device = "cpu";
  o.queue_capacity = 4;  // small queues exercise back-pressure between stages
  return o;
}

}  // namespace

TEST(Executor, ManyThreadsEveryResultCorrectNoneLost) {
  const Affine affine;
  Executor ex(cpu_options());
  ex.load(affine.model);
  EXPECT_EQ(ex.backend_name(), "cpu");
  constexpr int threads = 8, per_thread = 40;
  std::atomic<int> checked{0};
  std::vector<std::thread> clients;
  for (int t = 0; t < threads; ++t)
    clients.emplace_back([&, t] {
      std::vector<std::pair<Tensor, std::future<Outputs>>> pending;
      for (int i = 0; i < per_thread; ++i) {
        Tensor x = random_x(1000 * t + i);
        auto f = ex.submit("affine", {x});
        pending.emplace_back(std::move(x), std::move(f));
      }
      for (auto& [x, f] : pending) {
        Outputs out = f.get();
        ASSERT_EQ(out.size(), 1u);
        ASSERT_EQ(out[0].shape(), (Shape{2, Affine::out}));
        const auto expect = affine.expected(x);
        auto got = out[0].values<float>();
        for (std::size_t k = 0; k < expect.size(); ++k)
          ASSERT_NEAR(got[k], expect[k], 1e-5 + 1e-5 * std::abs(expect[k]));
        ++checked;
      }
    });
  for (auto& c : clients) c.join();
  EXPECT_EQ(checked.load(), threads * per_thread);
  const auto stats = ex.stats();
  EXPECT_EQ(stats.requests_submitted, std::uint64_t(threads * per_thread));
  EXPECT_EQ(stats.requests_completed, std::uint64_t(threads * per_thread));
  EXPECT_EQ(stats.requests_failed, 0u);
  // Every request takes an arena of the same size, so the pool reuses freed ones. How many are
  // alive at once depends on how far the clients run ahead of the dispatcher (under TSan nearly
  // every request finds its arena still in use), so the test asks only that reuse happens at all.
  EXPECT_GT(stats.pool_reuses, 0u);
}

TEST(Executor, CallbacksRunForEveryRequest) {
  const Affine affine;
  Executor ex(cpu_options());
  ex.load(affine.model, "a");
  std::atomic<int> ok{0};
  for (int i = 0; i < 50; ++i)
    ex.submit("a", {random_x(i)}, [&](std::exception_ptr e, Outputs out) {
      if (!e && out.size() == 1) ++ok;
    });
  ex.shutdown();  // waits for every accepted request
  EXPECT_EQ(ok.load(), 50);
}

TEST(Executor, ConcurrentModelsMatchIsolatedRuns) {
  // The three default models interleaved from many threads give the same bits as each request
  // run alone on a fresh executor.
  auto models = workloads::default_workload(1, workloads::Size::small);
  std::vector<std::vector<Tensor>> inputs;
  std::vector<Outputs> alone;
  {
    Executor ex(cpu_options());
    for (const auto& m : models) ex.load(m);
    for (std::size_t i = 0; i < models.size(); ++i) {
      inputs.push_back(random_inputs(models[i], 100 + i));
      alone.push_back(ex.submit(models[i].name, inputs[i]).get());
    }
  }
  Executor ex(cpu_options());
  for (const auto& m : models) ex.load(m);
  std::vector<std::thread> clients;
  std::atomic<int> mismatches{0};
  for (std::size_t i = 0; i < models.size(); ++i)
    clients.emplace_back([&, i] {
      std::vector<std::future<Outputs>> futures;
      for (int r = 0; r < 4; ++r) futures.push_back(ex.submit(models[i].name, inputs[i]));
      for (auto& f : futures) {
        Outputs out = f.get();
        for (std::size_t k = 0; k < out.size(); ++k)
          if (out[k].bytes() != alone[i][k].bytes() || std::memcmp(out[k].data(), alone[i][k].data(), out[k].bytes()))
            ++mismatches;
      }
    });
  for (auto& c : clients) c.join();
  EXPECT_EQ(mismatches.load(), 0);
  for (const auto& out : alone)
    for (float v : out[0].values<float>()) ASSERT_TRUE(std::isfinite(v));
}

TEST(Executor, BadInputGetsTypedErrorsAndTheExecutorCarriesOn) {
  const Affine affine;
  Executor ex(cpu_options());
  ex.load(affine.model);
  EXPECT_EQ(code_of([&] { ex.submit("nope", {random_x(1)}); }), ErrorCode::unknown_model);
  EXPECT_EQ(code_of([&] { ex.submit("affine", {}); }), ErrorCode::invalid_argument);
  EXPECT_EQ(code_of([&] {
              ex.submit("affine", {Tensor(DType::f32, Shape{3, Affine::in})});
            }),
            ErrorCode::shape_mismatch);
  EXPECT_EQ(code_of([&] {
              ex.submit("affine", {Tensor(DType::i64, Shape{2, Affine::in})});
            }),
            ErrorCode::dtype_mismatch);
  EXPECT_EQ(code_of([&] { ex.load(affine.model); }), ErrorCode::invalid_argument);  // duplicate name
  LoadOptions negative_cap;
  negative_cap.name = "capped";
  negative_cap.persistent_grid_max_sms = -1;
  EXPECT_EQ(code_of([&] { ex.load(affine.model, negative_cap); }), ErrorCode::invalid_argument);
  try {
    ex.submit("affine", {Tensor(DType::f32, Shape{2, 7})});
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("'affine'"), std::string::npos) << msg;
    EXPECT_NE(msg.find("2x6"), std::string::npos) << msg;
    EXPECT_NE(msg.find("2x7"), std::string::npos) << msg;
  }
  // An unsupported op fails its load only.
  ModelBuilder bad("bad");
  auto x = bad.input("x", DType::f32, Shape{2});
  bad.output(bad.op("Relu", {x}));
  Model m = bad.build();
  m.nodes[0].op_type = "Frobnicate";
  EXPECT_EQ(code_of([&] { ex.load(m); }), ErrorCode::unsupported);
  // Still serving.
  Tensor good = random_x(3);
  auto out = ex.submit("affine", {good}).get();
  EXPECT_NEAR(out[0].values<float>()[0], affine.expected(good)[0], 1e-5);
  ex.shutdown();
  EXPECT_EQ(code_of([&] { ex.submit("affine", {good}); }), ErrorCode::shutdown);
  ex.shutdown();  // idempotent
}

TEST(Executor, RunTimeFailuresArriveThroughTheFuture) {
  // An embedding lookup with an id past the table fails inside the CPU kernel; the request's
  // future carries the error and the next request runs.
  ModelBuilder b("embed");
  auto ids = b.input("ids", DType::i64, Shape{3});
  auto table = b.random_weight("table", Shape{4, 2}, 1.0f);
  b.output(b.op("Gather", {table, ids}));
  Executor ex(cpu_options());
  ex.load(b.build());
  auto bad = ex.submit("embed", {Tensor::from<std::int64_t>(Shape{3}, {0, 9, 1})});
  EXPECT_THROW(bad.get(), Error);
  auto good = ex.submit("embed", {Tensor::from<std::int64_t>(Shape{3}, {0, 3, -1})}).get();
  EXPECT_EQ(good[0].shape(), (Shape{3, 2}));
  EXPECT_EQ(ex.stats().requests_failed, 1u);
}

TEST(Executor, OptionsAreChecked) {
  auto with = [](auto set) {
    ExecutorOptions o;
    o.device = "cpu";
    set(o);
    return o;
  };
  EXPECT_EQ(code_of([&] { Executor ex(with([](auto& o) { o.policy = "lottery"; })); }), ErrorCode::invalid_argument);
  EXPECT_EQ(code_of([&] { Executor ex(with([](auto& o) { o.device = "tpu"; })); }), ErrorCode::invalid_argument);
  EXPECT_EQ(code_of([&] { Executor ex(with([](auto& o) { o.compute_dtype = DType::f16; })); }), ErrorCode::unsupported);
  if (cuda_device_count() == 0) {
    EXPECT_EQ(code_of([&] { Executor ex(with([](auto& o) { o.device = "cuda"; })); }), ErrorCode::backend);
    Executor automatic(with([](auto& o) { o.device = "auto"; }));
    EXPECT_EQ(automatic.backend_name(), "cpu");
  }
}

TEST(Executor, ModelInfoDescribesStepsAndMemory) {
  Executor ex(cpu_options());
  ex.load(workloads::lstm_seq(2));
  const auto info = ex.model_info("lstm");
  EXPECT_EQ(info.inputs.size(), 1u);
  EXPECT_EQ(info.outputs[0].shape, (Shape{2, 1000}));
  EXPECT_GT(info.weight_bytes, 0u);
  EXPECT_GT(info.activation_bytes, 0u);
  ASSERT_GE(info.steps.size(), 4u);
  bool saw_lstm = false;
  for (const auto& s : info.steps)
    for (const auto& op : s.ops) saw_lstm |= op == "LSTM";
  EXPECT_TRUE(saw_lstm);
  EXPECT_EQ(code_of([&] { ex.model_info("x"); }), ErrorCode::unknown_model);
}
