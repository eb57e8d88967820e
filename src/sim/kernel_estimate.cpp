// The kernels a compiled Step becomes on a GPU (kernel_estimate.hpp): each op's launch shape as
// the CUDA backend makes it, and the Step's FLOPs and bytes shared among those launches.
#include "sim/kernel_estimate.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>

#include "backend/recurrent_loop_plan.hpp"
#include "graph/ops.hpp"
#include "loom/error.hpp"

namespace loom::sim {
namespace {

namespace loop_plan = backend::recurrent_loop;

// kernels/common.cuh: the block size of every grid-stride and row kernel, and the cap grid_for()
// and row_grid() put on a grid (the loops cover the rest).
constexpr std::uint32_t kBlockThreads = 256;
constexpr std::uint64_t kMaxGridBlocks = std::uint64_t{1} << 20;
// Row kernels (softmax, layernorm, reductions, argmax, topk, global pooling) give rows of at most
// 256 elements 64 threads, since most of a 256-thread block would idle.
constexpr std::uint64_t kShortRow = 256;
constexpr std::uint32_t kShortRowThreads = 64;
// The row length where the Step cannot tell it (Softmax's axis; LayerNormalization without
// weights): an estimate.
constexpr std::uint64_t kAssumedRowLength = 1024;

// cuBLASLt and cuDNN pick their own kernels; the estimate is a tiled GEMM with a 128 x 128 output
// tile per block of 256 threads and 128 registers a thread. f16 (tensor cores): a 32-deep k-slice
// of A and B in 4 stages, 4 x (128 x 32 + 32 x 128) x 2 bytes = 64 KB of shared memory; f32 (FP32
// cores, CUBLAS_COMPUTE_32F): a 16-deep slice in 2 stages, 2 x (128 x 16 + 16 x 128) x 4 = 32 KB.
constexpr std::uint64_t kGemmTile = 128;
constexpr std::uint32_t kGemmThreads = 256;
constexpr std::uint32_t kGemmRegisters = 128;
constexpr std::uint64_t kGemmSharedF16 = 64 * 1024;
constexpr std::uint64_t kGemmSharedF32 = 32 * 1024;

// The persistent recurrent loop (kernels/decode_recurrent.cu): 256 threads a block; registers as
// ptxas reports them for its 16-byte-load variants (f32: 4 elements, f16: 8: 64 and 80), which it
// runs when the hidden size is a multiple of the vector, and for its scalar ones (up to 120).
constexpr std::uint32_t kLoopThreads = 256;
// Its grid depends on the GPU (one block per SM: backend::recurrent_loop::plan_persistent). The
// estimate plans it for a reference GPU, the smallest shipped one (L4: 58 SMs, 99 KB of shared
// memory a block), so that the cooperative grid is co-resident on every shipped GPU; on a larger
// one the real loop spreads the same work over more SMs.
constexpr int kReferenceSms = 58;
constexpr std::size_t kReferenceSharedBytes = 99 * 1024;

// How an op launches on the CUDA backend. Registers per thread are what ptxas -v reports for the
// kernel (CUDA 13.0, sm_90, -O3; the most over its dtype variants, rounded up to a multiple of 8
// where they differ); static shared memory is the 32-float scratch of block_sum()/block_max()
// (TopK and ArgMax keep 32 values and 32 indices).
enum class Launch {
  none,         // a view: the memory plan aliases its output to its input, nothing runs
  grid_stride,  // grid_for(n) blocks of 256 threads over the n output elements
  rows,         // one block per row: row_grid(rows) blocks of 64 or 256 threads
  gemm,         // cuBLASLt (MatMul, Gemm) or cuDNN (Conv, ConvTranspose): the GEMM estimate
  recurrent,    // LSTM, GRU: X·Wᵀ on cuBLAS, then the persistent loop over every time step
};
// Where a row kernel's row length comes from.
enum class RowLength {
  input_per_output,  // reductions: each output element reduces input / output elements
  assumed,           // Softmax: kAssumedRowLength
  weights,           // LayerNormalization: its scale and bias, 2 x cols elements
};

// A grid-stride kernel an op launches besides its main one, over the op's output.
struct SideKernel {
  const char* part = "";  // named "<step>/<op>.<part>"
  std::uint32_t registers = 32;
  // One thread per channel (BatchNormalization's fold): the Step does not say how many channels;
  // one block, its few bytes left in the op's.
  bool per_channel = false;
};

struct OpLaunch {
  Launch launch = Launch::grid_stride;
  std::uint32_t registers = 32;
  std::uint64_t shared_bytes = 0;
  // Each output element: a value in the compute dtype (or a bool), plus index_bytes of an i64 index.
  std::uint64_t index_bytes = 0;
  bool boolean_output = false;
  RowLength row_length = RowLength::input_per_output;
  // Before the main kernel: Gemm's copy of C into Y, which the GEMM then accumulates onto, or
  // BatchNormalization's fold of its parameters; after it: ConvTranspose's crop (and bias).
  std::optional<SideKernel> before{}, after{};
};

bool is_view(const std::string& op) {
  if (!graph::is_supported_op(op)) return false;
  Node node;
  node.op_type = op;
  return graph::op_role(node) == graph::OpRole::view;
}

OpLaunch launch_of(const std::string& op) {
  constexpr std::uint64_t kScratch = 32 * sizeof(float);
  constexpr std::uint64_t kValueAndIndexScratch = 32 * (sizeof(float) + sizeof(std::int64_t));
  OpLaunch l;
  if (is_view(op)) {
    l.launch = Launch::none;
  } else if (op == "MatMul" || op == "Conv") {
    l.launch = Launch::gemm;
  } else if (op == "Gemm") {
    l.launch = Launch::gemm;
    l.before = SideKernel{"c_copy"};
  } else if (op == "ConvTranspose") {
    l.launch = Launch::gemm;
    l.after = SideKernel{"crop", 40};
  } else if (op == "LSTM" || op == "GRU") {
    l.launch = Launch::recurrent;
  } else if (op == "Softmax" || op == "LogSoftmax") {
    l = {Launch::rows, 24, kScratch};
    l.row_length = RowLength::assumed;
  } else if (op == "LayerNormalization") {
    l = {Launch::rows, 32, kScratch};
    l.row_length = RowLength::weights;
  } else if (op.rfind("Reduce", 0) == 0 || op == "GlobalAveragePool" || op == "GlobalMaxPool") {
    // Reductions over the trailing axes, the common case; others run reduce_outputs_kernel, a
    // grid-stride kernel over the outputs.
    l = {Launch::rows, 24, kScratch};
  } else if (op == "ArgMax" || op == "ArgMin") {
    l = {Launch::rows, 24, kValueAndIndexScratch};
    l.index_bytes = sizeof(std::int64_t);
  } else if (op == "TopK") {
    l = {Launch::rows, 32, kValueAndIndexScratch};
    l.index_bytes = sizeof(std::int64_t);  // values in the dtype and their i64 indices
  } else if (op == "MaxPool" || op == "AveragePool") {
    l.registers = 72;
  } else if (op == "BatchNormalization") {
    l.before = SideKernel{"fold", 32, true};
  } else if (op == "Pad") {
    l.registers = 40;
  } else if (op == "Equal" || op == "Less" || op == "Greater" || op == "LessOrEqual" || op == "GreaterOrEqual" ||
             op == "And" || op == "Or" || op == "Xor" || op == "Not") {
    l.boolean_output = true;
  }
  // Everything else Loom runs (activations, arithmetic, Where, Clip, Cast, Transpose, Concat,
  // Split, Slice, Expand, Tile, Gather, Resize, Range, ConstantOfShape, Dropout and the device
  // copies of Constant and Shape) is one grid-stride kernel of 256 threads over its output; ptxas
  // gives these kernels 13 to 32 registers (the broadcast Pow variants up to 39): 32. Concat and
  // Split launch one copy per input or output, which the Step does not count: one here.
  return l;
}

std::uint64_t ceil_div(std::uint64_t a, std::uint64_t b) { return (a + b - 1) / b; }

std::uint32_t grid_blocks(std::uint64_t blocks, std::uint64_t cap) {
  return static_cast<std::uint32_t>(std::clamp<std::uint64_t>(blocks, 1, cap));
}

// grid_for(n) of kernels/common.cuh.
std::uint32_t grid_for(std::uint64_t elements) {
  return grid_blocks(ceil_div(elements, kBlockThreads), kMaxGridBlocks);
}

std::uint64_t rounded(double value) { return value > 0 ? static_cast<std::uint64_t>(std::llround(value)) : 0; }

KernelSpec grid_stride_kernel(std::string name, std::uint64_t elements, std::uint32_t registers) {
  KernelSpec k;
  k.name = std::move(name);
  k.blocks = grid_for(elements);
  k.threads_per_block = kBlockThreads;
  k.registers_per_thread = registers;
  return k;
}

// An M x N output tiled 128 x 128 (the estimate above).
KernelSpec gemm_kernel(std::string name, std::uint64_t m, std::uint64_t n, bool f16) {
  KernelSpec k;
  k.name = std::move(name);
  k.blocks = grid_blocks(ceil_div(m, kGemmTile) * ceil_div(n, kGemmTile), std::numeric_limits<std::uint32_t>::max());
  k.threads_per_block = kGemmThreads;
  k.registers_per_thread = kGemmRegisters;
  k.shared_bytes_per_block = f16 ? kGemmSharedF16 : kGemmSharedF32;
  k.f16 = f16;
  return k;
}

// What one op of the Step does, as inferred from the Step's totals.
struct OpWork {
  std::string op;
  OpLaunch how;
  double flops = 0;
  std::uint64_t reads = 0, writes = 0;  // bytes; reads include the weights (all the first op's)
  std::uint64_t input_elements = 0;     // its activation input (the first op's; the others read one tensor)
  std::uint64_t output_elements = 0;
};

// The GEMM's shape from its output (M x N elements), FLOPs (2 M N K) and weights (K x N, or N x K
// for Conv's [C_out, C_in/group x kernel], perhaps with a bias of N): K = FLOPs / 2MN; N = weights
// / K, or weights / (K + 1) with a bias, whichever divides both exactly; else the latter rounded
// (other small per-channel weights, e.g. a BatchNormalization's, then count roughly); M = output /
// N. Without weights of at least K elements (activation x activation, as in attention) the output
// is taken as square.
void infer_gemm(const OpWork& work, std::uint64_t weight_bytes, std::uint64_t element_bytes, std::uint64_t& m,
                std::uint64_t& n) {
  const std::uint64_t outputs = std::max<std::uint64_t>(work.output_elements, 1);
  const std::uint64_t k = std::max<std::uint64_t>(rounded(work.flops / (2.0 * static_cast<double>(outputs))), 1);
  const std::uint64_t weights = weight_bytes / element_bytes;
  const auto exact = [&](std::uint64_t per_column) {
    return weights % per_column == 0 && weights / per_column > 0 && outputs % (weights / per_column) == 0;
  };
  if (weights < k)  // none, or too few to be a K x N operand (a scalar scale after the GEMM)
    n = rounded(std::sqrt(static_cast<double>(outputs)));
  else if (exact(k))
    n = weights / k;
  else if (exact(k + 1))
    n = weights / (k + 1);
  else
    n = rounded(static_cast<double>(weights) / static_cast<double>(k + 1));
  n = std::clamp<std::uint64_t>(n, 1, outputs);
  m = std::max<std::uint64_t>(rounded(static_cast<double>(outputs) / static_cast<double>(n)), 1);
}

// LSTM (4 gates) and GRU (3) on the device loop, one direction. Its weights W [G·H, I], R [G·H, H]
// and B [2·G·H] are G·H·(I + H) + 2·G·H elements, and the graph counts T·B·(2·G·H·(I + H) + 10·H)
// FLOPs: about 2 FLOPs per weight element and row, hence T·B; X's reads then give I, and the
// weights H. The X·Wᵀ GEMM [T·B, G·H] reads X and W; the loop reads R and writes Y and the final
// states.
void recurrent_kernels(const OpWork& work, bool f16, std::uint64_t element_bytes, std::uint64_t weight_bytes,
                       std::uint64_t activation_reads, const std::string& prefix, std::vector<KernelSpec>& out) {
  const double g = work.op == "LSTM" ? 4 : 3;
  const double e = static_cast<double>(element_bytes);
  const double weights = std::max(1.0, static_cast<double>(weight_bytes) / e);
  double rows = std::max(1.0, work.flops / (2 * weights));  // T·B, first estimate
  const double input = std::max(1.0, std::round(static_cast<double>(activation_reads) / (rows * e)));
  // g·H² + g·(I + 2)·H = weights
  const double b = g * (input + 2);
  const double h = std::max(1.0, std::round((-b + std::sqrt(b * b + 4 * g * weights)) / (2 * g)));
  rows = std::max(1.0, std::round(work.flops / (2 * g * h * (input + h) + 10 * h)));

  KernelSpec gemm =
      gemm_kernel(prefix + ".x_proj", static_cast<std::uint64_t>(rows), static_cast<std::uint64_t>(g * h), f16);
  gemm.flops = std::min(work.flops, 2 * rows * g * h * input);
  gemm.bytes = std::min(work.reads, activation_reads + static_cast<std::uint64_t>(g * h * input * e));

  const auto hidden = static_cast<int>(std::min<double>(h, std::numeric_limits<int>::max()));
  const int vector = f16 ? 8 : 4;
  KernelSpec loop;
  loop.name = prefix + ".loop";
  loop.threads_per_block = kLoopThreads;
  loop.registers_per_thread = hidden % vector == 0 ? (f16 ? 80 : 64) : 120;
  loop.flops = work.flops - gemm.flops;
  loop.bytes = work.reads + work.writes - gemm.bytes;
  try {
    // The backend's planner on the reference GPU, one block per SM; the batch is not known: a
    // full tile of rows (kMaxTileRows) is staged.
    const loop_plan::LoopShape shape{static_cast<int>(g), 1, hidden, static_cast<int>(element_bytes)};
    const loop_plan::PersistentPlan plan = loop_plan::plan_persistent(
        shape, loop_plan::kMaxTileRows, {kReferenceSms, kReferenceSharedBytes, 0}, [](bool, std::size_t) { return 1; });
    loop.blocks = static_cast<std::uint32_t>(plan.blocks);
    loop.shared_bytes_per_block = plan.smem_bytes;
    loop.cooperative = true;
  } catch (const Error& error) {
    if (error.code() != ErrorCode::unsupported) throw;
    // Too large a hidden size for the loop: the backend runs cuBLAS and a cell kernel per time
    // step instead; the Step does not say how many steps: their work as one grid-stride kernel.
    loop.blocks = grid_for(static_cast<std::uint64_t>(g * h));
    loop.registers_per_thread = 40;
  }
  out.push_back(std::move(gemm));
  out.push_back(std::move(loop));
}

void row_kernel(const OpWork& work, std::uint64_t element_bytes, std::uint64_t weight_bytes, KernelSpec& k) {
  std::uint64_t length = kAssumedRowLength;
  if (work.how.row_length == RowLength::input_per_output)
    length =
        ceil_div(std::max<std::uint64_t>(work.input_elements, 1), std::max<std::uint64_t>(work.output_elements, 1));
  else if (work.how.row_length == RowLength::weights && weight_bytes > 0)
    length = std::max<std::uint64_t>(weight_bytes / (2 * element_bytes), 1);
  const std::uint64_t rows = work.how.row_length == RowLength::input_per_output
                                 ? work.output_elements
                                 : ceil_div(work.output_elements, length);
  k.blocks = grid_blocks(rows, kMaxGridBlocks);
  k.threads_per_block = length <= kShortRow ? kShortRowThreads : kBlockThreads;
}

}  // namespace

std::vector<KernelSpec> estimate_kernels(const StepWork& step, bool f16) {
  const std::uint64_t element_bytes = f16 ? 2 : 4;
  std::vector<OpWork> ops;
  for (const std::string& op : step.ops) {
    const OpLaunch how = launch_of(op);
    if (how.launch != Launch::none) ops.push_back({op, how});
  }
  if (ops.empty()) return {};

  // Output elements: every op writes as many, each element in its own output bytes.
  std::uint64_t bytes_per_output = 0;
  for (const OpWork& w : ops) bytes_per_output += (w.how.boolean_output ? 1 : element_bytes) + w.how.index_bytes;
  const std::uint64_t outputs = step.bytes_written / bytes_per_output;

  // Later ops: their output, one input tensor and 1 FLOP per element; the first op the rest,
  // the weights included. Where the Step has less than that, it is shared evenly.
  const double later_flops = static_cast<double>(outputs) * static_cast<double>(ops.size() - 1);
  const double flops_each =
      later_flops <= step.flops ? static_cast<double>(outputs) : step.flops / static_cast<double>(ops.size());
  std::uint64_t reads_left = step.activation_bytes_read, writes_left = step.bytes_written;
  double flops_left = step.flops;
  for (std::size_t i = ops.size() - 1; i > 0; --i) {
    OpWork& w = ops[i];
    w.output_elements = w.input_elements = outputs;
    w.writes = std::min(writes_left, outputs * ((w.how.boolean_output ? 1 : element_bytes) + w.how.index_bytes));
    w.reads = std::min(reads_left, outputs * element_bytes);
    w.flops = std::min(flops_left, flops_each);
    writes_left -= w.writes;
    reads_left -= w.reads;
    flops_left -= w.flops;
  }
  OpWork& first = ops.front();
  first.output_elements = outputs;
  first.input_elements = reads_left / element_bytes;
  first.writes = writes_left;
  first.reads = reads_left + step.weight_bytes;
  first.flops = flops_left;

  std::vector<KernelSpec> kernels;
  for (const OpWork& w : ops) {
    const std::string prefix = step.name + "/" + w.op;
    std::uint64_t bytes = w.reads + w.writes;
    if (w.how.launch == Launch::recurrent) {
      const std::uint64_t weights = &w == &first ? step.weight_bytes : 0;
      recurrent_kernels(w, f16, element_bytes, weights, w.reads - weights, prefix, kernels);
      continue;
    }
    // A side kernel moves the op's output once: its bytes come off the op's.
    const auto side_kernel = [&](const SideKernel& side) {
      KernelSpec k =
          grid_stride_kernel(prefix + "." + side.part, side.per_channel ? 1 : w.output_elements, side.registers);
      k.bytes = side.per_channel ? 0 : std::min(bytes, w.output_elements * element_bytes);
      bytes -= k.bytes;
      return k;
    };
    if (w.how.before) kernels.push_back(side_kernel(*w.how.before));
    std::optional<KernelSpec> after;
    if (w.how.after) after = side_kernel(*w.how.after);

    KernelSpec k;
    if (w.how.launch == Launch::gemm) {
      std::uint64_t m = 1, n = 1;
      infer_gemm(w, &w == &first ? step.weight_bytes : 0, element_bytes, m, n);
      k = gemm_kernel(prefix, m, n, f16);
    } else {
      k = grid_stride_kernel(prefix, w.output_elements, w.how.registers);
      k.shared_bytes_per_block = w.how.shared_bytes;
      if (w.how.launch == Launch::rows) row_kernel(w, element_bytes, &w == &first ? step.weight_bytes : 0, k);
    }
    k.flops = w.flops;
    k.bytes = bytes;
    kernels.push_back(std::move(k));
    if (after) kernels.push_back(std::move(*after));
  }
  return kernels;
}

}  // namespace loom::sim
