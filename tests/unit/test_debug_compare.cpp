// The executor's debug mode on the CPU: compare mode against a device that is wrong on purpose (a
// test-only backend whose Tanh kernel adds 1 to element 3) blames exactly that Step, node and op;
// against the cpu:accel stand-in it reports nothing and leaves the outputs bit-equal to a plain CPU
// run, also when a Step pauses inside; debug = cpu runs on the CPU; bad settings are typed errors.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <future>
#include <memory>
#include <string>
#include <vector>

#include "backend/backend.hpp"
#include "backend/open_backend.hpp"
#include "core/random.hpp"
#include "loom/debug.hpp"
#include "loom/executor.hpp"
#include "loom/workloads.hpp"
#include "test_support.hpp"
#include "unit/test_executor_preempt_support.hpp"

using namespace loom;
using loom::test_support::same_bits;

namespace {

// ---- A device that is wrong on purpose ----

constexpr const char* kFaultyDevice = "test:faulty-tanh";
constexpr std::int64_t kFaultyElement = 3;
constexpr float kFault = 1.0f;

// Runs the CPU kernel, then adds kFault to element kFaultyElement of its output.
class FaultyKernel final : public backend::OpKernel {
 public:
  FaultyKernel(const backend::KernelSpec& spec, std::unique_ptr<backend::OpKernel> inner)
      : OpKernel(spec), inner_(std::move(inner)) {}
  std::size_t workspace_bytes() const override { return inner_->workspace_bytes(); }

 protected:
  void run_impl(std::span<const void* const> inputs, std::span<void* const> outputs, void* workspace,
                backend::Stream& stream) override {
    inner_->run(inputs, outputs, workspace, stream);
    static_cast<float*>(outputs[0])[kFaultyElement] += kFault;  // CPU streams have finished the run
  }

 private:
  std::unique_ptr<backend::OpKernel> inner_;
};

// The CPU backend with its Tanh kernel made faulty; everything else passes through.
class FaultyTanhBackend final : public backend::Backend {
 public:
  backend::Capabilities capabilities() const noexcept override { return cpu_->capabilities(); }
  std::string name() const override { return kFaultyDevice; }
  std::string device_name() const override { return "CPU with a faulty Tanh"; }
  double peak_flops(DType dtype) const override { return cpu_->peak_flops(dtype); }
  double peak_bandwidth() const override { return cpu_->peak_bandwidth(); }
  std::size_t onchip_bytes() const override { return cpu_->onchip_bytes(); }
  std::unique_ptr<backend::OpKernel> create_kernel(const backend::KernelSpec& spec) override {
    auto kernel = cpu_->create_kernel(spec);
    if (spec.node->op_type != "Tanh") return kernel;
    return std::make_unique<FaultyKernel>(spec, std::move(kernel));
  }
  std::unique_ptr<backend::Stream> create_stream(int priority) override { return cpu_->create_stream(priority); }
  void* allocate(std::size_t bytes) override { return cpu_->allocate(bytes); }
  void deallocate(void* ptr) noexcept override { cpu_->deallocate(ptr); }
  void* allocate_host(std::size_t bytes) override { return cpu_->allocate_host(bytes); }
  void deallocate_host(void* ptr) noexcept override { cpu_->deallocate_host(ptr); }
  void convert(const void* src, DType src_dtype, void* dst, DType dst_dtype, std::size_t count,
               backend::Stream& stream) override {
    cpu_->convert(src, src_dtype, dst, dst_dtype, count, stream);
  }

