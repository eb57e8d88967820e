// CUDA kernels of the shape family added for ONNX models (see kernel_registry.hpp).
#include "backend/cuda/cuda_op_kernel.hpp"
#include "backend/cuda/kernel_registry.hpp"
#include "backend/cuda/shape_ops.hpp"

namespace loom::backend::cuda {

void register_shape_kernels(KernelTable& table) {
  table["Squeeze"] = create_reshape_kernel;
  table["Unsqueeze"] = create_reshape_kernel;
  table["Identity"] = create_reshape_kernel;
  table["Dropout"] = create_dropout_kernel;
  table["Slice"] = create_strided_view_kernel;
  table["Expand"] = create_strided_view_kernel;
  table["Tile"] = create_strided_view_kernel;
  table["Split"] = create_split_kernel;
  table["Shape"] = create_value_kernel;
  table["Constant"] = create_value_kernel;
  table["ConstantOfShape"] = create_constant_of_shape_kernel;
  table["Range"] = create_range_kernel;
}

}  // namespace loom::backend::cuda
