// What the kernel constructors of the conv family share between backends: window geometry of
// Conv, ConvTranspose and pooling, Pad's per-axis pads and Resize's coordinate plan (the graph's
// conv_window, pad_geometry and resize_geometry functions with errors that name the node); each
// checks the output shape.
#pragma once

#include <cstdint>
#include <vector>

#include "backend/backend.hpp"
#include "graph/ops/conv_window.hpp"
#include "graph/ops/pad_geometry.hpp"
#include "graph/ops/resize_geometry.hpp"

namespace loom::backend {

using graph::kMaxWindowRank;
using graph::WindowGeometry;

// graph::sliding_window for X = inputs[0], checking outputs[0] is [N, channels, output...].
WindowGeometry parse_sliding_window(const KernelSpec& spec, const std::vector<std::int64_t>& kernel,
                                    std::int64_t channels, bool ceil_mode);
// graph::transposed_window for X = inputs[0], checking outputs[0] likewise.
WindowGeometry parse_transposed_window(const KernelSpec& spec, const std::vector<std::int64_t>& kernel,
                                       std::int64_t channels);

using graph::PadMode;

// Pad (opset 2 attribute form or opset 11+ inputs): graph::pad_geometry from the constant input 1
// (or the pads attribute), negative values crop. The constant value is input 2 when present (read
// at run time), else the `value` attribute (opset 2), else 0. The axes input (opset 18) is
// unsupported.
struct PadSpec {
  PadMode mode = PadMode::constant;
  std::vector<std::int64_t> pad_begin, pad_end;
  float attribute_value = 0.0f;
  bool has_value_input = false;
};
PadSpec parse_pad(const KernelSpec& spec);

// Where an output index along an axis of `input` elements reads, under `mode`: an index in
// [0, input), or -1 for the constant. Reflect repeats (numpy's rule) when pads exceed the axis.
std::int64_t pad_source_index(std::int64_t out_index, std::int64_t pad_begin, std::int64_t input, PadMode mode);

// Resize (opset 10-19 forms): the graph's plan_resize from the constant scales (input 2) or sizes
// (input 3), with errors that name the node.
graph::ResizePlan parse_resize(const KernelSpec& spec);

}  // namespace loom::backend