 private:
  std::unique_ptr<backend::Backend> cpu_ = backend::make_cpu_backend();
};

int one_device() noexcept { return 1; }
std::unique_ptr<backend::Backend> open_faulty(int) { return std::make_unique<FaultyTanhBackend>(); }
// Below every real backend: "auto" never opens it.
[[maybe_unused]] const bool faulty_registered =
    backend::register_backend({kFaultyDevice, -100, one_device, open_faulty});

// ---- A three-Step model whose middle Step holds the Tanh ----

// y = softmax(tanh(relu(x W1) W2 + b2)): Step 0 MatMul+Relu, Step 1 MatMul+Add+Tanh, Step 2 Softmax.
// The weights are known here, so Tanh's output is computed independently below.
struct ThreeSteps {
  static constexpr int rows = 2, in = 8, hidden = 8, out = 6;
  std::vector<float> w1, w2, b2;
  std::string tanh_node = "the_tanh", tanh_output;
  std::vector<std::string> step1_nodes;
  Model model;

  ThreeSteps() {
    SplitMix64 rng(7);
    for (int i = 0; i < in * hidden; ++i) w1.push_back(rng.uniform(-0.5, 0.5));
    for (int i = 0; i < hidden * out; ++i) w2.push_back(rng.uniform(-0.5, 0.5));
    for (int i = 0; i < out; ++i) b2.push_back(rng.uniform(-0.5, 0.5));
    ModelBuilder mb("three_steps");
    const auto x = mb.input("x", DType::f32, Shape{rows, in});
    const auto h1 = mb.relu(mb.op("MatMul", {x, mb.constant("w1", Tensor::from<float>(Shape{in, hidden}, w1))}));
    const auto matmul2 =
        mb.node("MatMul", {h1, mb.constant("w2", Tensor::from<float>(Shape{hidden, out}, w2))}, {}, 1, "second_matmul");
    const auto sum =
        mb.node("Add", {matmul2[0], mb.constant("b2", Tensor::from<float>(Shape{out}, b2))}, {}, 1, "bias_add");
    tanh_output = mb.node("Tanh", {sum[0]}, {}, 1, tanh_node)[0];
    mb.output(mb.op("Softmax", {tanh_output}, {{"axis", std::int64_t{-1}}}));
    model = mb.build();
    step1_nodes = {"second_matmul", "bias_add", tanh_node};
  }

  // Tanh's output, element `flat` (row-major [rows, out]), in double.
  double tanh_value(const Tensor& x, std::int64_t flat) const {
    const auto xv = x.values<float>();
    const std::int64_t r = flat / out, c = flat % out;
    double acc = b2[static_cast<std::size_t>(c)];
    for (int k = 0; k < hidden; ++k) {
      double h = 0;
      for (int i = 0; i < in; ++i) h += double(xv[static_cast<std::size_t>(r * in + i)]) * w1[i * hidden + k];
      acc += std::max(h, 0.0) * w2[static_cast<std::size_t>(k * out + c)];
    }
    return std::tanh(acc);
  }
};

Tensor random_x(std::uint64_t seed) {
  SplitMix64 rng(seed);
  Tensor x(DType::f32, Shape{ThreeSteps::rows, ThreeSteps::in});
  for (auto& v : x.values<float>()) v = static_cast<float>(rng.uniform(-2, 2));
  return x;
}

ExecutorOptions options_for(const std::string& device, DebugMode debug) {
  ExecutorOptions o;
  o.device = device;
  o.profile = "none";
  o.debug = debug;
  return o;
}

// Each model's outputs for each input set, run one by one on a fresh executor with `options`.
std::vector<Outputs> run_each(const ExecutorOptions& options, const Model& model,
                              const std::vector<std::vector<Tensor>>& inputs) {
  Executor ex(options);
  ex.load(model, "m");
  std::vector<Outputs> outputs;
  for (const auto& in : inputs) outputs.push_back(ex.submit("m", in).get());
  return outputs;
}

}  // namespace

