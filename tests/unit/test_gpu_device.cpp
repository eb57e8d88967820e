// The GPU device model's inputs: blocks_per_sm() against the CUDA occupancy calculator worked by
// hand, the shipped descriptions in profiles/gpu/ and the reader's errors, and the kernels a
// compiled Step becomes (estimate_kernels).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "loom/error.hpp"
#include "loom/sim.hpp"
#include "sim/kernel_estimate.hpp"

using namespace loom;
using namespace loom::sim;

namespace {

const std::filesystem::path kSourceProfiles = std::filesystem::path(LOOM_SOURCE_DIR) / "profiles";
const std::vector<std::string> kShipped = {"a100-sxm", "h100-pcie", "h100-sxm", "h200", "l4"};

// Points LOOM_PROFILE_DIR at the source tree's profiles/ for its scope, then restores the old value.
class SourceProfileDir {
 public:
  SourceProfileDir() {
    if (const char* old = std::getenv("LOOM_PROFILE_DIR")) saved_ = old;
    setenv("LOOM_PROFILE_DIR", kSourceProfiles.c_str(), 1);
  }
  ~SourceProfileDir() {
    if (saved_)
      setenv("LOOM_PROFILE_DIR", saved_->c_str(), 1);
    else
      unsetenv("LOOM_PROFILE_DIR");
  }

 private:
  std::optional<std::string> saved_;
};

GpuDevice shipped(const std::string& name) {
  if (!std::filesystem::exists(kSourceProfiles / "gpu"))
    throw std::runtime_error("no profiles/gpu in " LOOM_SOURCE_DIR);
  return gpu_device((kSourceProfiles / "gpu" / (name + ".json")).string());
}

KernelSpec block(std::uint32_t threads, std::uint32_t registers, std::uint64_t shared = 0) {
  KernelSpec k;
  k.name = "k";
  k.blocks = 1;
  k.threads_per_block = threads;
  k.registers_per_thread = registers;
  k.shared_bytes_per_block = shared;
  return k;
}

// The parser's error for `text` names the field and says what is wrong.
void expect_error(const std::string& text, const std::string& field, const std::string& problem) {
  std::istringstream in(text);
  try {
    parse_gpu_device(in, "test.json");
    ADD_FAILURE() << "no error for " << text;
  } catch (const Error& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("test.json: " + field + ": "), std::string::npos) << message;
    EXPECT_NE(message.find(problem), std::string::npos) << message;
  }
}

const char* kMinimal = R"({"name": "toy", "source": "hand-made", "sm_count": 4, "shared_bytes_per_sm": 65536,
  "shared_bytes_per_block_max": 49152, "peak_flops_f32": 1e12, "dram_bytes_per_s": 1e11)";

}  // namespace

// H100 (compute capability 9.0): 64 warps, 32 blocks, 65536 registers in 4 sub-partitions of
// 16384, 233472 shared bytes (228 KB), 1024 reserved per block, allocated in 128-byte units.
TEST(GpuDeviceOccupancy, H100ByHand) {
  const GpuDevice h100 = shipped("h100-sxm");
  // 256 threads = 8 warps: 64 / 8 = 8 by warps; 32 regs x 32 = 1024 a warp, 16384 / 1024 = 16 per
  // sub-partition, 64 warps / 8 = 8 by registers; shared 0 + 1024 reserve -> 233472 / 1024 = 228.
  EXPECT_EQ(blocks_per_sm(h100, block(256, 32)), 8);
  // 1024 threads = 32 warps: 2 by warps; 64 x 32 = 2048 a warp, 16384 / 2048 = 8 per sub-partition,
  // 32 warps / 32 = 1 by registers.
  EXPECT_EQ(blocks_per_sm(h100, block(1024, 64)), 1);
  // 128 threads = 4 warps: 16 by warps; 128 x 32 = 4096 a warp, 4 per sub-partition, 16 / 4 = 4.
  EXPECT_EQ(blocks_per_sm(h100, block(128, 128)), 4);
  // 100 KB = 102400 + 1024 = 103424 (a multiple of 128): 233472 / 103424 = 2.26 -> 2.
  EXPECT_EQ(blocks_per_sm(h100, block(256, 32, 100 * 1024)), 2);
  // 1 warp: 64 by warps, 64 by registers, 228 by shared memory: the 32-block limit.
  EXPECT_EQ(blocks_per_sm(h100, block(32, 32)), 32);
  // 64 threads, 40 regs: 1280 a warp; 16384 / 1280 = 12 per sub-partition (not 65536 / 1280 = 51
  // over the whole SM): 48 warps / 2 = 24 blocks.
  EXPECT_EQ(blocks_per_sm(h100, block(64, 40)), 24);
  // 1 byte of shared memory takes the reserve and rounds up to 128 bytes: 1025 -> 1152, and
  // 233472 / 1152 = 202 by shared memory, so the warps' 8 decide.
  EXPECT_EQ(blocks_per_sm(h100, block(256, 32, 1)), 8);
  // 200 KB + 1 KB = 205824: one block.
  EXPECT_EQ(blocks_per_sm(h100, block(128, 32, 200 * 1024)), 1);
  // 0 registers: no register limit (64 / 8 = 8 by warps).
  EXPECT_EQ(blocks_per_sm(h100, block(256, 0)), 8);
}

