// CUDA kernels of the elementwise family (see kernel_registry.hpp). create_unary_kernel takes the
// one-tensor ops (with Clip's scalar bounds and Cast), create_binary_kernel the broadcasting ones
// (Min/Max and Where included); both live in elementwise.cpp.
#include "backend/cuda/cuda_op_kernel.hpp"
#include "backend/cuda/kernel_registry.hpp"

namespace loom::backend::cuda {

void register_elementwise_kernels(KernelTable& table) {
  for (const char* op : {"Relu", "LeakyRelu", "Elu", "Sigmoid", "HardSigmoid", "HardSwish", "Tanh", "Erf", "Softplus",
                         "Gelu", "Sqrt", "Reciprocal", "Exp", "Log", "Neg", "Abs", "Not", "Clip", "Cast"})
    table[op] = create_unary_kernel;
  for (const char* op : {"Add", "Sub", "Mul", "Div", "Pow", "PRelu", "Equal", "Less", "Greater", "LessOrEqual",
                         "GreaterOrEqual", "And", "Or", "Xor", "Min", "Max", "Where"})
    table[op] = create_binary_kernel;
}

}  // namespace loom::backend::cuda
