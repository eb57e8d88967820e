// CPU kernels of the elementwise family (see kernel_registry.hpp and elementwise.hpp). Relu,
// Sigmoid, Tanh, Gelu, Add and Mul replace the first release's entries with the same factories,
// now covering more dtypes.
#include "backend/cpu/elementwise.hpp"
#include "backend/cpu/kernel_registry.hpp"

namespace loom::backend::cpu {

void register_elementwise_kernels(KernelTable& table) {
  for (const char* op : {"Relu", "LeakyRelu", "Elu", "Sigmoid", "HardSigmoid", "HardSwish", "Tanh", "Erf", "Softplus",
                         "Gelu", "Sqrt", "Reciprocal", "Exp", "Log", "Neg", "Abs", "Not"})
    table[op] = make_unary_kernel;
  for (const char* op : {"Add", "Sub", "Mul", "Div", "Pow", "PRelu", "Equal", "Less", "Greater", "LessOrEqual",
                         "GreaterOrEqual", "And", "Or", "Xor"})
    table[op] = make_binary_kernel;
  table["Min"] = make_min_max_kernel;
  table["Max"] = make_min_max_kernel;
  table["Clip"] = make_clip_kernel;
  table["Where"] = make_where_kernel;
  table["Cast"] = make_cast_kernel;
}

}  // namespace loom::backend::cpu