TEST(GpuDeviceOccupancy, BlocksThatCannotRunGiveZero) {
  const GpuDevice h100 = shipped("h100-sxm");
  EXPECT_EQ(blocks_per_sm(h100, block(2048, 32)), 0);                 // over 1024 threads a block
  EXPECT_EQ(blocks_per_sm(h100, block(0, 32)), 0);                    // no threads
  EXPECT_EQ(blocks_per_sm(h100, block(256, 256)), 0);                 // over 255 registers a thread
  EXPECT_EQ(blocks_per_sm(h100, block(256, 32, 227 * 1024 + 1)), 0);  // over the 227 KB opt-in
  EXPECT_EQ(blocks_per_sm(h100, block(256, 32, 227 * 1024)), 1);      // 227 KB + 1 KB = 228 KB fits once
  // 1024 threads x 72 regs: 2304 a warp x 32 warps = 73728 > 65536 registers.
  EXPECT_EQ(blocks_per_sm(h100, block(1024, 72)), 0);
}

// L4 (compute capability 8.9): 1536 threads (48 warps), 24 blocks, 102400 shared bytes (100 KB).
TEST(GpuDeviceOccupancy, L4ByHand) {
  const GpuDevice l4 = shipped("l4");
  EXPECT_EQ(blocks_per_sm(l4, block(1024, 32)), 1);  // 48 / 32 warps
  EXPECT_EQ(blocks_per_sm(l4, block(512, 32)), 3);   // 48 / 16
  EXPECT_EQ(blocks_per_sm(l4, block(256, 32)), 6);   // 48 / 8; registers allow 64 / 8 = 8
  EXPECT_EQ(blocks_per_sm(l4, block(32, 16)), 24);   // the 24-block limit
  // 48 KB + 1 KB = 50176: 102400 / 50176 = 2.04 -> 2.
  EXPECT_EQ(blocks_per_sm(l4, block(128, 32, 48 * 1024)), 2);
  EXPECT_EQ(blocks_per_sm(l4, block(128, 32, 99 * 1024)), 1);
  EXPECT_EQ(blocks_per_sm(l4, block(128, 32, 99 * 1024 + 1)), 0);  // over the 99 KB opt-in
}

