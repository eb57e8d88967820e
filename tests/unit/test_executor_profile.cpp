// The executor with a device profile: the file named in ExecutorOptions::profile is loaded at
// start, a model whose fingerprint it lists gets the measured Step times, the measured peaks feed
// the roofline, and the executor says which profile it uses.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>

#include "loom/executor.hpp"
#include "loom/profile.hpp"
#include "test_support.hpp"

using namespace loom;
using loom::test_support::code_of;

namespace {

Model two_step_model(std::int64_t width) {
  ModelBuilder b("tiny");
  auto x = b.input("x", DType::f32, Shape{2, width});
  auto w = b.random_weight("w", Shape{width, width}, 0.5f);
  b.output(b.op("Softmax", {b.relu(b.op("MatMul", {x, w}))}));
  return b.build();
}

std::string temp_path(const std::string& name) {
  return (std::filesystem::temp_directory_path() / ("loom-test-" + std::to_string(::getpid()) + "-" + name)).string();
}

ExecutorOptions cpu_with_profile(const std::string& profile) {
  ExecutorOptions o;
  o.device = "cpu";
  o.profile = profile;
  return o;
}

}  // namespace

TEST(ExecutorProfile, MeasuredStepTimesAndPeaksFromTheProfile) {
  const Model model = two_step_model(8);
  DeviceProfile profile;
  profile.device_name = "cpu";
  // Peaks chosen so the roofline is easy to check: 1 GFLOP/s, 1 GB/s.
  profile.peaks.flops_f32 = 1e9;
  profile.peaks.bandwidth = 1e9;
  profile.models.push_back(ModelProfile{
      "tiny", model_fingerprint(model, DType::f32), DType::f32, {{"MatMul_0", 12.5, 0, 0}, {"Softmax_0", 3.25, 0, 0}}});
  const std::string path = temp_path("profile.json");
  write_profile(profile, path);

  Executor ex(cpu_with_profile(path));
  EXPECT_EQ(ex.profile_path(), path);
  ex.load(model);
  ex.load(two_step_model(4), "other");  // same graph, other shapes: another fingerprint
  const auto info = ex.model_info("tiny");
  EXPECT_EQ(info.cost_source, "profile " + path);
  EXPECT_EQ(info.fingerprint, model_fingerprint(model, DType::f32));
  ASSERT_EQ(info.steps.size(), 2u);
  EXPECT_EQ(info.steps[0].measured_us, 12.5);
  EXPECT_EQ(info.steps[1].measured_us, 3.25);
  // MatMul [2,8]x[8,8] = 256 FLOP + Relu 16 FLOP at 1 GFLOP/s.
  EXPECT_DOUBLE_EQ(info.steps[0].compute_us, 272 / 1e9 * 1e6);
  const auto other = ex.model_info("other");
  EXPECT_EQ(other.cost_source, "roofline");
  for (const auto& step : other.steps) EXPECT_EQ(step.measured_us, 0);
  // Requests run as before.
  auto out = ex.submit("tiny", random_inputs(model, 1)).get();
  EXPECT_EQ(out[0].shape(), (Shape{2, 8}));
  std::filesystem::remove(path);
}

TEST(ExecutorProfile, NoneMeansRooflineAndABadPathIsAnError) {
  Executor ex(cpu_with_profile("none"));
  EXPECT_EQ(ex.profile_path(), "none");
  ex.load(two_step_model(8));
  EXPECT_EQ(ex.model_info("tiny").cost_source, "roofline");
  EXPECT_EQ(code_of([] { Executor bad(cpu_with_profile(temp_path("absent.json"))); }), ErrorCode::invalid_argument);
}
