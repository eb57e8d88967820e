// loom_decode_bench (issue 6, item 5): microseconds per decoding step of Loom's device loops
// (persistent kernel, CUDA graph with a WHILE node) against the host loop and, on CUDA, cuDNN's RNN
// stepped one token per call, cuDNN over the whole teacher-forced sequence, and the weight-read
// bound (recurrent weight bytes ÷ the copy bandwidth measured in the same run), side by side for
// every batch × hidden size, as a table and optionally as JSON.
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <map>
#include <optional>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "cli_support.hpp"
#include "loom/decode.hpp"
#include "loom/tensor.hpp"
#ifdef LOOM_HAVE_CUDA
#include "decode_cudnn_baselines.hpp"
#endif

namespace cli = loom::cli;
namespace dec = loom::decode;

namespace {

// Column names, in table order: Loom's methods, then the CUDA-only baselines.
const std::vector<std::string> kLoomMethods = {"persistent", "graph", "host_loop"};
const std::vector<std::string> kCudaBaselines = {"cudnn_step", "cudnn_sequence", "weight_read_bound"};
// Large enough to stream from HBM, not from the 50-60 MB L2 of an H100/H200.
constexpr std::size_t kCopyProbeBytes = std::size_t{256} << 20;

struct Options {
  std::string device = "auto";
  std::string cell = "lstm";
  std::string kind = "recurrent";
  std::vector<int> batches;  // empty: the device's default sweep
  std::vector<int> hiddens;  //
  int steps = 0;             // 0: the device's default
  std::string dtype;         // empty: f16 on CUDA, f32 on the CPU
  std::vector<std::string> methods = {"all"};
  int repeats = 0;  // 0: the device's default
  int warmup = -1;  // -1: the device's default
  int layers = 1;
  int vocab = 1000;
  std::uint64_t seed = 1;
  std::string json;  // FILE, "-" for stdout, empty for none
};

struct Row {
  int batch = 0;
  int hidden = 0;
  std::map<std::string, double> us_per_step;
  std::uint64_t recurrent_weight_bytes = 0;
  bool weights_on_chip = false;
  std::string automatic;
};

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  const std::size_t n = values.size();
  return n % 2 ? values[n / 2] : 0.5 * (values[n / 2 - 1] + values[n / 2]);
}