TEST(GpuDeviceFiles, ShippedDescriptionsParseAndMatchTheirFiles) {
  ASSERT_TRUE(std::filesystem::exists(kSourceProfiles / "gpu")) << "source tree not found in " << LOOM_SOURCE_DIR;
  std::set<std::string> files;
  for (const auto& entry : std::filesystem::directory_iterator(kSourceProfiles / "gpu"))
    if (entry.path().extension() == ".json") files.insert(entry.path().stem().string());
  EXPECT_EQ(files, std::set<std::string>(kShipped.begin(), kShipped.end()));

  const SourceProfileDir env;
  const std::vector<std::string> names = gpu_device_names();
  EXPECT_TRUE(std::is_sorted(names.begin(), names.end()));
  for (const std::string& name : kShipped) {
    SCOPED_TRACE(name);
    EXPECT_NE(std::find(names.begin(), names.end(), name), names.end());
    const GpuDevice device = gpu_device(name);  // by name: the file's name field must agree
    EXPECT_EQ(device.name, name);
    EXPECT_FALSE(device.source.empty());
    EXPECT_GT(device.peak_flops_f16, device.peak_flops_f32);
    EXPECT_EQ(device.registers_per_sm, 65536);
    EXPECT_EQ(device.shared_bytes_reserved_per_block, 1024u);
    EXPECT_EQ(device.shared_bytes_per_block_max + 1024, device.shared_bytes_per_sm);
    // The default kernel's block (256 threads, 32 registers) runs everywhere.
    EXPECT_GE(blocks_per_sm(device, block(256, 32)), 6);
  }
}

// The published figures the brief fixes, and the per-SM limits of each compute capability.
TEST(GpuDeviceFiles, ShippedFigures) {
  const SourceProfileDir env;
  struct Want {
    const char* name;
    int sms;
    double dram;
    int threads, blocks;
    std::uint64_t shared_kb;
  };
  for (const Want& w : {Want{"h100-sxm", 132, 3.35e12, 2048, 32, 228}, Want{"h100-pcie", 114, 2.0e12, 2048, 32, 228},
                        Want{"h200", 132, 4.8e12, 2048, 32, 228}, Want{"a100-sxm", 108, 2.039e12, 2048, 32, 164},
                        Want{"l4", 58, 300e9, 1536, 24, 100}}) {
    SCOPED_TRACE(w.name);
    const GpuDevice d = gpu_device(w.name);
    EXPECT_EQ(d.sm_count, w.sms);
    EXPECT_DOUBLE_EQ(d.dram_bytes_per_s, w.dram);
    EXPECT_EQ(d.max_threads_per_sm, w.threads);
    EXPECT_EQ(d.max_blocks_per_sm, w.blocks);
    EXPECT_EQ(d.shared_bytes_per_sm, w.shared_kb * 1024);
  }
  EXPECT_DOUBLE_EQ(gpu_device("h100-sxm").peak_flops_f32, 66.9e12);
  EXPECT_DOUBLE_EQ(gpu_device("h100-sxm").peak_flops_f16, 989.4e12);
  EXPECT_DOUBLE_EQ(gpu_device("a100-sxm").peak_flops_f16, 312e12);
}

TEST(GpuDeviceFiles, UnknownNameListsTheKnownOnes) {
  const SourceProfileDir env;
  try {
    gpu_device("h300");
    ADD_FAILURE() << "no error for an unknown GPU";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::invalid_argument);
    const std::string message = e.what();
    EXPECT_NE(message.find("unknown GPU 'h300'"), std::string::npos) << message;
    for (const std::string& name : kShipped) EXPECT_NE(message.find(name), std::string::npos) << message;
  }
  EXPECT_THROW(gpu_device("no/such/file.json"), Error);
}

TEST(GpuDeviceFiles, MinimalDescriptionTakesTheDefaults) {
  std::istringstream in(std::string(kMinimal) + "}");
  const GpuDevice d = parse_gpu_device(in, "toy.json");
  const GpuDevice defaults;
  EXPECT_EQ(d.name, "toy");
  EXPECT_EQ(d.sm_count, 4);
  EXPECT_EQ(d.shared_bytes_per_sm, 65536u);
  EXPECT_EQ(d.max_threads_per_sm, defaults.max_threads_per_sm);
  EXPECT_EQ(d.shared_bytes_reserved_per_block, defaults.shared_bytes_reserved_per_block);
  EXPECT_DOUBLE_EQ(d.peak_flops_f16, 0);
  EXPECT_DOUBLE_EQ(d.launch_us, defaults.launch_us);
  EXPECT_DOUBLE_EQ(d.sm_bandwidth_share, defaults.sm_bandwidth_share);
}

