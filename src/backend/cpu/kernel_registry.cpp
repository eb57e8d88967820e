// The CPU registry, filled once by every family file.
#include "backend/cpu/kernel_registry.hpp"

namespace loom::backend {
namespace cpu {

const CpuKernelRegistry& kernel_registry() {
  static const CpuKernelRegistry registry = [] {
    CpuKernelRegistry r("cpu");
    register_every_family(r);
    return r;
  }();
  return registry;
}

}  // namespace cpu

std::vector<std::string> cpu_kernel_op_types() { return cpu::kernel_registry().op_types(); }

}  // namespace loom::backend
