// Processor figures, op times from the library's entries, link legs and the terms of entries.
#include "placement/figures.hpp"

#include <algorithm>
#include <cstdlib>
#include <map>
#include <tuple>

#include "graph/ops.hpp"
#include "loom/error.hpp"

namespace loom::placement {

bool has_figures(const FunctionLibrary& library, std::string_view name) {
  return library.find_processor(name) || default_function_library().find_processor(name);
}

LibraryProcessor processor_figures(const FunctionLibrary& library, std::string_view name) {
  if (const LibraryProcessor* p = library.find_processor(name)) return *p;
  const FunctionLibrary defaults = default_function_library();
  if (const LibraryProcessor* p = defaults.find_processor(name)) return *p;
  std::string known;
  for (const auto& p : library.processors) known += (known.empty() ? "" : ", ") + p.name;
  for (const auto& p : defaults.processors)
    if (!library.find_processor(p.name)) known += (known.empty() ? "" : ", ") + p.name;
  throw Error(ErrorCode::invalid_argument, "placement: no figures for processor '" + std::string(name) +
                                               "' in the function library or the defaults (known: " + known + ")");
}

double value_bytes(const ValueInfo& info) {
  return static_cast<double>(info.shape.numel()) * static_cast<double>(dtype_size(info.dtype));
}

OpSize node_size(const Node& node, const std::map<std::string, ValueInfo>& infos, WorkClass work_class) {
  OpSize size;
  size.kind = library_op_kind(node.op_type, work_class);
  std::vector<const ValueInfo*> in_infos, out_infos;
  for (const auto& name : node.inputs) {
    in_infos.push_back(name.empty() ? nullptr : &infos.at(name));
    if (!name.empty()) size.bytes += value_bytes(infos.at(name));
  }
  double output_elements = 0;
  bool dtype_set = false;
  for (const auto& name : node.outputs) {
    out_infos.push_back(name.empty() ? nullptr : &infos.at(name));
    if (name.empty()) continue;
    const ValueInfo& info = infos.at(name);
    if (!dtype_set) size.dtype = info.dtype;
    dtype_set = true;
    output_elements += static_cast<double>(info.shape.numel());
    size.bytes += value_bytes(info);
  }
  size.flops = graph::node_flops(node, in_infos, out_infos);
  size.work = std::max({size.flops, output_elements, 1.0});
  return size;
}

OpFigures op_time(const FunctionLibrary& library, const OpSize& op, const LibraryProcessor& processor) {
  if (op.kind == "view") return {0, std::nullopt, false};
  const int bucket = size_bucket(op.work);
  const LibraryEntry* best = nullptr;
  for (const DType dtype : {op.dtype, DType::f32}) {
    for (const LibraryEntry& e : library.entries) {
      if (e.op != op.kind || e.dtype != dtype || e.processor != processor.name) continue;
      const int distance = std::abs(e.bucket - bucket);
      const int best_distance = best ? std::abs(best->bucket - bucket) : 0;
      if (!best || distance < best_distance || (distance == best_distance && e.bucket > best->bucket)) best = &e;
    }
    if (best) break;
  }
  if (best) {
    const double floor = std::min(processor.fixed_us, best->time_us);
    const double time = floor + (best->time_us - floor) * op.work / best->work;
    return {time, best->terms.complexity_us, true};
  }
  double time = processor.fixed_us;
  if (processor.flops_per_us > 0 && processor.bytes_per_us > 0)
    time += std::max(op.flops / processor.flops_per_us, op.bytes / processor.bytes_per_us);
  return {time, std::nullopt, false};
}

double link_leg_us(const LibraryProcessor& processor, double bytes) {
  if (processor.host) return 0;
  return processor.link_latency_us + (processor.link_bytes_per_us > 0 ? bytes / processor.link_bytes_per_us : 0);
}

double scalar_complexity_us(const LibraryProcessor& processor, std::span<const LibraryProcessor> processors) {
  if (!processor.host) return 0;
  double largest = 0;
  for (const auto& other : processors)
    if (!other.host) largest = std::max(largest, other.round_trip_us);
  return largest;
}

void fill_entry_terms(FunctionLibrary& library) {
  std::map<std::tuple<std::string, DType, int>, double> slowest;
  for (LibraryEntry& e : library.entries) {
    const LibraryProcessor& p = processor_figures(library, e.processor);
    e.terms.accumulated_us = e.time_us + p.launch_us;
    // In and out: one latency each way, every byte once.
    e.terms.transfer_us = p.host ? 0 : p.link_latency_us + link_leg_us(p, e.bytes);
    e.terms.complexity_us = e.op == "scalar" ? scalar_complexity_us(p, library.processors) : 0;
    double& a = slowest[{e.op, e.dtype, e.bucket}];
    a = std::max(a, e.terms.accumulated_us);
  }
  for (LibraryEntry& e : library.entries)
    e.terms.speed_us = slowest[{e.op, e.dtype, e.bucket}] - e.terms.accumulated_us;
}

}  // namespace loom::placement