// Median wall time in seconds of `run` (which blocks until its sample is complete).
template <class Run>
double median_seconds(int warmup, int repeats, Run&& run) {
  for (int i = 0; i < warmup; ++i) run();
  std::vector<double> seconds;
  seconds.reserve(static_cast<std::size_t>(repeats));
  for (int i = 0; i < repeats; ++i) {
    const auto start = std::chrono::steady_clock::now();
    run();
    seconds.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  return median(std::move(seconds));
}

// Seeded weights of PyTorch's initial magnitude (uniform in ±1/sqrt(hidden)), so gates neither
// saturate nor vanish and the timed arithmetic is on ordinary values.
void fill_uniform(loom::Tensor& tensor, float bound, std::mt19937_64& rng) {
  std::uniform_real_distribution<float> uniform(-bound, bound);
  for (float& value : tensor.values<float>()) value = uniform(rng);
}

dec::CellStack make_cells(dec::CellType type, int input, int hidden, int layers, std::mt19937_64& rng) {
  dec::CellStack cells;
  cells.type = type;
  cells.input_size = input;
  cells.hidden_size = hidden;
  const std::int64_t gates = type == dec::CellType::lstm ? 4 : 3;
  const float bound = 1.0f / std::sqrt(static_cast<float>(hidden));
  for (int l = 0; l < layers; ++l) {
    dec::CellLayer layer;
    layer.w = loom::Tensor(loom::DType::f32, {gates * hidden, l == 0 ? input : hidden});
    layer.r = loom::Tensor(loom::DType::f32, {gates * hidden, hidden});
    layer.b = loom::Tensor(loom::DType::f32, {2 * gates * hidden});
    fill_uniform(layer.w, bound, rng);
    fill_uniform(layer.r, bound, rng);
    fill_uniform(layer.b, bound, rng);
    cells.layers.push_back(std::move(layer));
  }
  return cells;
}

// Host bytes of `count` uniform values in [-1, 1] stored as `dtype` (f32 or f16).
std::vector<std::byte> random_activations(std::size_t count, loom::DType dtype, std::mt19937_64& rng) {
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  std::vector<std::byte> bytes(count * loom::dtype_size(dtype));
  for (std::size_t i = 0; i < count; ++i) {
    if (dtype == loom::DType::f16) {
      const loom::f16_t half = loom::float_to_f16(uniform(rng));
      std::memcpy(bytes.data() + 2 * i, &half, 2);
    } else {
      const float value = uniform(rng);
      std::memcpy(bytes.data() + 4 * i, &value, 4);
    }
  }
  return bytes;
}

#ifdef LOOM_HAVE_CUDA
// "cuda:N" → N; "cuda" and "auto" → 0 (the device the engine opens for them).
int cuda_index(const std::string& device) { return device.rfind("cuda:", 0) == 0 ? std::stoi(device.substr(5)) : 0; }
#endif

bool wanted(const std::vector<std::string>& methods, const std::string& name) {
  return std::find(methods.begin(), methods.end(), "all") != methods.end() ||
         std::find(methods.begin(), methods.end(), name) != methods.end();
}

std::optional<double> value_of(const Row& row, const std::string& name) {
  const auto it = row.us_per_step.find(name);
  if (it == row.us_per_step.end()) return std::nullopt;
  return it->second;
}

std::optional<double> ratio(const Row& row, const std::string& numerator, const std::string& denominator) {
  const auto a = value_of(row, numerator), b = value_of(row, denominator);
  if (!a || !b || *b <= 0) return std::nullopt;
  return *a / *b;
}

// The ratios the issue's targets are stated in (host loop ≥ 5× persistent, cuDNN step slower than
// persistent, persistent within 2× of the bound).
const std::vector<std::array<std::string, 3>> kRatios = {
    {"host_loop/persistent", "host_loop", "persistent"},
    {"cudnn_step/persistent", "cudnn_step", "persistent"},
    {"persistent/bound", "persistent", "weight_read_bound"},
};

std::string cell_text(std::optional<double> value, const char* format) {
  if (!value) return "-";
  char text[32];
  std::snprintf(text, sizeof text, format, *value);
  return text;
}

void print_table(std::FILE* out, const std::vector<Row>& rows, const std::vector<std::string>& columns) {
  const auto has = [&](const std::string& name) {
    return std::find(columns.begin(), columns.end(), name) != columns.end();
  };
  std::vector<std::array<std::string, 3>> ratios;  // those whose both columns this run measures
  for (const auto& r : kRatios)
    if (has(r[1]) && has(r[2])) ratios.push_back(r);
  std::fprintf(out, "%6s %7s", "batch", "hidden");
  for (const auto& c : columns) std::fprintf(out, " %17s", c.c_str());
  for (const auto& r : ratios) std::fprintf(out, " %21s", r[0].c_str());
  std::fprintf(out, "  %s\n", "automatic (weights on chip)");
  for (const Row& row : rows) {
    std::fprintf(out, "%6d %7d", row.batch, row.hidden);
    for (const auto& c : columns) std::fprintf(out, " %17s", cell_text(value_of(row, c), "%.2f").c_str());
    for (const auto& r : ratios) std::fprintf(out, " %21s", cell_text(ratio(row, r[1], r[2]), "%.2fx").c_str());
    std::fprintf(out, "  %s (%s)\n", row.automatic.c_str(), row.weights_on_chip ? "yes" : "no");
  }
}

int run_bench(Options options) {
  dec::DecodeEngine engine(options.device);
  const bool on_cuda = engine.backend_name() == "cuda";

  // Defaults follow the device: the CPU reference is slow, so its sweep stays small enough for ctest.
  if (options.batches.empty()) options.batches = on_cuda ? std::vector<int>{1, 8, 64} : std::vector<int>{1, 8};
  if (options.hiddens.empty())
    options.hiddens = on_cuda ? std::vector<int>{128, 1024, 2048} : std::vector<int>{128, 256};
  if (options.steps == 0) options.steps = on_cuda ? 64 : 16;
  if (options.dtype.empty()) options.dtype = on_cuda ? "f16" : "f32";
  if (options.repeats == 0) options.repeats = on_cuda ? 20 : 5;
  if (options.warmup < 0) options.warmup = on_cuda ? 3 : 1;
  const loom::DType dtype = loom::dtype_from_name(options.dtype);
  if (dtype != loom::DType::f32 && dtype != loom::DType::f16)
    throw cli::UsageError("--dtype must be f32 or f16, not " + options.dtype);
  if (!on_cuda && dtype == loom::DType::f16)
    throw cli::UsageError("--dtype=f16 needs the CUDA backend; the CPU decoders compute in f32");
  const dec::CellType cell = options.cell == "gru" ? dec::CellType::gru : dec::CellType::lstm;
  const bool greedy = options.kind == "greedy";

  const bool cuda_baselines = on_cuda;
#ifndef LOOM_HAVE_CUDA
  if (on_cuda) throw cli::UsageError("the engine runs on CUDA but the bench was built without it");
#endif

  // The columns this run can fill, in table order.
  std::vector<std::string> columns;
  for (const auto& m : kLoomMethods)
    if (wanted(options.methods, m)) columns.push_back(m);
  if (cuda_baselines)
    for (const auto& m : kCudaBaselines)
      if (wanted(options.methods, m)) columns.push_back(m);

  double copy_bandwidth = 0;  // bytes read + written per second
#ifdef LOOM_HAVE_CUDA
  if (cuda_baselines && wanted(options.methods, "weight_read_bound")) {
    std::fprintf(stderr, "decode-bench: measuring device copy bandwidth (%zu MiB)\n", kCopyProbeBytes >> 20);
    copy_bandwidth = loom::bench::decode::measure_copy_bandwidth(cuda_index(options.device), kCopyProbeBytes, 10);
    std::fprintf(stderr, "decode-bench: %.1f GB/s\n", copy_bandwidth * 1e-9);
  }
#endif

  std::vector<Row> rows;
  const std::size_t total = options.batches.size() * options.hiddens.size();
  std::mt19937_64 rng(options.seed);
  for (const int hidden : options.hiddens) {
    for (const int batch : options.batches) {
      Row row;
      row.batch = batch;
      row.hidden = hidden;
      std::fprintf(stderr, "decode-bench: [%zu/%zu] batch %d hidden %d\n", rows.size() + 1, total, batch, hidden);

      dec::DecoderOptions decoder_options;
      decoder_options.name = "bench_b" + std::to_string(batch) + "_h" + std::to_string(hidden);
      decoder_options.dtype = dtype;
      decoder_options.max_batch = batch;
      dec::DecoderId id = 0;
      if (greedy) {
        dec::GreedySpec spec;
        spec.cells = make_cells(cell, hidden, hidden, options.layers, rng);
        spec.embedding = loom::Tensor(loom::DType::f32, {options.vocab, hidden});
        spec.projection = loom::Tensor(loom::DType::f32, {options.vocab, hidden});
        fill_uniform(spec.embedding, 1.0f, rng);
        fill_uniform(spec.projection, 1.0f / std::sqrt(static_cast<float>(hidden)), rng);
        spec.end_token = -1;  // every row runs the full length: a fixed number of steps to divide by
        id = engine.add(spec, decoder_options);
      } else {
        id = engine.add(dec::RecurrentSpec{make_cells(cell, hidden, hidden, options.layers, rng)}, decoder_options);
      }
      const dec::DecoderInfo info = engine.info(id);
      row.recurrent_weight_bytes = info.recurrent_weight_bytes;
      row.weights_on_chip = info.weights_on_chip;
      row.automatic = std::string(dec::method_name(info.method));

      // Device buffers of one sample, filled once: the timed runs pass only their addresses.
      const std::size_t rows_total = static_cast<std::size_t>(options.steps) * batch;
      dec::DeviceBuffer input, output;
      if (greedy) {
        std::uniform_int_distribution<std::int32_t> token(0, options.vocab - 1);
        std::vector<std::int32_t> first(static_cast<std::size_t>(batch));
        for (auto& t : first) t = token(rng);
        input = engine.allocate(first.size() * sizeof(std::int32_t));
        engine.upload(input, first.data(), input.bytes());
        output = engine.allocate(rows_total * sizeof(std::int32_t));
      } else {
        const auto x = random_activations(rows_total * hidden, dtype, rng);
        input = engine.allocate(x.size());
        engine.upload(input, x.data(), x.size());
        output = engine.allocate(rows_total * hidden * loom::dtype_size(dtype));
      }
      dec::DecodeArgs args;
      args.batch = batch;
      args.steps = options.steps;
      args.input = input.data();
      args.output = output.data();

      for (const auto& name : kLoomMethods) {
        if (!wanted(options.methods, name)) continue;
        const dec::DecodeMethod method = dec::method_from_name(name);
        if (std::find(info.methods.begin(), info.methods.end(), method) == info.methods.end()) {
          std::fprintf(stderr, "decode-bench:   %s: not offered for this decoder here, skipped\n", name.c_str());
          continue;
        }
        int steps_run = 0;
        const double seconds = median_seconds(options.warmup, options.repeats,
                                              [&] { steps_run = engine.run(id, args, method).get().steps_run; });
        if (steps_run <= 0) throw loom::Error(loom::ErrorCode::internal, "decode-bench: " + name + " ran no steps");
        row.us_per_step[name] = seconds * 1e6 / steps_run;
        std::fprintf(stderr, "decode-bench:   %-17s %10.2f us/step\n", name.c_str(), row.us_per_step[name]);
      }

#ifdef LOOM_HAVE_CUDA
      if (cuda_baselines && (wanted(options.methods, "cudnn_step") || wanted(options.methods, "cudnn_sequence"))) {
        // The recurrence alone, same sizes and dtype: a greedy decoder's embedding, projection and
        // argmax have no cuDNN counterpart, so for --kind greedy these columns are lower bounds.
        loom::bench::decode::RnnShape shape;
        shape.gru = cell == dec::CellType::gru;
        shape.layers = options.layers;
        shape.input_size = hidden;
        shape.hidden_size = hidden;
        shape.batch = batch;
        shape.steps = options.steps;
        shape.f16 = dtype == loom::DType::f16;
        loom::bench::decode::CudnnRnn rnn(cuda_index(options.device), shape, options.seed);
        if (wanted(options.methods, "cudnn_step")) {
          row.us_per_step["cudnn_step"] =
              median_seconds(options.warmup, options.repeats, [&] { rnn.run_stepwise(); }) * 1e6 / options.steps;
          std::fprintf(stderr, "decode-bench:   %-17s %10.2f us/step\n", "cudnn_step", row.us_per_step["cudnn_step"]);
        }
        if (wanted(options.methods, "cudnn_sequence")) {
          row.us_per_step["cudnn_sequence"] =
              median_seconds(options.warmup, options.repeats, [&] { rnn.run_sequence(); }) * 1e6 / options.steps;
          std::fprintf(stderr, "decode-bench:   %-17s %10.2f us/step\n", "cudnn_sequence",
                       row.us_per_step["cudnn_sequence"]);
        }
      }
#endif
      if (copy_bandwidth > 0 && info.recurrent_weight_bytes > 0)
        row.us_per_step["weight_read_bound"] = static_cast<double>(info.recurrent_weight_bytes) / copy_bandwidth * 1e6;
      rows.push_back(std::move(row));
    }
  }

  // With --json - the document owns stdout and the table moves to stderr.
  std::FILE* table_out = options.json == "-" ? stderr : stdout;
  std::fprintf(table_out, "loom_decode_bench: %s (%s), %s %s, %s, %d layer(s), %d steps, median of %d; us per step\n",
               engine.backend_name().c_str(), engine.device_name().c_str(), options.cell.c_str(), options.kind.c_str(),
               options.dtype.c_str(), options.layers, options.steps, options.repeats);
  print_table(table_out, rows, columns);
  if (copy_bandwidth > 0)
    std::fprintf(table_out, "weight_read_bound: recurrent weight bytes / %.1f GB/s (device copy, read + written)\n",
                 copy_bandwidth * 1e-9);

  if (!options.json.empty()) {
    nlohmann::json doc;
    doc["device"] = engine.device_name();
    doc["backend"] = engine.backend_name();
    doc["dtype"] = options.dtype;
    doc["cell"] = options.cell;
    doc["kind"] = options.kind;
    doc["steps"] = options.steps;
    doc["layers"] = options.layers;
    doc["repeats"] = options.repeats;
    doc["warmup"] = options.warmup;
    if (greedy) doc["vocab"] = options.vocab;
    if (copy_bandwidth > 0) doc["copy_bandwidth_bytes_per_s"] = copy_bandwidth;
    doc["rows"] = nlohmann::json::array();
    for (const Row& row : rows) {
      nlohmann::json r;
      r["batch"] = row.batch;
      r["hidden"] = row.hidden;
      r["us_per_step"] = nlohmann::json::object();
      for (const auto& [name, value] : row.us_per_step) r["us_per_step"][name] = value;
      r["ratios"] = nlohmann::json::object();
      for (const auto& ratio_spec : kRatios)
        if (const auto value = ratio(row, ratio_spec[1], ratio_spec[2])) r["ratios"][ratio_spec[0]] = *value;
      r["recurrent_weight_bytes"] = row.recurrent_weight_bytes;
      r["weights_on_chip"] = row.weights_on_chip;
      r["automatic"] = row.automatic;
      doc["rows"].push_back(std::move(r));
    }
    const std::string text = doc.dump(2) + "\n";
    if (options.json == "-") {
      std::fwrite(text.data(), 1, text.size(), stdout);
    } else {
      std::ofstream file(options.json);
      file << text;
      if (!file) throw std::runtime_error("cannot write " + options.json);
    }
  }
  return 0;
}

const char* const kFooter = R"(
Examples:
  loom_decode_bench                                    default sweep on the default device
  loom_decode_bench --device=cuda --hidden=1024 --batch=1 --steps=256 --json=-
  loom_decode_bench --cell=gru --kind=greedy --dtype=f32 --methods=persistent,graph,host_loop
)";

}  // namespace

