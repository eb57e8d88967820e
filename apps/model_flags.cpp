// Parsing of the shared model flags (see model_flags.hpp).
#include "model_flags.hpp"

#include <algorithm>
#include <cctype>

#include "cli_support.hpp"

namespace loom::cli {
namespace {

// A whole number, optionally signed, filling the whole text.
bool parse_integer(const std::string& text, std::int64_t& value) {
  if (text.empty()) return false;
  std::size_t start = (text[0] == '-' || text[0] == '+') ? 1 : 0;
  if (start == text.size() || text.find_first_not_of("0123456789", start) != std::string::npos) return false;
  try {
    std::size_t used = 0;
    value = std::stoll(text, &used);
    return used == text.size();
  } catch (const std::exception&) {
    return false;
  }
}

bool parse_positive(const std::string& text, std::int64_t& value) {
  return text.find_first_of("+-") == std::string::npos && parse_integer(text, value) && value >= 1;
}

Shape parse_dims(const std::string& text, const std::string& flag, const std::string& item) {
  std::vector<std::int64_t> dims;
  std::size_t begin = 0;
  while (true) {
    const std::size_t end = text.find_first_of("xX", begin);
    const std::string part = text.substr(begin, end == std::string::npos ? std::string::npos : end - begin);
    std::int64_t dim = 0;
    if (!parse_positive(part, dim))
      throw UsageError(flag + ": '" + item + "': expected dims like 1x3x224x224 (whole numbers >= 1), got '" + part +
                       "'");
    dims.push_back(dim);
    if (end == std::string::npos) break;
    begin = end + 1;
  }
  return Shape(std::move(dims));
}

}  // namespace

std::map<std::string, std::string> parse_model_settings(const std::vector<std::string>& items,
                                                        const std::string& flag) {
  std::map<std::string, std::string> settings;
  for (const auto& item : items) {
    const std::size_t eq = item.rfind('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == item.size())
      throw UsageError(flag + ": expected MODEL=VALUE, got '" + item + "'");
    const std::string model = item.substr(0, eq);
    if (!settings.emplace(model, item.substr(eq + 1)).second)
      throw UsageError(flag + ": model '" + model + "' is given twice");
  }
  return settings;
}

std::map<std::string, std::int64_t> parse_model_integers(const std::vector<std::string>& items,
                                                         const std::string& flag) {
  std::map<std::string, std::int64_t> values;
  for (const auto& [model, text] : parse_model_settings(items, flag)) {
    std::int64_t value = 0;
    if (!parse_integer(text, value))
      throw UsageError(flag + ": '" + model + "=" + text + "': expected a whole number, got '" + text + "'");
    values[model] = value;
  }
  return values;
}

std::map<std::string, Shape> parse_shape_bindings(const std::vector<std::string>& items, const std::string& flag) {
  std::map<std::string, Shape> shapes;
  for (const auto& item : items) {
    const std::size_t colon = item.rfind(':');
    if (colon == std::string::npos || colon == 0 || colon + 1 == item.size())
      throw UsageError(flag + ": expected NAME:DIMS such as images:1x3x224x224, got '" + item + "'");
    const std::string name = item.substr(0, colon);
    if (!shapes.emplace(name, parse_dims(item.substr(colon + 1), flag, item)).second)
      throw UsageError(flag + ": input '" + name + "' is given twice");
  }
  return shapes;
}

std::map<std::string, std::int64_t> parse_dim_bindings(const std::vector<std::string>& items, const std::string& flag) {
  std::map<std::string, std::int64_t> dims;
  for (const auto& item : items) {
    const std::size_t equals = item.rfind('=');
    std::int64_t value = 0;
    if (equals == std::string::npos || equals == 0 || !parse_positive(item.substr(equals + 1), value))
      throw UsageError(flag + ": expected NAME=SIZE with SIZE >= 1, such as batch=8, got '" + item + "'");
    const std::string name = item.substr(0, equals);
    if (!dims.emplace(name, value).second) throw UsageError(flag + ": dimension '" + name + "' is given twice");
  }
  return dims;
}

std::map<std::string, DimRange> parse_dim_ranges(const std::vector<std::string>& items, const std::string& flag) {
  std::map<std::string, DimRange> ranges;
  for (const auto& item : items) {
    const std::size_t equals = item.rfind('=');
    const std::string sizes = equals == std::string::npos ? std::string() : item.substr(equals + 1);
    const std::size_t first = sizes.find(':');
    const std::size_t second = first == std::string::npos ? std::string::npos : sizes.find(':', first + 1);
    DimRange range;
    if (equals == std::string::npos || equals == 0 || second == std::string::npos ||
        !parse_positive(sizes.substr(0, first), range.min) ||
        !parse_positive(sizes.substr(first + 1, second - first - 1), range.opt) ||
        !parse_positive(sizes.substr(second + 1), range.max))
      throw UsageError(flag + ": expected NAME=MIN:OPT:MAX with whole numbers >= 1, such as seq=1:16:128, got '" +
                       item + "'");
    if (range.min > range.opt || range.opt > range.max)
      throw UsageError(flag + ": '" + item + "': a range needs MIN <= OPT <= MAX");
    const std::string name = item.substr(0, equals);
    if (!ranges.emplace(name, range).second) throw UsageError(flag + ": dimension '" + name + "' is given twice");
  }
  return ranges;
}

std::map<std::string, std::pair<std::int64_t, std::int64_t>> parse_input_ranges(const std::vector<std::string>& items,
                                                                                const std::string& flag) {
  std::map<std::string, std::pair<std::int64_t, std::int64_t>> ranges;
  for (const auto& item : items) {
    const std::size_t comma = item.rfind(',');
    const std::size_t colon = comma == std::string::npos ? std::string::npos : item.rfind(':', comma);
    std::int64_t lo = 0, hi = 0;
    if (colon == std::string::npos || colon == 0 || !parse_integer(item.substr(colon + 1, comma - colon - 1), lo) ||
        !parse_integer(item.substr(comma + 1), hi))
      throw UsageError(flag + ": expected NAME:LO,HI with whole numbers, such as input_ids:0,30522, got '" + item +
                       "'");
    if (lo >= hi) throw UsageError(flag + ": '" + item + "': the range [LO, HI) is empty");
    const std::string name = item.substr(0, colon);
    if (!ranges.emplace(name, std::make_pair(lo, hi)).second)
      throw UsageError(flag + ": input '" + name + "' is given twice");
  }
  return ranges;
}

void apply_input_ranges(Model& model, const std::map<std::string, std::pair<std::int64_t, std::int64_t>>& ranges) {
  for (const auto& input : model.inputs)
    if (auto it = ranges.find(input.name); it != ranges.end())
      model.metadata["input_range:" + input.name] =
          std::to_string(it->second.first) + "," + std::to_string(it->second.second);
}

bool is_batch_dim_name(const std::string& name) {
  if (name == "N" || name == "n") return true;
  std::string lower = name;
  std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
  return lower == "batch" || lower == "batch_size" || lower == "batchsize";
}

std::string describe_declared_input(const ValueInfo& input) {
  // 1x3x224x224 when all dims are fixed, "batch x 3 x height x width" when some are named.
  const bool any_symbolic = std::any_of(input.shape.begin(), input.shape.end(), [](std::int64_t d) { return d < 0; });
  std::string dims;
  for (std::size_t axis = 0; axis < input.shape.rank(); ++axis) {
    if (axis) dims += any_symbolic ? " x " : "x";
    const bool symbolic = input.shape[axis] < 0;
    if (!symbolic)
      dims += std::to_string(input.shape[axis]);
    else if (axis < input.dim_params.size() && !input.dim_params[axis].empty())
      dims += input.dim_params[axis];
    else
      dims += "?";
  }
  if (input.shape.rank() == 0) dims = "scalar";
  return input.name + " " + (any_symbolic ? "(" + dims + ")" : dims) + " " + std::string(dtype_name(input.dtype));
}

}  // namespace loom::cli
