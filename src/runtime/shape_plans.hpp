// Shapes that stay symbolic until a request arrives (LoadOptions::dim_ranges): the ranges' checks
// at load and at submit, and a model's plans per request shape, made on first use and kept.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "loom/executor.hpp"
#include "runtime/loaded_model.hpp"

namespace loom::runtime {

// Sizes of the ranged dims by name: one request shape.
using DimSizes = std::map<std::string, std::int64_t>;

// Checks `options.dim_ranges` against `model` (the graph as given, before optimize()): every name
// is a symbolic dim of some input, 1 <= min <= opt <= max, and neither optimize.dim_values nor
// input_shapes/constant_inputs bind a ranged dim. Throws Error(invalid_argument) naming the model
// and the dim.
void check_dim_ranges(const Model& model, const LoadOptions& options, const std::string& name);

// `options.optimize` with each ranged dim bound to its size in `sizes`.
OptimizeOptions bind_dim_sizes(const LoadOptions& options, const DimSizes& sizes);

// Each range's opt (or max) size.
DimSizes opt_sizes(const std::map<std::string, DimRange>& ranges);
DimSizes max_sizes(const std::map<std::string, DimRange>& ranges);

class ShapePlans {
 public:
  // Makes the plan for one shape, sharing the stream and weights of the opt plan.
  using MakePlan = std::function<std::unique_ptr<LoadedModel>(const DimSizes&)>;

  // `declared`: the model's inputs as given (with dim_params); `opt_plan`: the plan at the ranges'
  // opt sizes, owned by the caller and outliving this object. Makes the plan at the max sizes now
  // and gives the opt plan its arena size (call before any request can reach the opt plan).
  // `make` is called one shape at a time.
  ShapePlans(std::string name, std::vector<ValueInfo> declared, std::map<std::string, DimRange> ranges,
             LoadedModel& opt_plan, MakePlan make);

  // The ranged dims' sizes in a request's inputs (in the model's input order). Throws
  // Error(shape_mismatch) naming the model, input, axis, dim and range for a wrong rank, a size
  // outside its range, two inputs giving one dim different sizes, or a fixed axis (or one bound at
  // load) of another size; Error(invalid_argument) for a wrong input count.
  DimSizes sizes_of(const std::vector<Tensor>& inputs) const;

  // The plan for `sizes`: the one made before, else a new one (made now and kept), its arena raised
  // to the largest made before it (the max plan's, unless a plan's arena is not monotone in the
  // sizes). Thread-safe: while one thread makes a plan, others find the plans made before it
  // without waiting, and wait only to make one.
  LoadedModel& plan_for(const DimSizes& sizes);

  const std::map<std::string, DimRange>& ranges() const noexcept { return ranges_; }
  std::size_t count() const;

 private:
  std::string name_;
  std::vector<ValueInfo> declared_;
  std::vector<Shape> bound_;  // the opt plan's input shapes: the sizes of the axes no range covers
  std::map<std::string, DimRange> ranges_;
  LoadedModel& opt_plan_;
  MakePlan make_;
  mutable std::mutex mutex_;                                // guards plans_
  std::map<DimSizes, std::unique_ptr<LoadedModel>> plans_;  // every shape's but opt's
  std::mutex making_mutex_;                                 // one plan made at a time; guards arena_bytes_
  std::uint64_t arena_bytes_ = 0;                           // the largest plan's request arena
};

}  // namespace loom::runtime
