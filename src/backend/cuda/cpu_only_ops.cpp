// The explicit list of ops the graph accepts but the CUDA backend does not run, each with its
// reason. An op belongs either here or in a CUDA registry_<family>.cpp, never both and never
// neither: tests/unit/test_op_registration.cpp checks it against the graph's schemas.
#include <vector>

#include "backend/cuda/kernel_registry.hpp"

namespace loom::backend::cuda {

std::span<const CpuOnlyOp> cpu_only_ops() {
  // Empty today: every op the importer accepts has a CUDA kernel. An entry reads
  //   {"OpType", "why it stays on the CPU (e.g. only ever folded into a constant at load)"},
  static const std::vector<CpuOnlyOp> ops = {};
  return ops;
}

}  // namespace loom::backend::cuda
