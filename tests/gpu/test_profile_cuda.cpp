// The profiler on CUDA: the probes start, leave room for other work and stop; peaks and Steps are
// measured with probe slowdowns. Skipped without a device.
#include <gtest/gtest.h>

#include "gpu_op_harness.hpp"
#include "loom/workloads.hpp"
#include "profiler/profiler.hpp"

namespace loom::gpu_testing {
namespace {

using CudaProfileTest = CudaOpTest;

ProfilerOptions quick_options() {
  ProfilerOptions options;
  options.runs = 5;
  options.warmup = 2;
  options.gemm_size = 2048;
  options.copy_bytes = std::uint64_t{256} << 20;
  options.max_arenas = 4;
  return options;
}

TEST_F(CudaProfileTest, ProbesStartLeaveRoomAndStop) {
  for (const auto kind : {backend::ProbeKind::compute, backend::ProbeKind::memory}) {
    auto probe = cuda_->start_probe(kind);
    ASSERT_NE(probe, nullptr);
    // Work on another stream still completes while the probe holds every SM.
    auto stream = cuda_->create_stream(0);
    void* a = cuda_->allocate(1 << 20);
    void* b = cuda_->allocate(1 << 20);
    stream->copy_on_device(b, a, 1 << 20);
    stream->synchronize();
    cuda_->deallocate(a);
    cuda_->deallocate(b);
    probe->stop();
    probe->stop();  // a second stop is a no-op
  }
  // Destroyed while running: stops without throwing.
  EXPECT_NO_THROW({ auto probe = cuda_->start_probe(backend::ProbeKind::compute); });
}

TEST_F(CudaProfileTest, PeaksInBothDtypes) {
  const PeakFigures peaks = profile::measure_peaks(*cuda_, quick_options());
  EXPECT_GT(peaks.flops_f32, 0);
  EXPECT_GT(peaks.flops_f16, 0);
  EXPECT_GT(peaks.bandwidth, 0);
}

TEST_F(CudaProfileTest, StepsWithProbeSlowdowns) {
  const Model model = workloads::lstm_seq(1, workloads::Size::small);
  for (const DType dtype : {DType::f32, DType::f16}) {
    const ModelMeasurement m = profile::measure_model(*cuda_, model, dtype, PeakFigures{}, quick_options());
    EXPECT_EQ(m.profile.fingerprint, model_fingerprint(model, dtype));
    ASSERT_FALSE(m.profile.steps.empty());
    for (const auto& step : m.profile.steps) {
      EXPECT_GT(step.measured_us, 0) << step.name;
      EXPECT_GT(step.compute_probe_slowdown, 0) << step.name;
      EXPECT_GT(step.memory_probe_slowdown, 0) << step.name;
    }
  }
}

}  // namespace
}  // namespace loom::gpu_testing
