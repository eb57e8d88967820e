// What the CUDA decoder tests share on top of unit/decode_test_support.hpp: the methods each test
// runs, the fixture that skips without a device, decoder options, dtype rounding (so the CPU's f32
// reference sees the values the device stores) and seeded greedy specs.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "loom/decode.hpp"
#include "loom/executor.hpp"
#include "unit/decode_test_support.hpp"

namespace loom::decode_testing {

using decode::DecodeArgs;
using decode::DecodeMethod;
using decode::DecodeResult;
using decode::DecoderId;
using decode::DecoderOptions;
using decode::DeviceBuffer;

// Every method the CUDA decoders offer, in the order they report them.
inline constexpr DecodeMethod kMethods[] = {DecodeMethod::persistent, DecodeMethod::graph, DecodeMethod::host_loop};

inline std::string name_of(DecodeMethod method) { return std::string(decode::method_name(method)); }

// The base of every CUDA decoder suite: each test is skipped on a machine without a device.
class CudaDecoderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device: the CUDA decoders are not exercised here";
  }
};

inline DecoderOptions options(DType dtype) {
  DecoderOptions o;
  o.dtype = dtype;
  return o;
}

// The values rounded to `dtype` and back to f32.
inline Tensor rounded(const Tensor& t, DType dtype) { return dtype == DType::f32 ? t : t.to(dtype).to(DType::f32); }

// Every float tensor of the cells rounded (an absent bias stays absent).
inline CellStack rounded(CellStack cells, DType dtype) {
  if (dtype == DType::f32) return cells;
  for (CellLayer& layer : cells.layers) {
    layer.w = layer.w.to(dtype).to(DType::f32);
    layer.r = layer.r.to(dtype).to(DType::f32);
    if (layer.b.bytes()) layer.b = layer.b.to(dtype).to(DType::f32);
  }
  return cells;
}

// Every tensor of every block rounded.
inline decode::EncoderStackSpec rounded(decode::EncoderStackSpec spec, DType dtype) {
  for (decode::EncoderBlock& block : spec.blocks) {
    for (Tensor* t : {&block.norm_scale, &block.norm_bias, &block.w1, &block.b1, &block.w2, &block.b2})
      *t = rounded(*t, dtype);
  }
  return spec;
}

// Seeded cells, embedding, projection and bias; no end token.
inline decode::GreedySpec random_greedy(CellType type, bool lbr, int layers, std::int64_t vocab, std::int64_t input,
                                        std::int64_t hidden, std::uint32_t seed, float scale) {
  decode::GreedySpec spec;
  spec.cells = random_cells(type, input, hidden, layers, seed, lbr, true, scale);
  spec.embedding = testing::random_tensor(Shape{vocab, input}, seed + 50, -1.0f, 1.0f);
  spec.projection = testing::random_tensor(Shape{vocab, hidden}, seed + 51, -1.0f, 1.0f);
  spec.projection_bias = testing::random_tensor(Shape{vocab}, seed + 52, -0.3f, 0.3f);
  spec.end_token = -1;
  return spec;
}

}  // namespace loom::decode_testing