TEST(GpuDeviceFiles, BadDescriptionsNameTheField) {
  const std::string minimal = kMinimal;
  expect_error(minimal + R"(, "l3_bytes": 1})", "l3_bytes", "unknown field");
  expect_error(minimal + R"(, "launch_us": -2.5})", "launch_us", "-2.5 is not positive");
  expect_error(minimal + R"(, "launch_us": 0})", "launch_us", "0 is not positive");
  expect_error(minimal + R"(, "max_blocks_per_sm": -1})", "max_blocks_per_sm", "out of range");
  expect_error(minimal + R"(, "warp_size": 32.5})", "warp_size", "expected a whole number");
  expect_error(minimal + R"(, "warp_size": "32"})", "warp_size", "expected a whole number, got string");
  expect_error(minimal + R"(, "peak_flops_f16": true})", "peak_flops_f16", "expected a positive number");
  expect_error(minimal + R"(, "max_threads_per_block": 4096})", "max_threads_per_block", "exceeds max_threads_per_sm");
  expect_error(R"({"name": "toy", "source": "s", "shared_bytes_per_sm": 1, "shared_bytes_per_block_max": 1,
                  "peak_flops_f32": 1, "dram_bytes_per_s": 1})",
               "sm_count", "missing");
  expect_error(R"({"name": "toy", "source": "s", "sm_count": 1, "shared_bytes_per_sm": 65536,
                  "shared_bytes_per_block_max": 65536, "peak_flops_f32": 1, "dram_bytes_per_s": 1})",
               "shared_bytes_per_block_max", "exceeds shared_bytes_per_sm");
  expect_error(R"({"name": "", "source": "s"})", "name", "empty string");
  expect_error("[1, 2]", "(top level)", "expected an object");
  std::istringstream broken("{\"name\": ");
  EXPECT_THROW(parse_gpu_device(broken, "test.json"), Error);
  // 1e400 is not a finite double: nlohmann-json refuses it while parsing, reported as our Error.
  std::istringstream huge(minimal + R"(, "launch_us": 1e400})");
  EXPECT_THROW(parse_gpu_device(huge, "test.json"), Error);
}

// --- estimate_kernels ---

namespace {

double total_flops(const std::vector<KernelSpec>& kernels) {
  double sum = 0;
  for (const KernelSpec& k : kernels) sum += k.flops;
  return sum;
}

std::uint64_t total_bytes(const std::vector<KernelSpec>& kernels) {
  std::uint64_t sum = 0;
  for (const KernelSpec& k : kernels) sum += k.bytes;
  return sum;
}

std::uint64_t step_bytes(const StepWork& step) {
  return step.weight_bytes + step.activation_bytes_read + step.bytes_written;
}

// Y[M, N] = X[M, K] · W[K, N] (+ bias, Relu): f16 weights and activations.
StepWork linear_step(std::uint64_t m, std::uint64_t k, std::uint64_t n, bool bias_relu) {
  StepWork s;
  s.name = "fc";
  s.ops = {"MatMul"};
  s.flops = 2.0 * static_cast<double>(m * n * k);
  s.weight_bytes = k * n * 2;
  s.activation_bytes_read = m * k * 2;
  s.bytes_written = m * n * 2;
  if (bias_relu) {  // Add reads Y and the bias (a weight), Relu reads Y; both write [M, N] and do 1 FLOP each
    s.ops = {"MatMul", "Reshape", "Add", "Relu"};
    s.flops += 2.0 * static_cast<double>(m * n);
    s.weight_bytes += n * 2;
    s.activation_bytes_read += 2 * m * n * 2;
    s.bytes_written += 2 * m * n * 2;
  }
  return s;
}

}  // namespace

// 512 x 1024 · 1024 x 2048: a 4 x 16 grid of 128 x 128 tiles on the tensor cores.
TEST(KernelEstimate, MatMulIsAGemmShapedGrid) {
  const StepWork step = linear_step(512, 1024, 2048, false);
  const auto kernels = estimate_kernels(step, true);
  ASSERT_EQ(kernels.size(), 1u);
  EXPECT_EQ(kernels[0].name, "fc/MatMul");
  EXPECT_EQ(kernels[0].blocks, 4u * 16u);
  EXPECT_EQ(kernels[0].threads_per_block, 256u);
  EXPECT_TRUE(kernels[0].f16);
  EXPECT_FALSE(kernels[0].cooperative);
  EXPECT_DOUBLE_EQ(kernels[0].flops, step.flops);
  EXPECT_EQ(kernels[0].bytes, step_bytes(step));
  // f32 runs on the FP32 cores (cuBLAS's CUBLAS_COMPUTE_32F): no tensor-core flag.
  EXPECT_FALSE(estimate_kernels(step, false)[0].f16);
}

