// CPU kernels of the reduce family: reductions, Softmax/LogSoftmax, LayerNormalization, ArgMax/ArgMin
// and TopK (see kernel_registry.hpp).
#include "backend/cpu/kernel_registry.hpp"
#include "backend/cpu/norm.hpp"
#include "backend/cpu/reduce.hpp"
#include "backend/cpu/softmax.hpp"
#include "backend/cpu/topk.hpp"

namespace loom::backend::cpu {

void register_reduce_kernels(CpuKernelRegistry& registry) {
  registry.add({"ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceSumSquare", "ReduceL1",
                "ReduceL2", "ReduceLogSum", "ReduceLogSumExp"},
               make_reduce_kernel);
  registry.add({"Softmax", "LogSoftmax"}, make_softmax_kernel);
  registry.add("LayerNormalization", make_layer_norm_kernel);
  registry.add({"ArgMax", "ArgMin"}, make_arg_reduce_kernel);
  registry.add("TopK", make_topk_kernel);
}

}  // namespace loom::backend::cpu
