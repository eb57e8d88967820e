// The CUDA backend's own behaviour: device figures, memory, streams and events, conversion, and
// the errors kernel creation reports.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <limits>
#include <thread>
#include <vector>

#include "gpu_op_harness.hpp"

namespace loom::gpu_testing {
namespace {

using CudaBackendTest = CudaOpTest;

TEST_F(CudaBackendTest, ReportsDeviceFigures) {
  EXPECT_FALSE(cuda_->capabilities().synchronous_launches);
  EXPECT_TRUE(cuda_->capabilities().graphs);
  EXPECT_TRUE(cuda_->capabilities().f16_compute);
  EXPECT_EQ(cuda_->name(), "cuda");
  EXPECT_FALSE(cuda_->device_name().empty());
  EXPECT_GT(cuda_->peak_flops(DType::f32), 1e12);
  EXPECT_GE(cuda_->peak_flops(DType::f16), cuda_->peak_flops(DType::f32));
  EXPECT_GT(cuda_->peak_bandwidth(), 1e11);
  EXPECT_GT(cuda_->onchip_bytes(), 0u);
}

TEST_F(CudaBackendTest, AllocationsAreAlignedAndOutOfMemoryIsTyped) {
  void* small = cuda_->allocate(100);
  void* empty = cuda_->allocate(0);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(small) % 256, 0u);
  EXPECT_NE(empty, nullptr);
  cuda_->deallocate(small);
  cuda_->deallocate(empty);
  cuda_->deallocate(nullptr);

  try {
    (void)cuda_->allocate(std::size_t{1} << 52);  // 4 PiB: no device has it
    FAIL() << "allocating 4 PiB succeeded";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::out_of_memory) << e.what();
  }
  // The failed allocation must not linger as a CUDA error that the next kernel would report.
  OpCase relu{"Relu", {}, {random_tensor({64}, 1)}, {{DType::f32, {64}}}};
  EXPECT_NO_THROW(expect_agree(relu));
}

TEST_F(CudaBackendTest, CopiesRoundTripThroughPinnedMemory) {
  constexpr std::size_t kBytes = 1 << 20;
  auto* host_in = static_cast<std::uint8_t*>(cuda_->allocate_host(kBytes));
  auto* host_out = static_cast<std::uint8_t*>(cuda_->allocate_host(kBytes));
  for (std::size_t i = 0; i < kBytes; ++i) host_in[i] = static_cast<std::uint8_t>(i * 7 + 3);
  std::memset(host_out, 0, kBytes);
  {
    DeviceBuffer a(*cuda_, kBytes), b(*cuda_, kBytes);
    auto stream = cuda_->create_stream();
    EXPECT_NE(stream->native_handle(), nullptr);
    stream->copy_to_device(a.get(), host_in, kBytes);
    stream->copy_on_device(b.get(), a.get(), kBytes);
    stream->copy_to_host(host_out, b.get(), kBytes);
    stream->synchronize();
  }
  EXPECT_EQ(std::memcmp(host_in, host_out, kBytes), 0);
  cuda_->deallocate_host(host_in);
  cuda_->deallocate_host(host_out);
}

TEST_F(CudaBackendTest, EventsOrderWorkAcrossStreams) {
  constexpr std::size_t kBytes = 4 << 20;
  std::vector<std::uint8_t> source(kBytes), result(kBytes, 0);
  for (std::size_t i = 0; i < kBytes; ++i) source[i] = static_cast<std::uint8_t>(i % 251);
  DeviceBuffer a(*cuda_, kBytes), b(*cuda_, kBytes);
  auto producer = cuda_->create_stream(0);
  auto consumer = cuda_->create_stream(1);
  producer->copy_to_device(a.get(), source.data(), kBytes);
  auto written = producer->record();
  consumer->wait(*written);
  consumer->copy_on_device(b.get(), a.get(), kBytes);
  consumer->copy_to_host(result.data(), b.get(), kBytes);
  auto done = consumer->record();
  done->synchronize();
  EXPECT_TRUE(done->ready());
  EXPECT_TRUE(written->ready());
  EXPECT_EQ(source, result);
}

TEST_F(CudaBackendTest, AnyPriorityGivesAStream) {
  for (int priority : {-5, 0, 1, 2, 100}) {
    auto stream = cuda_->create_stream(priority);
    EXPECT_NE(stream->native_handle(), nullptr) << "priority " << priority;
    stream->synchronize();
  }
}

