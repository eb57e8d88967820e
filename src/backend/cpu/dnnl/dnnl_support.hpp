// What the CPU backend's oneDNN kernels share: the one engine, memory descriptors of Loom's plain
// (row-major) tensors, the fusion epilogue as post-ops, and errors that name the node.
#pragma once

#include <oneapi/dnnl/dnnl.hpp>

#include <cstddef>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "backend/backend.hpp"
#include "backend/cpu/epilogue.hpp"
#include "backend/cpu/parallel.hpp"

namespace loom::backend::cpu {

// The process's CPU engine (thread-safe; every kernel shares it).
const dnnl::engine& dnnl_cpu_engine();

dnnl::memory::dims to_dims(const Shape& shape);
// An f32 row-major tensor of `dims`.
dnnl::memory::desc plain_desc(const dnnl::memory::dims& dims);
// `dims` viewed with other strides (a transposed operand), f32.
dnnl::memory::desc strided_desc(const dnnl::memory::dims& dims, const dnnl::memory::dims& strides);

// The library's post-ops for a prefix of an epilogue; the ops past it are applied by
// apply_epilogue() on the result once the library has written it.
struct DnnlPostOps {
  dnnl::post_ops ops;
  std::size_t count = 0;  // epilogue ops the post-ops express
  // A binary post-op's second operand: its post-op index, the fused run()'s input and its descriptor.
  struct Operand {
    int index = 0;
    std::size_t input = 0;
    dnnl::memory::desc desc;
  };
  std::vector<Operand> operands;
};
// The dims of a tensor operand (shape `operand`) in the coordinates of the library's result, or
// nullopt when it cannot be put so (the op is then left to apply_epilogue).
using OperandDims = std::function<std::optional<dnnl::memory::dims>(const Shape& operand)>;
// Post-ops for epilogue.ops[first, first + most): stops at the first op the library cannot express.
DnnlPostOps dnnl_post_ops(const Epilogue& epilogue, std::size_t first, std::size_t most,
                          const OperandDims& operand_dims);
// Adds each binary post-op operand to a primitive's arguments: a memory of its descriptor, with no
// data yet, in `memories` (one per operand, in order; set_post_op_operands() points them at the
// run's inputs) and its argument in `args`.
void bind_post_op_operands(const DnnlPostOps& post_ops, const dnnl::engine& engine, std::vector<dnnl::memory>& memories,
                           std::unordered_map<int, dnnl::memory>& args);
// Points the operands bound by bind_post_op_operands() at this run's inputs.
void set_post_op_operands(const DnnlPostOps& post_ops, std::span<const void* const> inputs,
                          std::vector<dnnl::memory>& memories);

// Threads a oneDNN primitive of `flops` floating-point operations runs on: the calling thread's
// count (kernel_threads()), or fewer, at least kDnnlFlopsPerThread each, as parallel_for keeps small
// loops on one thread. A fork wakes the team's idle threads, which then spin after the join (libgomp's
// default wait policy): on a tiny product that costs more than it saves, and takes the cores the
// process's other threads need (docs/cpu-threads.md). Kernels create and run their primitives under
// KernelThreadsScope(dnnl_threads(flops)).
constexpr double kDnnlFlopsPerThread = 1e6;
int dnnl_threads(double flops) noexcept;

// The primitives for the calling thread's thread count (kernel_threads(): the OpenMP count its
// stream set), made by `build(threads)` on its first run with that count: oneDNN fixes a
// primitive's thread count when it is created, and reads no process-wide setting that another
// stream could change.
template <class Primitives, class Build>
Primitives& primitives_for_this_thread(std::map<int, Primitives>& by_threads, Build&& build) {
  const int threads = kernel_threads();
  if (auto found = by_threads.find(threads); found != by_threads.end()) return found->second;
  return by_threads.emplace(threads, build(threads)).first->second;
}
// `operand` right-aligned to `result` (numpy broadcasting), as the post-op's dims.
std::optional<dnnl::memory::dims> broadcast_dims(const Shape& operand, const dnnl::memory::dims& result);

// A part of a kernel's workspace that a primitive uses (a re-laid operand, the library's
// scratchpad), at an offset fixed when the kernel is created. A primitive created later, for another
// thread count, that needs more than was reserved gets a buffer of its own instead.
class WorkspaceRegion {
 public:
  WorkspaceRegion() = default;
  // Reserves `bytes` (rounded to 64) at `*end` of the workspace and advances `*end`.
  WorkspaceRegion(std::size_t bytes, std::size_t* end);
  // The same place for a primitive needing `bytes`: `reserved` itself when they fit.
  static WorkspaceRegion reuse(const WorkspaceRegion& reserved, std::size_t bytes);
  void* at(void* workspace) const;

 private:
  std::size_t offset_ = 0, bytes_ = 0;
  std::shared_ptr<void> own_;
};

// Re-lays `source` into `packed` once, at kernel creation, on the calling thread alone: the
// loading thread must not open an OpenMP team of its own. libgomp keeps a thread's team for the
// thread's life and counts its threads with every stream's; once they outnumber the cores, every
// team's idle threads stop spinning and sleep at each barrier, which made 2 threads slower than 1
// (docs/cpu-threads.md, "Only stream threads open teams"). A dnnl::error becomes an Error naming
// `kernel` and `what`.
void relay_at_creation(const OpKernel& kernel, const char* what, dnnl::memory& source, dnnl::memory& packed,
                       dnnl::stream& stream);

// Weights packed once, at load, in the layout of the primitive created then, and copies of them in
// the layouts that primitives for other thread counts pick (the library chooses its packing per
// thread count): each made on the first run that needs it, by an exact reorder from the first.
class RelaidWeights {
 public:
  // `packed` itself when it has `layout`, else its copy in `layout`.
  dnnl::memory in(dnnl::memory packed, const dnnl::memory::desc& layout, dnnl::stream& stream);

 private:
  std::vector<dnnl::memory> copies_;
};

// Attributes of every primitive of the kernels: the post-ops, and the scratchpad in Loom's
// workspace (a region per kernel) rather than the library's per-thread one, which belongs to the
// thread that created the primitive and not to the one running it.
dnnl::primitive_attr dnnl_attributes(const dnnl::post_ops& post_ops);

// Whether `impl_info` (primitive_desc::impl_info_str) names one of the library's reference loops,
// which are slower than our own kernels.
bool is_reference_implementation(const char* impl_info);

// Error(backend) "<op> node '<name>': oneDNN <what>: <message>".
[[noreturn]] void throw_dnnl_error(const OpKernel& kernel, const char* what, const dnnl::error& error);

// Runs `body`; a dnnl::error becomes throw_dnnl_error's Error.
template <class Body>
void with_dnnl_errors(const OpKernel& kernel, const char* what, Body&& body) {
  try {
    body();
  } catch (const dnnl::error& e) {
    throw_dnnl_error(kernel, what, e);
  }
}

}  // namespace loom::backend::cpu
