// CUDA kernels of the shape family: views, copies and generators (see kernel_registry.hpp).
#include "backend/cuda/cuda_op_kernel.hpp"
#include "backend/cuda/kernel_registry.hpp"
#include "backend/cuda/shape_ops.hpp"

namespace loom::backend::cuda {

void register_shape_kernels(CudaKernelRegistry& registry) {
  registry.add({"Reshape", "Flatten", "Squeeze", "Unsqueeze", "Identity"}, create_reshape_kernel);
  registry.add("Transpose", create_transpose_kernel);
  registry.add("Concat", create_concat_kernel);
  registry.add("Gather", create_gather_kernel);
  registry.add("Dropout", create_dropout_kernel);
  registry.add({"Slice", "Expand", "Tile"}, create_strided_view_kernel);
  registry.add("Split", create_split_kernel);
  registry.add({"Shape", "Constant"}, create_value_kernel);
  registry.add("ConstantOfShape", create_constant_of_shape_kernel);
  registry.add("Range", create_range_kernel);
}

}  // namespace loom::backend::cuda
