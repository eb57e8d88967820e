// The figures the placement pass and the library's measurement share: a processor's figures (the
// library's, else the defaults'), an op's time on it from the library's entries (scaled to the
// node's size) or the defaults, link legs, the complexity benefit, and an entry's terms.
#pragma once

#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "loom/placement.hpp"

namespace loom::placement {

// Whether the library or the defaults have figures for a processor of that name.
bool has_figures(const FunctionLibrary& library, std::string_view name);

// The library's processor of that name, else the default library's. Throws Error(invalid_argument)
// naming the processor and the ones there are when neither has it.
LibraryProcessor processor_figures(const FunctionLibrary& library, std::string_view name);

// What the library is asked about one node.
struct OpSize {
  std::string kind;  // library_op_kind()
  DType dtype = DType::f32;
  double work = 0;  // max(FLOPs, output elements)
  double flops = 0;
  double bytes = 0;  // read and written (weights included)
};

// numel * dtype size.
double value_bytes(const ValueInfo& info);

// `node`'s size from the value types in `infos` (every input and output of the node): its kind
// for `work_class`, the dtype of its first output, work = max(FLOPs, output elements, 1), bytes of
// every input (weights included) and output. Throws std::out_of_range for a value not in infos.
OpSize node_size(const Node& node, const std::map<std::string, ValueInfo>& infos, WorkClass work_class);

struct OpFigures {
  double time_us = 0;
  // The complexity benefit the matching entry holds; nullopt when none matched (defaults).
  std::optional<double> complexity_us;
  bool measured = false;  // from an entry (else the processor's default figures)
};

// The entry of (kind, dtype, processor) nearest the node's size bucket (ties: the larger bucket),
// or of (kind, f32, processor) when the dtype has none: its time, the part above the processor's
// fixed cost scaled by work / the entry's work. Without an entry: fixed_us + max(flops /
// flops_per_us, bytes / bytes_per_us). A "view" op (it aliases its input) takes no time.
OpFigures op_time(const FunctionLibrary& library, const OpSize& op, const LibraryProcessor& processor);

// One copy of `bytes` between the host and `processor`: 0 on the host, else link_latency_us +
// bytes / link_bytes_per_us.
double link_leg_us(const LibraryProcessor& processor, double bytes);

// o for scalar work on `processor`: on the host, the largest round trip among the other
// processors (what handing the scalar to them would cost before their kernels could use it);
// 0 off the host.
double scalar_complexity_us(const LibraryProcessor& processor, std::span<const LibraryProcessor> processors);

// Fills every entry's terms from its time and the processors' figures (docs/placement.md):
// t = 2 * link latency + bytes / link rate off the host (0 on it), a = time + launch_us,
// s = the largest a among the entries of the same (op, dtype, bucket) - this a,
// o = scalar_complexity_us for "scalar" entries, else 0.
void fill_entry_terms(FunctionLibrary& library);

}  // namespace loom::placement
