// The executor on the CUDA backend against the executor on the CPU backend: the default workload,
// f32 and f16, several models at once. Skipped without a device.
#include <gtest/gtest.h>

#include <cmath>
#include <thread>

#include "loom/executor.hpp"
#include "loom/workloads.hpp"

using namespace loom;

namespace {

void expect_close(const Tensor& got, const Tensor& ref, double atol, double rtol, const std::string& what) {
  ASSERT_EQ(got.shape(), ref.shape()) << what;
  auto g = got.values<float>();
  auto r = ref.values<float>();
  std::size_t bad = 0;
  double worst = 0;
  for (std::size_t i = 0; i < r.size(); ++i) {
    const double err = std::abs(double(g[i]) - r[i]);
    worst = std::max(worst, err);
    if (!(err <= atol + rtol * std::abs(r[i]))) ++bad;
  }
  EXPECT_EQ(bad, 0u) << what << ": " << bad << " of " << r.size() << " elements off, worst |diff| " << worst;
}

struct Case {
  DType dtype;
  double atol, rtol;
};

}  // namespace

class CudaExecutor : public ::testing::TestWithParam<Case> {
 protected:
  void SetUp() override {
    if (cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device: the CUDA executor is not exercised on this machine";
  }
};

TEST_P(CudaExecutor, DefaultWorkloadMatchesCpu) {
  const auto param = GetParam();
  auto models = workloads::default_workload(2, workloads::Size::small);
  ExecutorOptions cpu_opts;
  cpu_opts.device = "cpu";
  ExecutorOptions gpu_opts;
  gpu_opts.device = "cuda";
  gpu_opts.compute_dtype = param.dtype;
  Executor cpu(cpu_opts), gpu(gpu_opts);
  EXPECT_EQ(gpu.backend_name(), "cuda");
  for (const auto& m : models) {
    cpu.load(m);
    gpu.load(m);
  }
  // All three models in flight at once on the GPU, several requests each.
  std::vector<std::thread> clients;
  for (std::size_t i = 0; i < models.size(); ++i)
    clients.emplace_back([&, i] {
      for (int r = 0; r < 3; ++r) {
        auto inputs = random_inputs(models[i], 10 * i + r);
        auto want = cpu.submit(models[i].name, inputs);
        auto got = gpu.submit(models[i].name, inputs);
        auto ref = want.get();
        auto out = got.get();
        ASSERT_EQ(out.size(), ref.size());
        for (std::size_t k = 0; k < ref.size(); ++k)
          expect_close(out[k], ref[k], param.atol, param.rtol, models[i].name + " output " + std::to_string(k));
      }
    });
  for (auto& c : clients) c.join();
  EXPECT_EQ(gpu.stats().requests_failed, 0u);
}

INSTANTIATE_TEST_SUITE_P(Precisions, CudaExecutor,
                         ::testing::Values(Case{DType::f32, 1e-3, 1e-3}, Case{DType::f16, 5e-2, 5e-2}),
                         [](const auto& info) { return std::string(dtype_name(info.param.dtype)); });

TEST(CudaExecutorErrors, BadInputOnTheGpuPath) {
  if (cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device";
  ExecutorOptions o;
  o.device = "cuda:0";
  Executor ex(o);
  ex.load(workloads::lstm_seq(1));
  EXPECT_THROW(ex.submit("lstm", {Tensor(DType::f32, Shape{1, 32})}), Error);
  auto out = ex.submit("lstm", random_inputs(workloads::lstm_seq(1), 1)).get();
  EXPECT_EQ(out[0].shape(), (Shape{1, 1000}));
  for (float v : out[0].values<float>()) ASSERT_TRUE(std::isfinite(v));
  ExecutorOptions bad;
  bad.device = "cuda:" + std::to_string(cuda_device_count());
  EXPECT_THROW(Executor{bad}, Error);
}
