// The CUDA encoder-stack decoder (persistent kernel, CUDA graph with a WHILE node, host loop)
// through the public API against the CPU decoder: f32 within 1e-4, f16 within 2e-2 on weights
// both sides store alike, block counts, in place, and pause/resume bit-identical to an
// uninterrupted run. Skipped without a device.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "gpu/decode_gpu_test_support.hpp"

namespace loom::decode_testing {
namespace {

using decode::EncoderStackSpec;
using loom::testing::all_close;
using loom::testing::random_tensor;

class CudaEncoderDecoder : public CudaDecoderTest {};

// x (f32 values) uploaded in `dtype`.
DeviceBuffer upload_as(DecodeEngine& engine, const Tensor& x, DType dtype) { return to_device(engine, x.to(dtype)); }

std::vector<float> download_as(DecodeEngine& engine, const DeviceBuffer& buffer, std::int64_t count, DType dtype) {
  Tensor t(dtype, Shape{count});
  engine.download(t.data(), buffer, t.bytes());
  const Tensor f = t.to(DType::f32);
  const auto v = f.values<float>();
  return {v.begin(), v.end()};
}

struct Outcome {
  DecodeResult result;
  std::vector<float> y;
};

Outcome run_encoder(DecodeEngine& engine, DecoderId id, const Tensor& x, int steps, DType dtype, DecodeMethod method) {
  const std::int64_t n = x.numel();
  DeviceBuffer input = upload_as(engine, x, dtype);
  DeviceBuffer output = poisoned(engine, static_cast<std::size_t>(n) * dtype_size(dtype));
  DecodeArgs args;
  args.batch = static_cast<int>(x.shape()[0]);
  args.steps = steps;
  args.input = input.data();
  args.output = output.data();
  Outcome out;
  out.result = engine.run(id, args, method).get();
  out.y = download_as(engine, output, n, dtype);
  return out;
}

struct Case {
  std::int64_t width, ff;
  int blocks, batch;
  std::uint32_t seed;
};

void expect_matches_cpu(const Case& c, DType dtype, double tolerance, int persistent_grid_max_sms = 0) {
  SCOPED_TRACE("width " + std::to_string(c.width) + " ff " + std::to_string(c.ff) + " batch " +
               std::to_string(c.batch) + " " + std::string(dtype_name(dtype)));
  const EncoderStackSpec spec = rounded(random_encoder(c.width, c.ff, c.blocks, c.seed), dtype);
  const Tensor x = rounded(random_tensor(Shape{c.batch, c.width}, c.seed + 100, -2.0f, 2.0f), dtype);
  DecodeEngine cpu("cpu"), cuda("cuda");
  const DecoderId cpu_id = cpu.add(spec);
  DecoderOptions cuda_options = options(dtype);
  cuda_options.persistent_grid_max_sms = persistent_grid_max_sms;
  const DecoderId cuda_id = cuda.add(spec, cuda_options);
  for (const int steps : {0, 1, c.blocks - 1}) {
    const int count = steps == 0 ? c.blocks : steps;
    const Outcome want = run_encoder(cpu, cpu_id, x, steps, DType::f32, DecodeMethod::automatic);
    for (const DecodeMethod method : kMethods) {
      SCOPED_TRACE(name_of(method) + " steps " + std::to_string(steps));
      const Outcome got = run_encoder(cuda, cuda_id, x, steps, dtype, method);
      EXPECT_EQ(got.result.steps_run, count);
      EXPECT_EQ(got.result.next_step, count);
      EXPECT_FALSE(got.result.paused);
      EXPECT_TRUE(all_close(floats(Shape{x.numel()}, got.y), doubles(want.y), tolerance, tolerance));
    }
  }
}

TEST_F(CudaEncoderDecoder, MatchesTheCpuInF32) {
  expect_matches_cpu({64, 128, 4, 3, 4000}, DType::f32, 1e-4);
  // Sizes off the 16-byte packets take the scalar paths.
  expect_matches_cpu({36, 50, 3, 5, 4010}, DType::f32, 1e-4);
  expect_matches_cpu({256, 1024, 3, 64, 4020}, DType::f32, 1e-4);
}

TEST_F(CudaEncoderDecoder, MatchesTheCpuInF16) {
  expect_matches_cpu({64, 128, 4, 3, 4100}, DType::f16, 2e-2);
  expect_matches_cpu({36, 50, 3, 5, 4110}, DType::f16, 2e-2);
}

TEST_F(CudaEncoderDecoder, GridCappedToFewSms) {
  // 3 blocks for 1024 W1 rows: each warp loops over many rows of every phase.
  expect_matches_cpu({256, 1024, 3, 64, 4030}, DType::f32, 1e-4, 3);
}

TEST_F(CudaEncoderDecoder, InPlaceEqualsOutOfPlace) {
  const Case c{48, 96, 3, 4, 4200};
  const EncoderStackSpec spec = random_encoder(c.width, c.ff, c.blocks, c.seed);
  const Tensor x = random_tensor(Shape{c.batch, c.width}, c.seed + 100, -2.0f, 2.0f);
  DecodeEngine cuda("cuda");
  const DecoderId id = cuda.add(spec);
  for (const DecodeMethod method : kMethods) {
    SCOPED_TRACE(name_of(method));
    const Outcome apart = run_encoder(cuda, id, x, 0, DType::f32, method);
    DeviceBuffer buffer = to_device(cuda, x);
    DecodeArgs args;
    args.batch = c.batch;
    args.input = buffer.data();
    args.output = buffer.data();
    EXPECT_EQ(cuda.run(id, args, method).get().steps_run, c.blocks);
    EXPECT_EQ(from_device<float>(cuda, buffer, static_cast<std::size_t>(x.numel())), apart.y);
  }
}

// With the flag requested before every call, each call runs one block and stops; resuming with
// output as input until the end gives the same bytes as one uninterrupted call.
void expect_pause_resume_identical(DType dtype) {
  SCOPED_TRACE(std::string(dtype_name(dtype)));
  const Case c{64, 160, 5, 6, 4300};
  const EncoderStackSpec spec = random_encoder(c.width, c.ff, c.blocks, c.seed);
  const Tensor x = random_tensor(Shape{c.batch, c.width}, c.seed + 100, -2.0f, 2.0f);
  const std::size_t bytes = static_cast<std::size_t>(x.numel()) * dtype_size(dtype);
  DecodeEngine cuda("cuda");
  const DecoderId id = cuda.add(spec, options(dtype));
  for (const DecodeMethod method : kMethods) {
    SCOPED_TRACE(name_of(method));
    DeviceBuffer input = upload_as(cuda, x, dtype);
    DeviceBuffer whole = poisoned(cuda, bytes);
    DecodeArgs args;
    args.batch = c.batch;
    args.input = input.data();
    args.output = whole.data();
    const DecodeResult uninterrupted = cuda.run(id, args, method).get();
    ASSERT_FALSE(uninterrupted.paused);
    ASSERT_EQ(uninterrupted.steps_run, c.blocks);

    DeviceBuffer state = poisoned(cuda, bytes);
    decode::PauseFlag flag = cuda.make_pause_flag();
    flag.request();
    DecodeArgs step = args;
    step.output = state.data();
    step.pause = &flag;
    int next = 0, calls = 0;
    for (;;) {
      step.start_step = next;
      const DecodeResult r = cuda.run(id, step, method).get();
      ++calls;
      ASSERT_EQ(r.next_step, next + r.steps_run);
      next = r.next_step;
      if (!r.paused) break;
      EXPECT_EQ(r.steps_run, 1) << "the flag is read after each block";
      step.input = state.data();  // resume from the saved x
      ASSERT_LT(calls, c.blocks + 1) << "the loop makes no progress";
    }
    EXPECT_EQ(next, c.blocks);
    EXPECT_EQ(calls, c.blocks) << "every block but the last pauses";
    std::vector<unsigned char> a(bytes), b(bytes);
    cuda.download(a.data(), whole, bytes);
    cuda.download(b.data(), state, bytes);
    EXPECT_TRUE(a == b) << "resumed output differs from the uninterrupted one";
  }
}

TEST_F(CudaEncoderDecoder, PauseAndResumeIsBitIdentical) {
  expect_pause_resume_identical(DType::f32);
  expect_pause_resume_identical(DType::f16);
}

TEST_F(CudaEncoderDecoder, InfoReportsOneBlockAsTheStepWeights) {
  DecodeEngine cuda("cuda");
  const decode::DecoderInfo info = cuda.info(cuda.add(random_encoder(32, 64, 3, 4400), options(DType::f16)));
  EXPECT_EQ(info.kind, "encoder");
  EXPECT_EQ(info.method, DecodeMethod::persistent);
  const std::uint64_t block = 2 * (3 * 32 + 2 * 32 * 64 + 64);
  EXPECT_EQ(info.recurrent_weight_bytes, block);
  EXPECT_EQ(info.weight_bytes, 3 * block);
}

}  // namespace
}  // namespace loom::decode_testing