int main(int argc, char** argv) {
  Options options;
  CLI::App app{
      "Microseconds per decoding step of Loom's device loops against the host loop, cuDNN and the\n"
      "weight-read bound, for every batch x hidden size.",
      "loom_decode_bench"};
  app.footer(kFooter);
  app.get_formatter()->column_width(32);
  app.option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  std::vector<std::string> method_names = {"all"};
  for (const auto& m : kLoomMethods) method_names.push_back(m);
  for (const auto& m : kCudaBaselines) method_names.push_back(m);

  try {
    app.add_option("--device", options.device, "auto, cpu, cuda or cuda:N")
        ->check(cli::device_name())
        ->capture_default_str();
    app.add_option("--cell", options.cell, "lstm or gru")
        ->check(CLI::IsMember({"lstm", "gru"}).description(""))
        ->capture_default_str();
    app.add_option("--kind", options.kind,
                   "recurrent (a sequence in, h(t) out) or greedy (token fed back through embedding, "
                   "projection and argmax)")
        ->check(CLI::IsMember({"recurrent", "greedy"}).description(""))
        ->capture_default_str();
    app.add_option("--batch", options.batches, "Batch sizes, comma list (default: 1,8,64 on CUDA, 1,8 on the CPU)")
        ->delimiter(',')
        ->check(CLI::Range(1, 64))
        ->type_name("N[,...]");
    app.add_option("--hidden", options.hiddens,
                   "Hidden sizes, comma list (default: 128,1024,2048 on CUDA, 128,256 on the CPU)")
        ->delimiter(',')
        ->check(CLI::Range(1, 1 << 16))
        ->type_name("N[,...]");
    app.add_option("--steps", options.steps, "Steps per sample (default: 64 on CUDA, 16 on the CPU)")
        ->check(cli::positive_integer())
        ->type_name("N");
    app.add_option("--dtype", options.dtype, "f32 or f16 (default: f16 on CUDA, f32 on the CPU)")
        ->check(CLI::IsMember({"f32", "f16"}).description(""));
    app.add_option("--methods", options.methods,
                   "Columns to measure, comma list: all, persistent, graph, host_loop, cudnn_step, "
                   "cudnn_sequence, weight_read_bound (the last three on CUDA only)")
        ->delimiter(',')
        ->check(CLI::IsMember(method_names).description(""))
        ->type_name("NAME[,...]")
        ->capture_default_str();
    app.add_option("--repeats", options.repeats,
                   "Timed samples per method; the median counts (default: 20 CUDA, 5 CPU)")
        ->check(cli::positive_integer())
        ->type_name("N");
    app.add_option("--warmup", options.warmup, "Untimed samples per method first (default: 3 CUDA, 1 CPU)")
        ->check(CLI::NonNegativeNumber)
        ->type_name("N");
    app.add_option("--layers", options.layers, "Stacked cell layers")
        ->check(cli::positive_integer())
        ->capture_default_str();
    app.add_option("--vocab", options.vocab, "Vocabulary of --kind greedy")
        ->check(cli::positive_integer())
        ->capture_default_str();
    app.add_option("--seed", options.seed, "Seed of the random weights and inputs")->capture_default_str();
    app.add_option("--json", options.json, "Also write the results as JSON to FILE, or to stdout with -")
        ->type_name("FILE|-");
  } catch (const std::exception& e) {
    std::fprintf(stderr, "loom_decode_bench: error: %s\n", e.what());
    return 1;
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  return cli::run_guarded("loom_decode_bench", [&] { return run_bench(options); });
}