// Device conversion rounds to nearest even, like the host conversion in Tensor::to.
TEST_F(CudaBackendTest, ConvertMatchesHostConversion) {
  std::vector<float> values = {0.0f,
                               -0.0f,
                               1.0f,
                               -2.5f,
                               65504.0f,
                               70000.0f,
                               1e-6f,
                               3e-8f,
                               1.0f / 3.0f,
                               std::numeric_limits<float>::infinity(),
                               -std::numeric_limits<float>::infinity()};
  const Tensor noise = random_tensor({1000}, 42, -300.0f, 300.0f);
  values.insert(values.end(), noise.values<float>().begin(), noise.values<float>().end());
  const Tensor f32 = Tensor::from<float>({static_cast<std::int64_t>(values.size())}, values);
  auto stream = cuda_->create_stream();
  auto on_device = [&](const Tensor& src, DType dst_dtype) {
    DeviceBuffer in(*cuda_, src.bytes());
    Tensor out(dst_dtype, src.shape());
    DeviceBuffer result(*cuda_, out.bytes());
    stream->copy_to_device(in.get(), src.data(), src.bytes());
    cuda_->convert(in.get(), src.dtype(), result.get(), dst_dtype, static_cast<std::size_t>(src.numel()), *stream);
    stream->copy_to_host(out.data(), result.get(), out.bytes());
    stream->synchronize();
    return out;
  };
  for (DType narrow : {DType::f16, DType::bf16}) {
    SCOPED_TRACE(std::string(dtype_name(narrow)));
    const Tensor expected = f32.to(narrow);
    const Tensor narrowed = on_device(f32, narrow);
    EXPECT_EQ(std::memcmp(narrowed.data(), expected.data(), expected.bytes()), 0);
    const Tensor widened = on_device(expected, DType::f32);
    const Tensor expected_wide = expected.to(DType::f32);
    EXPECT_EQ(std::memcmp(widened.data(), expected_wide.data(), expected_wide.bytes()), 0);
  }
  const Tensor f16 = f32.to(DType::f16);
  const Tensor to_bf16 = on_device(f16, DType::bf16);
  const Tensor expected_bf16 = f16.to(DType::bf16);
  EXPECT_EQ(std::memcmp(to_bf16.data(), expected_bf16.data(), expected_bf16.bytes()), 0);
}

TEST_F(CudaBackendTest, KernelCreationReportsUnsupportedCases) {
  auto creation_error = [&](const OpCase& op) -> std::optional<ErrorCode> {
    try {
      (void)run_op(*cuda_, op);
    } catch (const Error& e) {
      return e.code();
    }
    return std::nullopt;
  };
  EXPECT_EQ(creation_error({"NoSuchOp", {}, {random_tensor({4}, 1)}, {{DType::f32, {4}}}}), ErrorCode::unsupported);
  EXPECT_EQ(creation_error({"Relu", {}, {random_tensor({4}, 1).to(DType::bf16)}, {{DType::bf16, {4}}}}),
            ErrorCode::unsupported);
  EXPECT_EQ(creation_error({"Conv",
                            {{"auto_pad", std::string("SAME_UPPER")}},
                            {random_tensor({1, 1, 4, 4}, 1), random_tensor({1, 1, 3, 3}, 2)},
                            {{DType::f32, {1, 1, 4, 4}}}}),
            ErrorCode::unsupported);
  EXPECT_EQ(creation_error({"Add", {}, {random_tensor({3}, 1), random_tensor({4}, 2)}, {{DType::f32, {4}}}}),
            ErrorCode::shape_mismatch);
}

// Executor threads call into one backend; each entry point selects the device itself.
TEST_F(CudaBackendTest, KernelsRunFromAnyHostThread) {
  const OpCase softmax{"Softmax", {}, {random_tensor({8, 33}, 3)}, {{DType::f32, {8, 33}}}};
  std::vector<Tensor> from_thread;
  std::thread worker([&] { from_thread = run_op(*cuda_, softmax); });
  worker.join();
  ASSERT_EQ(from_thread.size(), 1u);
  EXPECT_TRUE(all_close(run_op(*cpu_, softmax)[0], from_thread[0], kF32Tolerance));
}

}  // namespace
}  // namespace loom::gpu_testing
