// Timelines on the CUDA backend: timed events (cudaEventElapsedTime) and the executor's recorded
// timeline, held to the same rules as on the CPU. Skipped without a device.
#include <gtest/gtest.h>

#include "backend/backend.hpp"
#include "test_support.hpp"
#include "unit/executor_timeline_checks.hpp"

namespace loom {
namespace {

class CudaTimeline : public ::testing::Test {
 protected:
  void SetUp() override {
    if (cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device: CUDA timelines are only compiled here";
  }
};

TEST_F(CudaTimeline, TimedEventsAreOrderedAndUntimedOnesRefused) {
  auto device = backend::make_cuda_backend(0);
  auto stream = device->create_stream();
  constexpr std::size_t kBytes = 64 << 20;
  void* a = device->allocate(kBytes);
  void* b = device->allocate(kBytes);
  auto first = stream->record_timed();
  stream->copy_on_device(b, a, kBytes);
  auto second = stream->record_timed();
  stream->copy_on_device(a, b, kBytes);
  auto third = stream->record_timed();
  auto untimed = stream->record();
  stream->synchronize();
  const double one = second->microseconds_since(*first);
  const double two = third->microseconds_since(*first);
  EXPECT_GT(one, 0.0) << "a 64 MiB device copy takes time";
  EXPECT_GE(two, one);
  EXPECT_EQ(first->microseconds_since(*first), 0.0);
  EXPECT_EQ(test_support::code_of([&] { untimed->microseconds_since(*first); }), ErrorCode::invalid_argument);
  EXPECT_EQ(test_support::code_of([&] { first->microseconds_since(*untimed); }), ErrorCode::invalid_argument);
  device->deallocate(a);
  device->deallocate(b);
}

TEST_F(CudaTimeline, ExecutorRecordsEveryStepOnItsStream) {
  timeline_checks::record_and_check("cuda", timeline_checks::kCudaTimeTolerance_us);
}

}  // namespace
}  // namespace loom