TEST(ExecutorDebugCompare, AFaultyKernelIsBlamedByStepNodeAndOp) {
  const ThreeSteps net;
  constexpr int requests = 3;
  std::vector<std::vector<Tensor>> inputs;
  for (int i = 0; i < requests; ++i) inputs.push_back({random_x(100 + i)});

  Executor ex(options_for(kFaultyDevice, DebugMode::compare));
  ex.load(net.model);
  const ModelInfo info = ex.model_info("three_steps");
  ASSERT_EQ(info.steps.size(), 3u);
  ASSERT_EQ(info.steps[1].ops, (std::vector<std::string>{"MatMul", "Add", "Tanh"}));
  std::vector<std::future<Outputs>> futures;
  for (const auto& in : inputs) futures.push_back(ex.submit("three_steps", in));
  std::vector<Outputs> outputs;
  for (auto& f : futures) outputs.push_back(f.get());
  ex.shutdown();

  // The requests completed with the device's (faulty) outputs, as a run without the debug mode
  // gives them, and those differ from the CPU's.
  const auto device_alone = run_each(options_for(kFaultyDevice, DebugMode::off), net.model, inputs);
  const auto cpu_alone = run_each(options_for("cpu", DebugMode::off), net.model, inputs);
  for (int i = 0; i < requests; ++i) {
    EXPECT_TRUE(same_bits(outputs[i], device_alone[i])) << i;
    EXPECT_FALSE(same_bits(outputs[i], cpu_alone[i])) << i;
  }

  const DebugReport report = ex.debug_report();
  EXPECT_EQ(report.mode, DebugMode::compare);
  EXPECT_EQ(report.device, "CPU with a faulty Tanh");
  ASSERT_EQ(report.divergences.size(), std::size_t{requests});
  for (const DebugDivergence& v : report.divergences) {
    SCOPED_TRACE("request " + std::to_string(v.request_id));
    ASSERT_LT(v.request_id, std::uint64_t{requests});
    const Tensor& x = inputs[v.request_id][0];
    EXPECT_EQ(v.model, "three_steps");
    EXPECT_EQ(v.step_index, 1u);
    EXPECT_EQ(v.step_count, 3u);
    EXPECT_EQ(v.step_name, info.steps[1].name);
    std::vector<std::string> names, ops;
    for (const auto& node : v.step_nodes) {
      names.push_back(node.name);
      ops.push_back(node.op_type);
    }
    EXPECT_EQ(names, net.step1_nodes);
    EXPECT_EQ(ops, info.steps[1].ops);
    EXPECT_EQ(v.node, net.tanh_node);
    EXPECT_EQ(v.op_type, "Tanh");
    EXPECT_EQ(v.value, net.tanh_output);
    EXPECT_EQ(v.value_shape, (Shape{ThreeSteps::rows, ThreeSteps::out}));
    // Only the faulty element differs, by the fault, from tanh computed here in double.
    EXPECT_EQ(v.difference.beyond, 1u);
    EXPECT_EQ(v.difference.first, kFaultyElement);
    const double expected = net.tanh_value(x, kFaultyElement);
    EXPECT_NEAR(v.difference.reference_value, expected, 1e-5);
    EXPECT_NEAR(v.difference.device_value, expected + kFault, 1e-5);
    EXPECT_NEAR(v.difference.max_abs, kFault, 1e-6);
    EXPECT_NEAR(v.difference.max_rel, kFault / std::fabs(expected), 1e-4 * kFault / std::fabs(expected));
    // The input that caused it.
    ASSERT_EQ(v.inputs.size(), 1u);
    EXPECT_EQ(v.input_names, (std::vector<std::string>{"x"}));
    EXPECT_TRUE(same_bits({v.inputs[0]}, {x}));
    const std::string text = format_divergence(v);
    for (const std::string& part : {net.tanh_node, std::string("(Tanh)"), info.steps[1].name, std::string("x 2x8")})
      EXPECT_NE(text.find(part), std::string::npos) << part << " not in:\n" << text;
  }
  ASSERT_EQ(report.models.size(), 1u);
  const DebugModelSummary& summary = report.models[0];
  EXPECT_EQ(summary.requests_compared, std::uint64_t{requests});
  EXPECT_EQ(summary.divergent_requests, std::uint64_t{requests});
  // Step 0 matched and Step 1 diverged; Step 2 was not compared.
  EXPECT_EQ(summary.steps_compared, std::uint64_t{2 * requests});
  EXPECT_EQ(summary.max_abs_diff, 0.0);  // Step 0 ran the same kernels on both
  const ExecutorStats stats = ex.stats();
  EXPECT_EQ(stats.debug_steps_compared, std::uint64_t{2 * requests});
  EXPECT_EQ(stats.debug_divergences, std::uint64_t{requests});
  EXPECT_EQ(stats.requests_completed, std::uint64_t{requests});
  EXPECT_NE(format_debug_summary(summary, report).find("3 of 3 requests diverged"), std::string::npos);
}

