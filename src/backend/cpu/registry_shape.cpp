// CPU kernels of the shape family added for ONNX models (see kernel_registry.hpp).
#include "backend/cpu/kernel_registry.hpp"
#include "backend/cpu/layout.hpp"
#include "backend/cpu/shape_ops.hpp"

namespace loom::backend::cpu {

void register_shape_kernels(KernelTable& table) {
  table["Squeeze"] = make_squeeze_kernel;
  table["Unsqueeze"] = make_squeeze_kernel;
  table["Identity"] = make_identity_kernel;
  table["Dropout"] = make_dropout_kernel;
  table["Slice"] = make_strided_view_kernel;
  table["Expand"] = make_strided_view_kernel;
  table["Tile"] = make_strided_view_kernel;
  table["Split"] = make_split_kernel;
  table["Shape"] = make_shape_kernel;
  table["Constant"] = make_constant_kernel;
  table["ConstantOfShape"] = make_constant_of_shape_kernel;
  table["Range"] = make_range_kernel;
}

}  // namespace loom::backend::cpu
