// Prometheus text exposition format 0.0.4 (the format every Prometheus server scrapes).
#include "metrics/exposition.hpp"

#include <charconv>
#include <cmath>

#include "loom/error.hpp"

namespace loom::metrics {
namespace {

std::string_view type_name(MetricType type) {
  switch (type) {
    case MetricType::counter:
      return "counter";
    case MetricType::gauge:
      return "gauge";
    case MetricType::histogram:
      return "histogram";
  }
  return "untyped";
}

std::string escape(std::string_view text, bool quote) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    if (c == '\\')
      out += "\\\\";
    else if (c == '\n')
      out += "\\n";
    else if (quote && c == '"')
      out += "\\\"";
    else
      out += c;
  }
  return out;
}

}  // namespace

std::string escape_label_value(std::string_view value) { return escape(value, true); }

std::string escape_help(std::string_view text) { return escape(text, false); }

std::string format_value(double value) {
  if (std::isnan(value)) return "NaN";
  if (std::isinf(value)) return value > 0 ? "+Inf" : "-Inf";
  // The shortest digits that read back as the same double, written plainly (0.0001, 2.5, 1500)
  // where that stays short, else in exponent form (1e-07, 2.5e+20).
  const double magnitude = std::fabs(value);
  const bool plain = value == 0 || (magnitude >= 1e-5 && magnitude < 1e15);
  char buffer[64];
  const auto [end, error] = std::to_chars(buffer, buffer + sizeof buffer, value,
                                          plain ? std::chars_format::fixed : std::chars_format::scientific);
  if (error != std::errc()) throw Error(ErrorCode::internal, "format_value: a double did not fit 64 characters");
  return std::string(buffer, end);
}

void ExpositionWriter::family(std::string_view name, MetricType type, std::string_view help) {
  text_ += "# HELP ";
  text_ += name;
  text_ += ' ';
  text_ += escape_help(help);
  text_ += "\n# TYPE ";
  text_ += name;
  text_ += ' ';
  text_ += type_name(type);
  text_ += '\n';
}

void ExpositionWriter::series(std::string_view name, const Labels& labels, std::string_view extra_label_name,
                              std::string_view extra_label_value) {
  text_ += name;
  if (labels.empty() && extra_label_name.empty()) return;
  char separator = '{';
  for (const auto& [label, value] : labels) {
    text_ += separator;
    text_ += label;
    text_ += "=\"";
    text_ += escape_label_value(value);
    text_ += '"';
    separator = ',';
  }
  if (!extra_label_name.empty()) {
    text_ += separator;
    text_ += extra_label_name;
    text_ += "=\"";
    text_ += escape_label_value(extra_label_value);
    text_ += '"';
  }
  text_ += '}';
}

void ExpositionWriter::sample(std::string_view name, const Labels& labels, double value) {
  series(name, labels, {}, {});
  text_ += ' ';
  text_ += format_value(value);
  text_ += '\n';
}

void ExpositionWriter::sample(std::string_view name, const Labels& labels, std::uint64_t value) {
  series(name, labels, {}, {});
  text_ += ' ';
  text_ += std::to_string(value);
  text_ += '\n';
}

void ExpositionWriter::histogram(std::string_view name, const Labels& labels, std::span<const double> upper_bounds,
                                 std::span<const std::uint64_t> counts, double sum) {
  if (counts.size() != upper_bounds.size() + 1)
    throw Error(ErrorCode::internal, "ExpositionWriter::histogram: " + std::string(name) + " has " +
                                         std::to_string(counts.size()) + " counts for " +
                                         std::to_string(upper_bounds.size()) + " bounds (expected one more)");
  const std::string bucket = std::string(name) + "_bucket";
  std::uint64_t cumulative = 0;
  for (std::size_t i = 0; i <= upper_bounds.size(); ++i) {
    cumulative += counts[i];
    series(bucket, labels, "le", i < upper_bounds.size() ? format_value(upper_bounds[i]) : "+Inf");
    text_ += ' ';
    text_ += std::to_string(cumulative);
    text_ += '\n';
  }
  sample(std::string(name) + "_sum", labels, sum);
  sample(std::string(name) + "_count", labels, cumulative);
}

}  // namespace loom::metrics
