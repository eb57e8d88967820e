// CUDA kernels of the elementwise family (see kernel_registry.hpp). create_unary_kernel takes the
// one-tensor ops (with Clip's scalar bounds and Cast), create_binary_kernel the broadcasting ones
// (Min/Max and Where included); both live in elementwise.cpp.
#include "backend/cuda/cuda_op_kernel.hpp"
#include "backend/cuda/kernel_registry.hpp"

namespace loom::backend::cuda {

void register_elementwise_kernels(CudaKernelRegistry& registry) {
  registry.add({"Relu", "LeakyRelu", "Elu", "Sigmoid", "HardSigmoid", "HardSwish", "Tanh", "Erf", "Softplus", "Gelu",
                "Sqrt", "Reciprocal", "Exp", "Log", "Neg", "Abs", "Not", "Clip", "Cast"},
               create_unary_kernel);
  registry.add({"Add", "Sub", "Mul", "Div", "Pow", "PRelu", "Equal", "Less", "Greater", "LessOrEqual", "GreaterOrEqual",
                "And", "Or", "Xor", "Min", "Max", "Where"},
               create_binary_kernel);
}

}  // namespace loom::backend::cuda
