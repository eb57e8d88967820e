// The graph passes optimize() runs, in order: bind symbolic input dimensions, fold everything
// computable from constants and shapes on the host, drop no-op nodes, fuse BatchNorm into Conv,
// remove dead code. Each pass works on a Model in place.
#pragma once

#include <cstddef>
#include <map>
#include <string>
#include <vector>

#include "loom/model.hpp"

namespace loom::graph::passes {

// Replaces every symbolic or unknown input dimension with a size (options.input_shapes, then
// options.dim_values by name, then options.default_dim_value) and turns options.constant_inputs
// into initializers. Returns the bound input shapes. Throws Error(invalid_argument).
std::map<std::string, Shape> bind_inputs(Model& model, const OptimizeOptions& options);

// Walks the nodes in order, inferring shapes; a node whose every input is a constant (or a Shape
// node, which needs only its input's static shape; or a Constant node) is run once on the host by
// the CPU backend and its outputs become initializers. Returns the number of nodes folded.
std::size_t fold_constants(Model& model);

// Identity nodes, and Dropout nodes whose mask is unused, are removed by renaming their consumers'
// inputs, unless their output is a graph output. Returns the number removed.
std::size_t remove_no_ops(Model& model);

// Conv → BatchNormalization (inference) where the Conv output feeds only the BatchNorm and all
// weights are constants: the BatchNorm is folded into the Conv's weights and bias. Returns the
// number fused.
std::size_t fuse_batch_norm(Model& model);

// Drops nodes no graph output depends on and initializers no node reads. Returns nodes dropped.
std::size_t remove_dead_code(Model& model);

}  // namespace loom::graph::passes
