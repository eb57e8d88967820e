// CPU kernels of the elementwise family (see kernel_registry.hpp and elementwise.hpp).
#include "backend/cpu/elementwise.hpp"
#include "backend/cpu/kernel_registry.hpp"

namespace loom::backend::cpu {

void register_elementwise_kernels(CpuKernelRegistry& registry) {
  registry.add({"Relu", "LeakyRelu", "Elu", "Sigmoid", "HardSigmoid", "HardSwish", "Tanh", "Erf", "Softplus", "Gelu",
                "Sqrt", "Reciprocal", "Exp", "Log", "Neg", "Abs", "Not"},
               make_unary_kernel);
  registry.add({"Add", "Sub", "Mul", "Div", "Pow", "PRelu", "Equal", "Less", "Greater", "LessOrEqual", "GreaterOrEqual",
                "And", "Or", "Xor"},
               make_binary_kernel);
  registry.add({"Min", "Max"}, make_min_max_kernel);
  registry.add("Clip", make_clip_kernel);
  registry.add("Where", make_where_kernel);
  registry.add("Cast", make_cast_kernel);
}

}  // namespace loom::backend::cpu
