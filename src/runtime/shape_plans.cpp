// ShapePlans: the dim ranges' checks, and a model's plans per request shape.
#include "runtime/shape_plans.hpp"

#include <algorithm>
#include <set>

#include "loom/error.hpp"

namespace loom::runtime {
namespace {

std::string range_text(const DimRange& r) {
  return std::to_string(r.min) + ".." + std::to_string(r.max) + " (opt " + std::to_string(r.opt) + ")";
}

const std::string& dim_name(const ValueInfo& input, std::size_t axis) {
  static const std::string none;
  return axis < input.dim_params.size() ? input.dim_params[axis] : none;
}

DimSizes sizes_from(const std::map<std::string, DimRange>& ranges, std::int64_t DimRange::*which) {
  DimSizes sizes;
  for (const auto& [name, range] : ranges) sizes[name] = range.*which;
  return sizes;
}

}  // namespace

void check_dim_ranges(const Model& model, const LoadOptions& options, const std::string& name) {
  const std::string where = "load '" + name + "': dim_ranges[\"";
  std::set<std::string> symbolic;
  for (const auto& input : model.inputs)
    for (std::size_t axis = 0; axis < input.shape.rank(); ++axis)
      if (input.shape[axis] < 0 && !dim_name(input, axis).empty()) symbolic.insert(dim_name(input, axis));
  for (const auto& [dim, range] : options.dim_ranges) {
    if (!symbolic.count(dim)) {
      std::string known;
      for (const auto& s : symbolic) known += (known.empty() ? "" : ", ") + s;
      throw Error(ErrorCode::invalid_argument, where + dim + "\"]: no input of the model has a symbolic dim '" + dim +
                                                   "' (its symbolic dims: " + (known.empty() ? "none" : known) + ")");
    }
    if (range.min < 1 || range.opt < range.min || range.max < range.opt)
      throw Error(ErrorCode::invalid_argument, where + dim + "\"] = " + std::to_string(range.min) + ":" +
                                                   std::to_string(range.opt) + ":" + std::to_string(range.max) +
                                                   ": a range needs 1 <= min <= opt <= max");
    if (options.optimize.dim_values.count(dim))
      throw Error(ErrorCode::invalid_argument,
                  where + dim + "\"]: the dim is also bound by optimize.dim_values; give it a range or a size");
    for (const auto& input : model.inputs) {
      const bool fixed =
          options.optimize.input_shapes.count(input.name) || options.optimize.constant_inputs.count(input.name);
      for (std::size_t axis = 0; fixed && axis < input.shape.rank(); ++axis)
        if (dim_name(input, axis) == dim)
          throw Error(ErrorCode::invalid_argument, where + dim + "\"]: input '" + input.name +
                                                       "', which carries the dim, has its shape fixed by optimize "
                                                       "(input_shapes or constant_inputs)");
    }
  }
}

OptimizeOptions bind_dim_sizes(const LoadOptions& options, const DimSizes& sizes) {
  OptimizeOptions bound = options.optimize;
  for (const auto& [dim, size] : sizes) bound.dim_values[dim] = size;
  return bound;
}

DimSizes opt_sizes(const std::map<std::string, DimRange>& ranges) { return sizes_from(ranges, &DimRange::opt); }
DimSizes max_sizes(const std::map<std::string, DimRange>& ranges) { return sizes_from(ranges, &DimRange::max); }

ShapePlans::ShapePlans(std::string name, std::vector<ValueInfo> declared, std::map<std::string, DimRange> ranges,
                       LoadedModel& opt_plan, MakePlan make)
    : name_(std::move(name)),
      declared_(std::move(declared)),
      ranges_(std::move(ranges)),
      opt_plan_(opt_plan),
      make_(std::move(make)) {
  for (const auto& input : opt_plan_.info().inputs) bound_.push_back(input.shape);
  if (bound_.size() != declared_.size())
    throw Error(ErrorCode::internal, "model '" + name_ + "': " + std::to_string(declared_.size()) +
                                         " declared inputs, " + std::to_string(bound_.size()) + " planned");
  arena_bytes_ = opt_plan_.request_arena_bytes();
  const DimSizes largest = max_sizes(ranges_);
  if (largest != opt_sizes(ranges_)) {
    LoadedModel& max_plan = plan_for(largest);
    opt_plan_.raise_request_arena_bytes(max_plan.request_arena_bytes());
  }
}

DimSizes ShapePlans::sizes_of(const std::vector<Tensor>& inputs) const {
  const std::string model = "model '" + name_ + "'";
  if (inputs.size() != declared_.size())
    throw Error(ErrorCode::invalid_argument, model + " takes " + std::to_string(declared_.size()) + " input(s), got " +
                                                 std::to_string(inputs.size()));
  DimSizes sizes;
  std::map<std::string, std::string> given_by;  // dim -> the input and axis that gave its size
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    const ValueInfo& input = declared_[i];
    const Shape& shape = inputs[i].shape();
    const std::string where = model + ", input " + std::to_string(i) + " '" + input.name + "'";
    if (shape.rank() != bound_[i].rank())
      throw Error(ErrorCode::shape_mismatch,
                  where + ": expected rank " + std::to_string(bound_[i].rank()) + ", got shape " + shape.to_string());
    for (std::size_t axis = 0; axis < shape.rank(); ++axis) {
      const std::string& dim = dim_name(input, axis);
      const auto range = dim.empty() ? ranges_.end() : ranges_.find(dim);
      const std::string at = where + " axis " + std::to_string(axis);
      if (range == ranges_.end()) {
        if (shape[axis] != bound_[i][axis])
          throw Error(ErrorCode::shape_mismatch,
                      at + (dim.empty() ? std::string() : " (dim '" + dim + "', bound at load)") + ": expected " +
                          std::to_string(bound_[i][axis]) + ", got " + std::to_string(shape[axis]) + " (shape " +
                          shape.to_string() + ")");
        continue;
      }
      const std::int64_t size = shape[axis];
      if (size < range->second.min || size > range->second.max)
        throw Error(ErrorCode::shape_mismatch, at + ": dim '" + dim + "' = " + std::to_string(size) +
                                                   " is outside its range " + range_text(range->second));
      const auto [it, added] = sizes.emplace(dim, size);
      if (added) {
        given_by[dim] = "input '" + input.name + "' axis " + std::to_string(axis);
      } else if (it->second != size) {
        throw Error(ErrorCode::shape_mismatch, at + ": dim '" + dim + "' = " + std::to_string(size) + ", but " +
                                                   given_by[dim] + " gives it " + std::to_string(it->second) +
                                                   " (range " + range_text(range->second) + ")");
      }
    }
  }
  return sizes;
}

LoadedModel& ShapePlans::plan_for(const DimSizes& sizes) {
  if (sizes == opt_sizes(ranges_)) return opt_plan_;
  const auto find = [&]() -> LoadedModel* {
    std::lock_guard lock(mutex_);
    const auto it = plans_.find(sizes);
    return it == plans_.end() ? nullptr : it->second.get();
  };
  if (LoadedModel* made = find()) return *made;
  // One plan made at a time; requests for shapes planned before do not wait for it.
  std::lock_guard making(making_mutex_);
  if (LoadedModel* made = find()) return *made;  // made by another thread meanwhile
  std::unique_ptr<LoadedModel> plan = make_(sizes);
  plan->raise_request_arena_bytes(arena_bytes_);
  arena_bytes_ = std::max(arena_bytes_, plan->request_arena_bytes());
  std::lock_guard lock(mutex_);
  return *plans_.emplace(sizes, std::move(plan)).first->second;
}

std::size_t ShapePlans::count() const {
  std::lock_guard lock(mutex_);
  return plans_.size() + 1;
}

}  // namespace loom::runtime