// sim_model() estimates a loaded model's kernels in its compute dtype (ModelInfo::compute_dtype).
TEST(KernelEstimate, SimModelUsesTheModelsComputeDtype) {
  ModelInfo info;
  info.name = "m";
  StepInfo step;
  static_cast<StepWork&>(step) = linear_step(512, 1024, 2048, false);
  info.steps = {step};
  info.compute_dtype = DType::f16;
  EXPECT_TRUE(sim_model(info).steps[0].kernels.at(0).f16);
  info.compute_dtype = DType::f32;
  EXPECT_FALSE(sim_model(info).steps[0].kernels.at(0).f16);
}

// The bias Add and the Relu: one grid-stride kernel each over the 512 x 2048 output (4096 blocks of
// 256); the view launches nothing; the GEMM keeps its shape although the bias joins the weights.
TEST(KernelEstimate, PointwiseOpsAfterAGemmAreGridStrideKernels) {
  const StepWork step = linear_step(512, 1024, 2048, true);
  const auto kernels = estimate_kernels(step, true);
  ASSERT_EQ(kernels.size(), 3u);
  EXPECT_EQ(kernels[0].blocks, 64u);
  EXPECT_DOUBLE_EQ(kernels[0].flops, 2.0 * 512 * 2048 * 1024);
  for (std::size_t i : {1u, 2u}) {
    EXPECT_EQ(kernels[i].blocks, 512u * 2048u / 256u);
    EXPECT_EQ(kernels[i].threads_per_block, 256u);
    EXPECT_FALSE(kernels[i].f16);
    EXPECT_DOUBLE_EQ(kernels[i].flops, 512.0 * 2048);
    EXPECT_EQ(kernels[i].bytes, 2u * 512u * 2048u * 2u);  // one tensor read, one written
  }
  EXPECT_EQ(kernels[1].name, "fc/Add");
  EXPECT_DOUBLE_EQ(total_flops(kernels), step.flops);
  EXPECT_EQ(total_bytes(kernels), step_bytes(step));
}

// A Relu over 10^6 f32 elements: grid_for(n) = ceil(n / 256); over 2^30 the grid stops at 2^20
// blocks (the grid-stride loop covers the rest).
TEST(KernelEstimate, ElementwiseStepsUseTheGridStrideGrid) {
  StepWork step;
  step.name = "act";
  step.ops = {"Relu"};
  step.flops = 1e6;
  step.activation_bytes_read = 4'000'000;
  step.bytes_written = 4'000'000;
  auto kernels = estimate_kernels(step, false);
  ASSERT_EQ(kernels.size(), 1u);
  EXPECT_EQ(kernels[0].blocks, 3907u);
  EXPECT_EQ(kernels[0].threads_per_block, 256u);
  EXPECT_EQ(kernels[0].shared_bytes_per_block, 0u);
  EXPECT_EQ(kernels[0].bytes, 8'000'000u);

  step.activation_bytes_read = step.bytes_written = (std::uint64_t{1} << 30) * 4;
  EXPECT_EQ(estimate_kernels(step, false)[0].blocks, 1u << 20);
}