TEST(ExecutorDebugCompare, CpuAgainstTheAccelStandInReportsNothing) {
  // The three-Step model and the built-in default workload; every Step of every request compared.
  std::vector<Model> models = workloads::default_workload(1, workloads::Size::small);
  models.push_back(ThreeSteps().model);
  constexpr int requests = 2;
  ExecutorOptions options = options_for("cpu:accel", DebugMode::compare);
  Executor ex(options);
  EXPECT_EQ(ex.backend_name(), "cpu:accel");
  EXPECT_NE(ex.device_name().find("debug=compare"), std::string::npos) << ex.device_name();
  std::vector<std::vector<std::vector<Tensor>>> inputs(models.size());
  std::vector<std::vector<std::future<Outputs>>> futures(models.size());
  for (const Model& model : models) ex.load(model);
  for (std::size_t m = 0; m < models.size(); ++m)
    for (int i = 0; i < requests; ++i) {
      inputs[m].push_back(random_inputs(models[m], 10 * m + i));
      futures[m].push_back(ex.submit(models[m].name, inputs[m].back()));
    }
  std::vector<std::vector<Outputs>> outputs(models.size());
  for (std::size_t m = 0; m < models.size(); ++m)
    for (auto& f : futures[m]) outputs[m].push_back(f.get());
  ex.shutdown();

  const DebugReport report = ex.debug_report();
  EXPECT_TRUE(report.divergences.empty()) << format_divergence(report.divergences.front());
  ASSERT_EQ(report.models.size(), models.size());
  std::uint64_t steps = 0;
  for (std::size_t m = 0; m < models.size(); ++m) {
    SCOPED_TRACE(models[m].name);
    const DebugModelSummary& summary = report.models[m];
    const std::size_t step_count = ex.model_info(models[m].name).steps.size();
    EXPECT_EQ(summary.model, models[m].name);
    EXPECT_EQ(summary.requests_compared, std::uint64_t{requests});
    EXPECT_EQ(summary.steps_compared, requests * step_count);
    EXPECT_GE(summary.values_compared, summary.steps_compared);
    EXPECT_EQ(summary.divergent_requests, 0u);
    // The same kernels on both sides: the same bits, and so the same outputs as a plain CPU run.
    EXPECT_EQ(summary.max_abs_diff, 0.0);
    const auto cpu_alone = run_each(options_for("cpu", DebugMode::off), models[m], inputs[m]);
    for (int i = 0; i < requests; ++i) EXPECT_TRUE(same_bits(outputs[m][i], cpu_alone[i])) << i;
    EXPECT_NE(format_debug_summary(summary, report).find("no divergence"), std::string::npos);
    steps += summary.steps_compared;
  }
  EXPECT_EQ(ex.stats().debug_steps_compared, steps);
  EXPECT_EQ(ex.stats().debug_divergences, 0u);
}

