// Prometheus text exposition format 0.0.4: metric families with their HELP and TYPE lines, samples
// with escaped label values, and histograms as cumulative _bucket lines plus _sum and _count.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace loom::metrics {

// Label name and value pairs, written in this order. Names must be valid Prometheus label names
// (the caller's constants); values are escaped.
using Labels = std::vector<std::pair<std::string, std::string>>;

// A label value as the format wants it: backslash, double quote and line feed escaped.
std::string escape_label_value(std::string_view value);
// HELP text: backslash and line feed escaped.
std::string escape_help(std::string_view text);
// A sample value: the shortest decimal that reads back as the same double, "+Inf", "-Inf", "NaN".
std::string format_value(double value);

enum class MetricType { counter, gauge, histogram };

// Builds one exposition text. Every family is announced once (family()), its samples follow.
class ExpositionWriter {
 public:
  // "# HELP name help" and "# TYPE name type".
  void family(std::string_view name, MetricType type, std::string_view help);
  // "name{labels} value"; `name` may carry a suffix of its family (_bucket, _sum, _count).
  void sample(std::string_view name, const Labels& labels, double value);
  void sample(std::string_view name, const Labels& labels, std::uint64_t value);
  // One histogram series: name_bucket{labels,le="b"} with cumulative counts for every bound in
  // `upper_bounds` and for "+Inf", then name_sum and name_count. `counts` holds one count per
  // bound, not cumulative, and a last one for the values above every bound (counts.size() ==
  // upper_bounds.size() + 1); the +Inf bucket and _count are their total, so the series is
  // consistent whatever the caller's own total says.
  void histogram(std::string_view name, const Labels& labels, std::span<const double> upper_bounds,
                 std::span<const std::uint64_t> counts, double sum);

  const std::string& text() const noexcept { return text_; }
  std::string take() noexcept { return std::move(text_); }

 private:
  void series(std::string_view name, const Labels& labels, std::string_view extra_label_name,
              std::string_view extra_label_value);
  std::string text_;
};

}  // namespace loom::metrics