// Row kernels: a block per row, 256 threads for rows over 256 elements, else 64.
TEST(KernelEstimate, RowKernelsGiveABlockPerRow) {
  StepWork reduce;  // ReduceMean of [4096, 1000] f32 over its last axis
  reduce.name = "mean";
  reduce.ops = {"ReduceMean"};
  reduce.flops = 4096.0 * 1000;
  reduce.activation_bytes_read = 4096 * 1000 * 4;
  reduce.bytes_written = 4096 * 4;
  auto kernels = estimate_kernels(reduce, false);
  ASSERT_EQ(kernels.size(), 1u);
  EXPECT_EQ(kernels[0].blocks, 4096u);
  EXPECT_EQ(kernels[0].threads_per_block, 256u);
  EXPECT_EQ(kernels[0].shared_bytes_per_block, 128u);  // block_sum's 32-float scratch

  StepWork pool = reduce;  // GlobalAveragePool of [1, 512, 7, 7]: 512 rows of 49
  pool.ops = {"GlobalAveragePool"};
  pool.activation_bytes_read = 512 * 49 * 4;
  pool.bytes_written = 512 * 4;
  kernels = estimate_kernels(pool, false);
  EXPECT_EQ(kernels[0].blocks, 512u);
  EXPECT_EQ(kernels[0].threads_per_block, 64u);

  StepWork norm;  // LayerNormalization of [128, 768] f16: cols from its scale and bias
  norm.name = "ln";
  norm.ops = {"LayerNormalization"};
  norm.flops = 8.0 * 128 * 768;
  norm.weight_bytes = 2 * 768 * 2;
  norm.activation_bytes_read = 128 * 768 * 2;
  norm.bytes_written = 128 * 768 * 2;
  kernels = estimate_kernels(norm, true);
  EXPECT_EQ(kernels[0].blocks, 128u);
  EXPECT_EQ(kernels[0].threads_per_block, 256u);
  EXPECT_FALSE(kernels[0].f16);
  EXPECT_EQ(total_bytes(kernels), step_bytes(norm));
}

// LSTM with H = I, its tensors of `element` bytes. X·Wᵀ is [T·B, 4·H]; the cooperative loop gets the rest of the FLOPs
// and the backend's grid plan for the reference GPU (58 SMs, 99 KB a block), one block per SM.
StepWork lstm_step(double hidden, double rows, double element = 4) {
  StepWork step;
  step.name = "lstm0";
  step.ops = {"LSTM", "Squeeze"};
  step.flops = rows * (2.0 * 4 * hidden * (2 * hidden) + 10 * hidden);
  step.weight_bytes = static_cast<std::uint64_t>(element * (4 * hidden * hidden * 2 + 8 * hidden));
  step.activation_bytes_read = static_cast<std::uint64_t>(rows * hidden * element);
  step.bytes_written = static_cast<std::uint64_t>((rows + 2) * hidden * element);  // Y, Y_h, Y_c
  return step;
}

// H = I = 256, T·B = 100: about 2 FLOPs per weight element and row give T·B ~ 100, X's 100·256
// elements I = 256, the weights 4·256·(256 + 256) + 8·256 elements H = 256, and the FLOPs
// 100·(2·1024·512 + 10·256) then T·B = 100 exactly. X·Wᵀ [100, 1024]: 1 x 8 tiles, 2·100·1024·256
// FLOPs. The loop: ceil(256 / 58) = 5 units a block -> ceil(256 / 5) = 52 blocks, R's rows on chip.
TEST(KernelEstimate, RecurrentStepIsAGemmThenTheCooperativeLoop) {
  const StepWork step = lstm_step(256, 100);
  const auto kernels = estimate_kernels(step, false);
  ASSERT_EQ(kernels.size(), 2u);
  EXPECT_EQ(kernels[0].name, "lstm0/LSTM.x_proj");
  EXPECT_EQ(kernels[0].blocks, 8u);
  EXPECT_FALSE(kernels[0].cooperative);
  EXPECT_DOUBLE_EQ(kernels[0].flops, 2.0 * 100 * 1024 * 256);
  EXPECT_EQ(kernels[1].name, "lstm0/LSTM.loop");
  EXPECT_TRUE(kernels[1].cooperative);
  EXPECT_EQ(kernels[1].blocks, 52u);
  EXPECT_EQ(kernels[1].threads_per_block, 256u);
  EXPECT_EQ(kernels[1].registers_per_thread, 64u);
  EXPECT_GT(kernels[1].shared_bytes_per_block, 5u * 4u * 256u * 4u);  // 5 units' rows of R
  EXPECT_DOUBLE_EQ(total_flops(kernels), step.flops);
  EXPECT_EQ(total_bytes(kernels), step_bytes(step));
}