TEST(ExecutorDebugCompare, AStepPausedInsideIsComparedOnceWhenItCompletes) {
  // Five urgent requests of the same LSTM model pause the long one inside its LSTM Step, at
  // iterations 1 to 5; each request's Steps are compared once each, as they complete.
  ModelBuilder b("long_lstm", 41);
  constexpr std::int64_t seq = 32, input = 8, hidden = 16;
  const auto x = b.input("x", DType::f32, Shape{seq, 1, input});
  const float bound = 1.0f / std::sqrt(static_cast<float>(hidden));
  const auto lstm = b.node(
      "LSTM",
      {x, b.random_weight("W", Shape{1, 4 * hidden, input}, bound),
       b.random_weight("R", Shape{1, 4 * hidden, hidden}, bound), b.random_weight("B", Shape{1, 8 * hidden}, bound)},
      {{"hidden_size", hidden}}, 3, "lstm");
  b.output(lstm[0]);
  b.output(b.linear(b.reshape(lstm[1], {1, hidden}), hidden, 10));
  const Model model = b.build();
  const auto long_in = random_inputs(model, 401), urgent_in = random_inputs(model, 402);
  constexpr int urgent_count = 5;

  ExecutorOptions options = options_for("cpu:accel", DebugMode::compare);
  test_support::UrgentInjector injector("long", urgent_in, urgent_count);
  runtime::ExecutorTestHooks hooks;
  injector.install(hooks);
  const auto holder = runtime::ExecutorTestHooks::make_executor(options, std::move(hooks));
  Executor& ex = *holder;
  injector.attach(ex);
  ex.load(model, "long");
  const Outputs long_outputs = injector.run_long(long_in, 0);
  ex.shutdown();

  EXPECT_EQ(ex.stats().pauses_inside_steps, std::uint64_t{urgent_count});
  const auto cpu = run_each(options_for("cpu", DebugMode::off), model, {long_in, urgent_in});
  EXPECT_TRUE(same_bits(long_outputs, cpu[0]));
  for (const Outputs& out : injector.urgent_outputs()) EXPECT_TRUE(same_bits(out, cpu[1]));
  const DebugReport report = ex.debug_report();
  EXPECT_TRUE(report.divergences.empty()) << format_divergence(report.divergences.front());
  ASSERT_EQ(report.models.size(), 1u);
  EXPECT_EQ(report.models[0].requests_compared, std::uint64_t{urgent_count + 1});
  EXPECT_EQ(report.models[0].steps_compared, (urgent_count + 1) * ex.model_info("long").steps.size());
}

TEST(ExecutorDebugCpu, RunsOnTheCpuInsteadOfTheDevice) {
  // The faulty device named, debug = cpu: the CPU's answers, and the name says why.
  const ThreeSteps net;
  const std::vector<std::vector<Tensor>> inputs = {{random_x(1)}, {random_x(2)}};
  ExecutorOptions options = options_for(kFaultyDevice, DebugMode::cpu);
  Executor ex(options);
  EXPECT_EQ(ex.backend_name(), "cpu");
  EXPECT_NE(ex.device_name().find("debug=cpu"), std::string::npos) << ex.device_name();
  EXPECT_NE(ex.device_name().find(kFaultyDevice), std::string::npos) << ex.device_name();
  const auto on_cpu = run_each(options, net.model, inputs);
  const auto cpu_alone = run_each(options_for("cpu", DebugMode::off), net.model, inputs);
  const auto faulty = run_each(options_for(kFaultyDevice, DebugMode::off), net.model, inputs);
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    EXPECT_TRUE(same_bits(on_cpu[i], cpu_alone[i])) << i;
    EXPECT_FALSE(same_bits(on_cpu[i], faulty[i])) << i;
  }
  EXPECT_EQ(ex.debug_report().mode, DebugMode::cpu);
  EXPECT_TRUE(ex.debug_report().models.empty());
}

