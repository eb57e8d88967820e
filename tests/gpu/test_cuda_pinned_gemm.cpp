// GEMMs compute the same bits however they are launched (cublas_gemm.hpp pins each problem's
// cuBLASLt algorithm): the same MatMul / Gemm / LSTM kernel run plainly on two streams and replayed
// from a captured graph on a third gives identical outputs, and those agree with the CPU backend.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <vector>

#include "gpu_op_harness.hpp"

namespace loom::gpu_testing {
namespace {

using CudaPinnedGemm = CudaOpTest;

enum class Launch { plain, captured };

// Runs `kernel` once on `stream` (plainly, or captured and replayed) and returns output 0.
Tensor run_once(backend::Backend& cuda, backend::OpKernel& kernel, const OpCase& op, backend::Stream& stream,
                Launch launch) {
  std::vector<std::unique_ptr<DeviceBuffer>> buffers;
  std::vector<const void*> inputs;
  for (const OpInput& in : op.inputs) {
    buffers.push_back(std::make_unique<DeviceBuffer>(cuda, in.value->bytes()));
    stream.copy_to_device(buffers.back()->get(), in.value->data(), in.value->bytes());
    inputs.push_back(buffers.back()->get());
  }
  std::vector<void*> outputs;
  std::vector<std::vector<std::uint8_t>> poison;
  for (const OpOutput& out : op.outputs) {
    const std::size_t bytes = static_cast<std::size_t>(out.shape.numel()) * dtype_size(out.dtype);
    buffers.push_back(std::make_unique<DeviceBuffer>(cuda, bytes));
    poison.emplace_back(bytes, std::uint8_t{0xFF});
    stream.copy_to_device(buffers.back()->get(), poison.back().data(), bytes);
    outputs.push_back(buffers.back()->get());
  }
  buffers.push_back(std::make_unique<DeviceBuffer>(cuda, std::max<std::size_t>(kernel.workspace_bytes(), 1)));
  void* workspace = buffers.back()->get();
  stream.synchronize();
  if (launch == Launch::plain) {
    kernel.run(inputs, outputs, workspace, stream);
  } else {
    stream.begin_capture();
    kernel.run(inputs, outputs, workspace, stream);
    std::unique_ptr<backend::Graph> graph = stream.end_capture();
    EXPECT_NE(graph, nullptr) << op.op_type << ": the capture failed";
    if (graph) graph->launch(stream);
  }
  Tensor out(op.outputs[0].dtype, op.outputs[0].shape);
  stream.copy_to_host(out.data(), outputs[0], out.bytes());
  stream.synchronize();
  return out;
}

void expect_same_bits_everywhere(backend::Backend& cpu, backend::Backend& cuda, const OpCase& op) {
  SCOPED_TRACE(op.op_type);
  const Node node = make_node(op.op_type, op.attrs, op.inputs.size(), op.outputs, &op.inputs);
  std::unique_ptr<backend::OpKernel> kernel = cuda.create_kernel(make_spec(node, op.inputs, op.outputs));
  auto first = cuda.create_stream(), second = cuda.create_stream(), third = cuda.create_stream();
  const Tensor plain = run_once(cuda, *kernel, op, *first, Launch::plain);
  const Tensor other_stream = run_once(cuda, *kernel, op, *second, Launch::plain);
  const Tensor replayed = run_once(cuda, *kernel, op, *third, Launch::captured);
  const Tensor again = run_once(cuda, *kernel, op, *first, Launch::plain);
  ASSERT_EQ(plain.bytes(), other_stream.bytes());
  EXPECT_EQ(std::memcmp(plain.data(), other_stream.data(), plain.bytes()), 0) << "another stream changed the bits";
  EXPECT_EQ(std::memcmp(plain.data(), replayed.data(), plain.bytes()), 0) << "graph replay changed the bits";
  EXPECT_EQ(std::memcmp(plain.data(), again.data(), plain.bytes()), 0) << "a second run changed the bits";
  EXPECT_TRUE(all_close(run_op(cpu, op)[0], plain, kF32Tolerance));
}

TEST_F(CudaPinnedGemm, MatMulIsBitIdenticalAcrossStreamsAndGraphReplay) {
  // Sizes that give cuBLAS a real choice (split-K candidates, several tile shapes).
  expect_same_bits_everywhere(
      *cpu_, *cuda_,
      {"MatMul", {}, {random_tensor({96, 1536}, 1), random_tensor({1536, 200}, 2)}, {{DType::f32, {96, 200}}}});
  // Batched, with B shared across the batch (batch stride 0).
  expect_same_bits_everywhere(
      *cpu_, *cuda_,
      {"MatMul", {}, {random_tensor({3, 17, 64}, 3), random_tensor({64, 33}, 4)}, {{DType::f32, {3, 17, 33}}}});
}

TEST_F(CudaPinnedGemm, GemmWithBiasIsBitIdenticalAcrossStreamsAndGraphReplay) {
  Attributes attrs;
  attrs.set("transB", std::int64_t{1});
  attrs.set("beta", 0.5f);
  expect_same_bits_everywhere(*cpu_, *cuda_,
                              {"Gemm",
                               std::move(attrs),
                               {random_tensor({40, 300}, 5), random_tensor({70, 300}, 6), random_tensor({70}, 7)},
                               {{DType::f32, {40, 70}}}});
}

}  // namespace
}  // namespace loom::gpu_testing
