// CPU kernels of the conv family added for ONNX models (see kernel_registry.hpp).
#include "backend/cpu/conv.hpp"
#include "backend/cpu/kernel_registry.hpp"
#include "backend/cpu/pad.hpp"
#include "backend/cpu/pool.hpp"

namespace loom::backend::cpu {

void register_conv_kernels(KernelTable& table) {
  table["ConvTranspose"] = make_conv_transpose_kernel;
  table["GlobalMaxPool"] = make_global_max_pool_kernel;
  table["Pad"] = make_pad_kernel;
  table["Resize"] = make_resize_kernel;
}

}  // namespace loom::backend::cpu
