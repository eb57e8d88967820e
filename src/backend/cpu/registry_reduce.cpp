// CPU kernels of the reduce family added for ONNX models (see kernel_registry.hpp).
#include "backend/cpu/kernel_registry.hpp"
#include "backend/cpu/reduce.hpp"
#include "backend/cpu/softmax.hpp"
#include "backend/cpu/topk.hpp"

namespace loom::backend::cpu {

void register_reduce_kernels(KernelTable& table) {
  for (const char* op : {"ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceSumSquare",
                         "ReduceL1", "ReduceL2", "ReduceLogSum", "ReduceLogSumExp"})
    table[op] = make_reduce_kernel;
  table["LogSoftmax"] = make_softmax_kernel;
  table["ArgMax"] = make_arg_reduce_kernel;
  table["ArgMin"] = make_arg_reduce_kernel;
  table["TopK"] = make_topk_kernel;
}

}  // namespace loom::backend::cpu
