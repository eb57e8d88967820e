// The profiler on the CPU backend: the same code path as on CUDA, minus the probes.
#include <gtest/gtest.h>

#include "backend/backend.hpp"
#include "loom/profile.hpp"
#include "loom/workloads.hpp"
#include "plan/compiled_model.hpp"
#include "profiler/profiler.hpp"

using namespace loom;

namespace {

// Few and short runs: these tests check what is measured, not how fast anything is.
ProfilerOptions quick_options() {
  ProfilerOptions options;
  options.device = "cpu";
  options.runs = 3;
  options.warmup = 1;
  options.gemm_size = 96;
  options.copy_bytes = std::uint64_t{4} << 20;
  options.max_arenas = 3;
  return options;
}

// Gather reads i64 ids whose arena bytes a later Step may reuse: timing Step 0 again after the
// model has run through would read garbage indices. The profiler must keep every Step's inputs.
Model gather_mlp() {
  ModelBuilder b("gather_mlp", 5);
  auto ids = b.input("ids", DType::i64, Shape{2, 6});
  b.metadata("input_range:ids", "0,32");
  auto x = b.op("Gather", {b.random_weight("table", Shape{32, 16}, 0.5f), ids});
  x = b.relu(b.op("MatMul", {x, b.random_weight("w1", Shape{16, 16}, 0.5f)}));
  x = b.op("Softmax", {x});
  x = b.op("MatMul", {x, b.random_weight("w2", Shape{16, 4}, 0.5f)});
  b.output(x);
  return b.build();
}

void expect_measured(const ModelMeasurement& m, const Model& model, const PeakFigures& peaks) {
  const auto reference = plan::compile(model, DType::f32, plan::DevicePeaks{peaks.flops_f32, peaks.bandwidth});
  EXPECT_EQ(m.profile.model, model.name);
  EXPECT_EQ(m.profile.fingerprint, model_fingerprint(model, DType::f32));
  EXPECT_EQ(m.profile.compute_dtype, DType::f32);
  ASSERT_EQ(m.profile.steps.size(), reference.steps.size());
  ASSERT_EQ(m.steps.size(), reference.steps.size());
  for (std::size_t s = 0; s < reference.steps.size(); ++s) {
    const StepProfile& step = m.profile.steps[s];
    EXPECT_EQ(step.name, reference.steps[s].name);
    EXPECT_GT(step.measured_us, 0) << step.name;
    // The CPU backend has no probes: not measured.
    EXPECT_EQ(step.compute_probe_slowdown, 0) << step.name;
    EXPECT_EQ(step.memory_probe_slowdown, 0) << step.name;
    // The estimate is the planner's roofline at the peaks given, next to the measurement.
    EXPECT_EQ(m.steps[s].name, step.name);
    EXPECT_DOUBLE_EQ(m.steps[s].compute_us, reference.steps[s].info.compute_us);
    EXPECT_DOUBLE_EQ(m.steps[s].memory_us, reference.steps[s].info.memory_us);
    EXPECT_EQ(m.steps[s].measured_us, step.measured_us);
  }
}

}  // namespace

TEST(ProfilerMedian, OddEvenAndEmpty) {
  EXPECT_EQ(profile::median({}), 0);
  EXPECT_EQ(profile::median({5}), 5);
  EXPECT_EQ(profile::median({9, 1, 5}), 5);
  EXPECT_EQ(profile::median({4, 1, 3, 2}), 2.5);
}

TEST(ProfilerCpu, PeaksArePositive) {
  Profiler profiler(quick_options());
  EXPECT_EQ(profiler.backend_name(), "cpu");
  EXPECT_FALSE(profiler.device_name().empty());
  const PeakFigures peaks = profiler.measure_peaks();
  EXPECT_GT(peaks.flops_f32, 0);
  EXPECT_EQ(peaks.flops_f16, 0);  // the CPU backend's MatMul is f32 only
  EXPECT_GT(peaks.bandwidth, 0);
  EXPECT_NE(peaks.method.find("96^3"), std::string::npos) << peaks.method;
}

TEST(ProfilerCpu, EveryStepOfASmallModelIsMeasured) {
  ProfilerOptions options = quick_options();
  options.flush_cache = false;  // the LSTM has enough Steps; the flush is covered below
  Profiler profiler(options);
  const PeakFigures peaks{40e9, 0, 20e9, "given"};
  const Model model = workloads::lstm_seq(1, workloads::Size::small);
  expect_measured(profiler.measure_model(model, DType::f32, peaks), model, peaks);
}

TEST(ProfilerCpu, StepsWithReusedInputBytesAreTimedOnValidData) {
  std::vector<std::string> progress;
  ProfilerOptions options = quick_options();
  options.progress = [&](const std::string& line) { progress.push_back(line); };
  Profiler profiler(options);  // probes on and cache flushing on: both are no-ops or cheap here
  const PeakFigures peaks{40e9, 0, 20e9, "given"};
  const Model model = gather_mlp();
  expect_measured(profiler.measure_model(model, DType::f32, peaks), model, peaks);
  EXPECT_FALSE(progress.empty());
}

TEST(ProfilerCpu, F16NeedsCuda) {
  Profiler profiler(quick_options());
  try {
    profiler.measure_model(gather_mlp(), DType::f16, PeakFigures{});
    FAIL() << "f16 on the CPU backend did not throw";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::unsupported) << e.what();
  }
}

TEST(ProfilerCpu, BadDeviceIsAnInvalidArgument) {
  ProfilerOptions options = quick_options();
  options.device = "tpu";
  try {
    Profiler profiler(options);
    FAIL() << "device 'tpu' was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::invalid_argument) << e.what();
  }
}