// Every loop grid is co-resident on every shipped GPU (the GPU model refuses a cooperative grid
// that is not): H = 1024 needs ceil(1024 / 58) = 18 units a block, whose rows of R (288 KB) do not
// fit on chip; the loop reads them through L2 with ceil(1024 / 18) = 57 blocks.
TEST(KernelEstimate, RecurrentLoopGridIsCoResidentOnEveryShippedGpu) {
  const SourceProfileDir env;
  for (double hidden : {16.0, 256.0, 1024.0, 2048.0}) {
    for (bool f16 : {false, true}) {
      SCOPED_TRACE("H = " + std::to_string(hidden) + (f16 ? " f16" : " f32"));
      const auto kernels = estimate_kernels(lstm_step(hidden, 64, f16 ? 2 : 4), f16);
      ASSERT_EQ(kernels.size(), 2u);
      const KernelSpec& loop = kernels[1];
      EXPECT_TRUE(loop.cooperative);
      EXPECT_LE(loop.blocks, static_cast<std::uint32_t>(std::min(hidden, 58.0)));
      for (const std::string& name : kShipped) {
        const GpuDevice device = gpu_device(name);
        EXPECT_GE(static_cast<std::uint32_t>(blocks_per_sm(device, loop) * device.sm_count), loop.blocks) << name;
      }
    }
  }
  EXPECT_EQ(estimate_kernels(lstm_step(1024, 64), false)[1].blocks, 57u);
}

// Gemm initialises Y with C before the GEMM accumulates onto it; BatchNormalization folds its
// parameters first. Whatever the ops, the kernels' work adds up to the Step's.
TEST(KernelEstimate, ExtraLaunchesAndTotalsAddUp) {
  // 64 x 512 · 512 x 1000 + C[1000]: K = 512, N = (512 x 1000 + 1000) / 513 = 1000: 1 x 8 tiles.
  StepWork gemm = linear_step(64, 512, 1000, false);
  gemm.ops = {"Gemm"};
  gemm.weight_bytes += 1000 * 2;
  auto kernels = estimate_kernels(gemm, true);
  ASSERT_EQ(kernels.size(), 2u);
  EXPECT_EQ(kernels[0].name, "fc/Gemm.c_copy");
  EXPECT_EQ(kernels[1].name, "fc/Gemm");
  EXPECT_EQ(kernels[1].blocks, 1u * 8u);
  EXPECT_EQ(total_bytes(kernels), step_bytes(gemm));

  StepWork conv;  // Conv 3x3, 64 -> 64 channels, 56 x 56, then BatchNormalization and Relu, f16
  conv.name = "conv";
  conv.ops = {"Conv", "BatchNormalization", "Relu"};
  const double outputs = 64.0 * 56 * 56;
  conv.flops = 2 * outputs * 64 * 9 + 2 * outputs + outputs;
  conv.weight_bytes = (64 * 64 * 9 + 4 * 64) * 2;
  conv.activation_bytes_read = 3 * 64 * 56 * 56 * 2;
  conv.bytes_written = 3 * 64 * 56 * 56 * 2;
  kernels = estimate_kernels(conv, true);
  ASSERT_EQ(kernels.size(), 4u);
  EXPECT_EQ(kernels[0].name, "conv/Conv");
  EXPECT_EQ(kernels[0].blocks, 25u * 1u);  // M = 3136 output pixels, N = 64 channels
  EXPECT_EQ(kernels[1].name, "conv/BatchNormalization.fold");
  EXPECT_EQ(kernels[2].name, "conv/BatchNormalization");
  EXPECT_EQ(kernels[2].blocks, 784u);
  EXPECT_DOUBLE_EQ(total_flops(kernels), conv.flops);
  EXPECT_EQ(total_bytes(kernels), step_bytes(conv));

  StepWork views;  // nothing to launch
  views.ops = {"Reshape", "Flatten"};
  EXPECT_TRUE(estimate_kernels(views, false).empty());
}
