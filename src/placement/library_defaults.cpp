// The documented default figures (docs/placement.md, "Defaults"): what placement uses for a
// processor or an op kind the function library has not measured.
#include "loom/placement.hpp"

namespace loom {

FunctionLibrary default_function_library() {
  FunctionLibrary library;
  library.machine = "built-in defaults";
  library.method = "typical figures, not measured (docs/placement.md, Defaults)";
  // The host CPU: a few cores of AVX2 (50 GFLOP/s), 10 GB/s of DRAM per core's share; a call
  // into a kernel costs about a microsecond and nothing crosses a link.
  library.processors.push_back({"cpu", "host CPU", true, 0, 1, 5e4, 1e4, 0, 0, 0});
  // The CPU stand-in for an accelerator: the same compute, its data copied by memcpy (5 GB/s,
  // ~1 us per copy), a scalar round trip of two copies.
  library.processors.push_back({"cpu:accel", "CPU stand-in for an accelerator", false, 0, 1, 5e4, 1e4, 1, 5e3, 2});
  // A data-centre GPU: 20 TFLOP/s f32, 1 TB/s HBM, ~5 us to launch a kernel and ~3 us for the
  // smallest one to run; PCIe at 12 GB/s with ~10 us per copy, ~20 us for a scalar round trip
  // (a copy each way and a synchronisation).
  library.processors.push_back({"cuda", "GPU", false, 5, 3, 2e7, 1e6, 10, 1.2e4, 20});
  return library;
}

}  // namespace loom