TEST(DebugMode, NamesAndBadSettingsAreTypedErrors) {
  for (DebugMode mode : {DebugMode::off, DebugMode::cpu, DebugMode::compare})
    EXPECT_EQ(debug_mode_from_name(debug_mode_name(mode)), mode);
  test_support::expect_error([] { (void)debug_mode_from_name("verbose"); }, ErrorCode::invalid_argument,
                             {"verbose", "off, cpu, compare"});
  ExecutorOptions options = options_for("cpu", DebugMode::compare);
  options.debug_tolerance = DebugTolerance{-1e-3, 1e-3};
  test_support::expect_error([&] { Executor ex(options); }, ErrorCode::invalid_argument, {"abs", "-0.001"});
  options.debug_tolerance = DebugTolerance{1e-3, NAN};
  test_support::expect_error([&] { Executor ex(options); }, ErrorCode::invalid_argument, {"rel"});
  options.debug_tolerance.reset();
  options.debug = static_cast<DebugMode>(7);
  test_support::expect_error([&] { Executor ex(options); }, ErrorCode::invalid_argument, {"debug", "7"});
}

TEST(DebugMode, ToleranceDecidesWhatDiverges) {
  const DebugTolerance tolerance{0.1, 0.01};
  const Tensor reference = Tensor::from<float>(Shape{4}, {1.0f, -100.0f, 0.0f, NAN});
  // Inside abs + rel*|ref| (0.11, 1.1, 0.1) and NaN against NaN: nothing diverges.
  const TensorDifference inside =
      compare_tensors(Tensor::from<float>(Shape{4}, {1.105f, -101.0f, -0.09f, NAN}), reference, tolerance);
  EXPECT_EQ(inside.beyond, 0u);
  EXPECT_EQ(inside.first, -1);
  EXPECT_NEAR(inside.max_abs, 1.0, 1e-6);
  EXPECT_NEAR(inside.max_rel, 0.105, 1e-6);
  // Just outside on element 1, a number against NaN on element 3.
  const TensorDifference outside =
      compare_tensors(Tensor::from<float>(Shape{4}, {1.0f, -101.2f, 0.0f, 5.0f}), reference, tolerance);
  EXPECT_EQ(outside.beyond, 2u);
  EXPECT_EQ(outside.first, 1);
  EXPECT_FLOAT_EQ(static_cast<float>(outside.device_value), -101.2f);
  EXPECT_EQ(outside.reference_value, -100.0);
  EXPECT_TRUE(std::isinf(outside.max_abs));
  // Integers must be equal, whatever the tolerance.
  const TensorDifference ints = compare_tensors(Tensor::from<std::int64_t>(Shape{2}, {5, 7}),
                                                Tensor::from<std::int64_t>(Shape{2}, {5, 8}), DebugTolerance{10, 10});
  EXPECT_EQ(ints.beyond, 1u);
  EXPECT_EQ(ints.first, 1);
  EXPECT_EQ(test_support::code_of([&] { (void)compare_tensors(reference, Tensor(DType::f32, Shape{3}), tolerance); }),
            ErrorCode::shape_mismatch);
  EXPECT_GT(default_debug_tolerance(DType::f16).abs, default_debug_tolerance(DType::f32).abs);
  EXPECT_GT(default_debug_tolerance(DType::f16).rel, default_debug_tolerance(DType::f32).rel);
}

TEST(DebugMode, AccelStandInIsASeparateCpuBackend) {
  auto accel = backend::open_backend("cpu:accel");
  auto cpu = backend::open_backend("cpu");
  EXPECT_EQ(accel->name(), "cpu:accel");
  EXPECT_NE(accel->device_name().find("stand-in"), std::string::npos) << accel->device_name();
  EXPECT_EQ(cpu->name(), "cpu");
  // "auto" never picks the stand-in, and bad spellings stay typed errors.
  EXPECT_NE(backend::open_backend("auto")->name(), "cpu:accel");
  for (const char* bad : {"cpu:accelx", "cpu:accel:1", "accel"})
    EXPECT_EQ(test_support::code_of([&] { (void)backend::open_backend(bad); }), ErrorCode::invalid_argument) << bad;
}
