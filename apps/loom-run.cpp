// loom-run: runs one ONNX model once (or --iterations times) on inputs read from files and writes
// its outputs as ONNX TensorProto files, like the ONNX test-data layout; --check also runs the
// CPU backend and compares every output against it; --debug-compare compares every Step.
#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <numeric>
#include <string>
#include <vector>

#include "cli_support.hpp"
#include "debug_report.hpp"
#include "loom/loom.hpp"
#include "model_flags.hpp"
#include "placement_flags.hpp"

namespace cli = loom::cli;
namespace fs = std::filesystem;

namespace {

// Exit status when --check finds an output beyond tolerance, or --debug-compare a Step (errors
// exit 1, bad flags 2).
constexpr int kCheckFailed = 3;

struct RunOptions {
  std::string onnx;
  // One request per --input-dir, its outputs into the --output-dir at the same position.
  std::vector<std::string> input_dirs;
  std::vector<std::string> output_dirs;
  std::string device = "auto";
  bool check = false;
  double rtol = 1e-4;
  double atol = 1e-5;
  std::vector<std::string> shapes;
  std::vector<std::string> dims;
  std::vector<std::string> dim_ranges;  // LoadOptions::dim_ranges
  std::size_t iterations = 1;
  int persistent_grid_max_sms = 0;  // LoadOptions::persistent_grid_max_sms
  std::size_t threads = 0;          // ExecutorOptions::cpu_threads
  bool list_devices = false;
  cli::DebugFlags debug;
  std::string debug_inputs;  // where to write the inputs of a divergent request
  cli::PlacementFlags placement;
  std::string placement_report;  // --placement-report FILE
};

int list_devices() {
  loom::ExecutorOptions cpu;
  cpu.device = "cpu";
  cpu.profile = "none";
  std::printf("cpu\t%s\n", loom::Executor(cpu).device_name().c_str());
  cpu.device = "cpu:accel";
  std::printf("cpu:accel\t%s\n", loom::Executor(cpu).device_name().c_str());
  for (int i = 0; i < loom::cuda_device_count(); ++i) {
    loom::ExecutorOptions cuda;
    cuda.device = "cuda:" + std::to_string(i);
    cuda.profile = "none";
    std::printf("cuda:%d\t%s\n", i, loom::Executor(cuda).device_name().c_str());
  }
  return 0;
}

// input_<i>.pb or input_<i>.npy in `dir`: the one that exists, "" when neither does.
fs::path input_file(const fs::path& dir, std::size_t index) {
  const fs::path pb = dir / ("input_" + std::to_string(index) + ".pb");
  const fs::path npy = dir / ("input_" + std::to_string(index) + ".npy");
  const bool has_pb = fs::exists(pb), has_npy = fs::exists(npy);
  if (has_pb && has_npy) throw cli::UsageError("both " + pb.string() + " and " + npy.string() + " exist; keep one");
  return has_pb ? pb : has_npy ? npy : fs::path();
}

std::string declared_inputs(const loom::Model& model) {
  std::string text;
  for (std::size_t i = 0; i < model.inputs.size(); ++i)
    text += "\n  input_" + std::to_string(i) + ": " + cli::describe_declared_input(model.inputs[i]);
  return text;
}

// Reads one file per model input, in the model's input order, and checks each against the
// declaration: dtype, rank, fixed dims, and the same size wherever a symbolic dim name repeats.
std::vector<loom::Tensor> read_inputs(const loom::Model& model, const fs::path& dir) {
  if (!fs::is_directory(dir)) throw cli::UsageError("--input-dir: '" + dir.string() + "' is not a directory");
  std::vector<loom::Tensor> inputs;
  std::map<std::string, std::pair<std::int64_t, std::string>> symbolic;  // dim name -> size, where seen
  for (std::size_t i = 0; i < model.inputs.size(); ++i) {
    const auto& declared = model.inputs[i];
    const fs::path path = input_file(dir, i);
    if (path.empty())
      throw cli::UsageError("missing input file " + (dir / ("input_" + std::to_string(i) + ".pb")).string() +
                            " (or .npy) for input '" + declared.name + "'; the model takes " +
                            std::to_string(model.inputs.size()) + " input(s):" + declared_inputs(model));
    std::string stored_name;
    loom::Tensor tensor =
        path.extension() == ".npy" ? loom::read_npy(path.string()) : loom::read_tensor_pb(path.string(), &stored_name);
    const std::string where = path.filename().string() + " (input '" + declared.name + "')";
    if (!stored_name.empty() && stored_name != declared.name)
      std::fprintf(stderr, "loom-run: note: %s names its tensor '%s'; inputs are matched by position\n",
                   path.filename().string().c_str(), stored_name.c_str());
    if (tensor.dtype() != declared.dtype)
      throw loom::Error(loom::ErrorCode::dtype_mismatch,
                        where + " holds " + std::string(loom::dtype_name(tensor.dtype())) + ", the model expects " +
                            std::string(loom::dtype_name(declared.dtype)));
    const auto& shape = tensor.shape();
    bool fits = shape.rank() == declared.shape.rank();
    for (std::size_t axis = 0; fits && axis < shape.rank(); ++axis) {
      if (declared.shape[axis] >= 0) {
        fits = shape[axis] == declared.shape[axis];
        continue;
      }
      const std::string dim = axis < declared.dim_params.size() ? declared.dim_params[axis] : "";
      if (dim.empty()) continue;
      auto [it, added] = symbolic.emplace(dim, std::make_pair(shape[axis], where));
      if (!added && it->second.first != shape[axis])
        throw loom::Error(loom::ErrorCode::shape_mismatch, where + " has " + dim + " = " + std::to_string(shape[axis]) +
                                                               " but " + it->second.second + " has " + dim + " = " +
                                                               std::to_string(it->second.first));
    }
    if (!fits)
      throw loom::Error(
          loom::ErrorCode::shape_mismatch,
          where + " has shape " + shape.to_string() + ", the model declares " + cli::describe_declared_input(declared));
    inputs.push_back(std::move(tensor));
  }
  for (std::size_t extra = model.inputs.size();; ++extra) {
    const fs::path path = input_file(dir, extra);
    if (path.empty()) break;
    throw cli::UsageError(path.string() + " exists but the model takes only " + std::to_string(model.inputs.size()) +
                          " input(s):" + declared_inputs(model));
  }
  return inputs;
}

// With --dim-range the ranged dims stay open at load (each request's files give their sizes);
// without, the first request's files bind every symbolic dim.
loom::OptimizeOptions bindings(const RunOptions& options, const loom::Model& model,
                               const std::vector<loom::Tensor>& inputs, bool ranged) {
  loom::OptimizeOptions optimize;
  optimize.input_shapes = cli::parse_shape_bindings(options.shapes, "--shapes");
  optimize.dim_values = cli::parse_dim_bindings(options.dims, "--dims");
  for (const auto& [name, shape] : optimize.input_shapes) {
    auto it = std::find_if(model.inputs.begin(), model.inputs.end(), [&](const auto& in) { return in.name == name; });
    if (it == model.inputs.end())
      throw cli::UsageError("--shapes: the model has no input '" + name + "'; it takes:" + declared_inputs(model));
    const auto& given = inputs[static_cast<std::size_t>(it - model.inputs.begin())].shape();
    if (given != shape)
      throw cli::UsageError("--shapes: input '" + name + "' is " + shape.to_string() + " there but " +
                            given.to_string() + " in its file");
  }
  if (ranged) return optimize;
  // The files decide every input's shape, and so every symbolic dim the inputs carry.
  for (std::size_t i = 0; i < model.inputs.size(); ++i) optimize.input_shapes[model.inputs[i].name] = inputs[i].shape();
  return optimize;
}

std::vector<loom::Tensor> run_model(loom::Executor& executor, const std::string& name,
                                    const std::vector<loom::Tensor>& inputs, std::size_t iterations,
                                    std::vector<double>* times_ms) {
  loom::Outputs outputs;
  for (std::size_t k = 0; k < iterations; ++k) {
    const auto start = std::chrono::steady_clock::now();
    outputs = executor.submit(name, inputs).get();
    const std::chrono::duration<double, std::milli> took = std::chrono::steady_clock::now() - start;
    if (times_ms) times_ms->push_back(took.count());
  }
  return outputs;
}

// --debug-compare: the per-model line and the first divergence's report; with --debug-inputs, that
// request's inputs written where --input-dir can read them. True when a Step diverged.
bool report_divergence(const loom::DebugReport& report, const std::string& inputs_dir) {
  const bool diverged = cli::print_debug_report(stdout, report);
  if (!diverged || inputs_dir.empty() || report.divergences.empty()) return diverged;
  cli::write_divergence_inputs(report.divergences.front(), inputs_dir);
  std::printf("Wrote the inputs of request %llu to %s (run them again with --input-dir %s)\n",
              static_cast<unsigned long long>(report.divergences.front().request_id), inputs_dir.c_str(),
              inputs_dir.c_str());
  return diverged;
}

// --placement-report: the JSON report (docs/placement.md) and one summary line.
void write_placement_report(const loom::ModelInfo& info, const std::string& path) {
  std::ofstream out(path, std::ios::trunc);
  if (!out) throw cli::UsageError("--placement-report: cannot open '" + path + "' for writing");
  out << loom::placement_report_json(info);
  out.close();
  if (!out) throw loom::Error(loom::ErrorCode::invalid_argument, "--placement-report: writing '" + path + "' failed");
  std::map<std::string, std::size_t> by_processor;
  std::size_t scalar = 0;
  for (const auto& node : info.placement.nodes) {
    ++by_processor[node.processor];
    scalar += node.work_class == loom::WorkClass::scalar ? 1 : 0;
  }
  std::string counts;
  for (const auto& [processor, count] : by_processor)
    counts += (counts.empty() ? "" : ", ") + processor + " " + std::to_string(count);
  std::printf("Placed:  %zu nodes (%zu scalar work), figures from %s: %s; report in %s\n", info.placement.nodes.size(),
              scalar, info.placement.library.c_str(), counts.c_str(), path.c_str());
}

// Writes one request's outputs as output_<i>.pb into `dir` and prints them.
void write_outputs(const loom::Outputs& outputs, const loom::ModelInfo& info, const fs::path& out_dir) {
  if (outputs.size() != info.outputs.size())
    throw loom::Error(loom::ErrorCode::internal, "the model returned " + std::to_string(outputs.size()) +
                                                     " outputs, its info lists " + std::to_string(info.outputs.size()));
  std::error_code ec;
  fs::create_directories(out_dir, ec);
  if (!fs::is_directory(out_dir)) throw cli::UsageError("--output-dir: cannot create '" + out_dir.string() + "'");
  for (std::size_t i = 0; i < outputs.size(); ++i) {
    const fs::path path = out_dir / ("output_" + std::to_string(i) + ".pb");
    loom::write_tensor_pb(path.string(), outputs[i], info.outputs[i].name);
    std::printf("  out  output_%zu %s %s %s\n", i, info.outputs[i].name.c_str(), outputs[i].shape().to_string().c_str(),
                std::string(loom::dtype_name(outputs[i].dtype())).c_str());
  }
  std::printf("Wrote %zu output(s) to %s\n", outputs.size(), out_dir.string().c_str());
}

// --check: `outputs` against the CPU backend's for the same inputs. Returns the outputs beyond
// tolerance.
std::size_t check_against_cpu(const RunOptions& options, loom::Executor& cpu, const std::string& name,
                              const loom::ModelInfo& info, const std::vector<loom::Tensor>& inputs,
                              const loom::Outputs& outputs, bool run_was_on_cpu) {
  const loom::Outputs reference = run_model(cpu, name, inputs, 1, nullptr);
  std::printf("Check against the CPU backend (fails where |out - cpu| > %g + %g * |cpu|)%s:\n", options.atol,
              options.rtol,
              run_was_on_cpu ? "; the run itself was on the CPU, so this only shows it is repeatable" : "");
  std::printf("  %-24s %-16s %12s %12s  %s\n", "output", "shape", "max abs", "max rel", "result");
  std::size_t failed = 0;
  for (std::size_t i = 0; i < outputs.size(); ++i) {
    const std::string& output = info.outputs[i].name;
    if (outputs[i].dtype() != reference[i].dtype() || outputs[i].shape() != reference[i].shape()) {
      std::printf("  %-24s %-16s %12s %12s  FAIL (cpu gives %s %s)\n", output.c_str(),
                  outputs[i].shape().to_string().c_str(), "-", "-", reference[i].shape().to_string().c_str(),
                  std::string(loom::dtype_name(reference[i].dtype())).c_str());
      ++failed;
      continue;
    }
    const loom::TensorDifference d =
        loom::compare_tensors(outputs[i], reference[i], loom::DebugTolerance{options.atol, options.rtol});
    std::printf("  %-24s %-16s %12.4g %12.4g  %s\n", output.c_str(), outputs[i].shape().to_string().c_str(), d.max_abs,
                d.max_rel, d.beyond ? ("FAIL (" + std::to_string(d.beyond) + " elements)").c_str() : "ok");
    if (d.beyond) ++failed;
  }
  return failed;
}

int run(const RunOptions& options) {
  if (options.list_devices) return list_devices();
  if (options.onnx.empty()) throw cli::UsageError("--onnx is required (see --help)");
  if (options.input_dirs.empty()) throw cli::UsageError("--input-dir is required (see --help)");
  if (options.output_dirs.empty()) throw cli::UsageError("--output-dir is required (see --help)");
  if (options.output_dirs.size() != options.input_dirs.size())
    throw cli::UsageError("--output-dir: given " + std::to_string(options.output_dirs.size()) + " time(s) for " +
                          std::to_string(options.input_dirs.size()) + " --input-dir(s); give one per --input-dir");
  // Flag mistakes first, so that they do not wait for a large model to load.
  cli::parse_shape_bindings(options.shapes, "--shapes");
  cli::parse_dim_bindings(options.dims, "--dims");
  const auto dim_ranges = cli::parse_dim_ranges(options.dim_ranges, "--dim-range");
  if (options.input_dirs.size() > 1 && dim_ranges.empty())
    std::printf("Note: several --input-dirs without --dim-range: every request must have the first one's shapes\n");

  const loom::Model model = loom::load_onnx(options.onnx);
  std::vector<std::vector<loom::Tensor>> requests;
  for (const auto& dir : options.input_dirs) requests.push_back(read_inputs(model, dir));
  loom::LoadOptions load;
  load.name = fs::path(options.onnx).stem().string();
  if (load.name.empty()) load.name = "model";
  load.optimize = bindings(options, model, requests.front(), !dim_ranges.empty());
  load.dim_ranges = dim_ranges;
  load.persistent_grid_max_sms = options.persistent_grid_max_sms;

  loom::ExecutorOptions executor_options;
  executor_options.device = options.device;
  executor_options.cpu_threads = options.threads;
  cli::apply_debug_flags(options.debug, executor_options);
  cli::apply_placement_flags(options.placement, load, executor_options);
  if (!options.placement_report.empty() && options.placement.off)
    throw cli::UsageError("--placement-report needs the placement pass; drop --no-placement");
  if (!options.debug_inputs.empty() && executor_options.debug != loom::DebugMode::compare)
    throw cli::UsageError("--debug-inputs applies to --debug-compare");
  loom::Executor executor(executor_options);
  executor.load(model, load);
  const loom::ModelInfo info = executor.model_info(load.name);
  std::printf("Model:   %s (%zu Steps, %.2f MB weights)\nDevice:  %s (backend %s)\n", options.onnx.c_str(),
              info.steps.size(), info.weight_bytes / 1e6, executor.device_name().c_str(),
              executor.backend_name().c_str());
  for (const auto& [dim, range] : info.dim_ranges)
    std::printf("  dim  %s %lld..%lld, planned at opt %lld; arenas sized for max (%.2f MB)\n", dim.c_str(),
                static_cast<long long>(range.min), static_cast<long long>(range.max), static_cast<long long>(range.opt),
                info.activation_bytes / 1e6);
  for (std::size_t i = 0; i < info.inputs.size(); ++i)
    std::printf("  in   input_%zu  %s %s %s\n", i, info.inputs[i].name.c_str(),
                info.inputs[i].shape.to_string().c_str(), std::string(loom::dtype_name(info.inputs[i].dtype)).c_str());
  if (!options.placement_report.empty()) write_placement_report(info, options.placement_report);

  std::vector<loom::Outputs> results;
  for (std::size_t r = 0; r < requests.size(); ++r) {
    std::vector<double> times_ms;
    results.push_back(run_model(executor, load.name, requests[r], options.iterations, &times_ms));
    if (requests.size() > 1) std::printf("Request %zu: %s\n", r, options.input_dirs[r].c_str());
    const double mean = std::accumulate(times_ms.begin(), times_ms.end(), 0.0) / static_cast<double>(times_ms.size());
    write_outputs(results.back(), info, options.output_dirs[r]);
    std::printf("Ran %zu iteration(s): min %.3f ms, mean %.3f ms (submit -> outputs on the host)\n", times_ms.size(),
                *std::min_element(times_ms.begin(), times_ms.end()), mean);
  }
  if (!dim_ranges.empty())
    std::printf("Shape plans: %zu (opt and max at load, then one per new request shape)\n",
                executor.model_info(load.name).shape_plans);
  executor.shutdown();
  const bool diverged = report_divergence(executor.debug_report(), options.debug_inputs);
  if (!options.check) return diverged ? kCheckFailed : 0;

  loom::ExecutorOptions cpu_options;
  cpu_options.device = "cpu";
  cpu_options.profile = "none";
  loom::Executor cpu(cpu_options);
  cpu.load(model, load);
  std::size_t failed = 0, compared = 0;
  for (std::size_t r = 0; r < requests.size(); ++r) {
    failed +=
        check_against_cpu(options, cpu, load.name, info, requests[r], results[r], executor.backend_name() == "cpu");
    compared += results[r].size();
  }
  cpu.shutdown();
  if (failed) {
    std::fprintf(stderr, "loom-run: check failed: %zu of %zu output(s) differ from the CPU backend beyond tolerance\n",
                 failed, compared);
    return kCheckFailed;
  }
  std::printf("Check passed: %zu output(s) within tolerance\n", compared);
  return diverged ? kCheckFailed : 0;
}

const char* kFooter = R"(Input files:
  DIR/input_0.pb, input_1.pb, ... (ONNX TensorProto, as in the ONNX test data) or input_N.npy, one per
  model input in the model's input order. Each input's dtype must be the model's; its shape must
  match the fixed dims and binds the symbolic ones (batch, sequence_length, ...), the first
  --input-dir's for all requests; a dim named by --dim-range stays open instead: each request's files
  give its size, checked against the range.
Output files:
  OUT/output_0.pb, output_1.pb, ... (TensorProto named after the model's outputs), in output order.
Debug mode:
  --debug-compare runs every Step on --device and on the CPU backend (f32) and compares the values
  each Step produced; it prints "no divergence: N Steps compared on <device> against the CPU, max
  abs diff X", or the first Step that differs: its nodes and op types, the blamed node (the first
  of the Step with an output beyond tolerance), the element, both values, max abs/rel difference
  and the request's inputs (--debug-inputs DIR writes them as input_N.pb). --debug=cpu runs the
  model on the CPU backend instead of --device. --device=cpu:accel is a second CPU backend standing
  in for an accelerator (a test and debug device).
Exit status: 0 ok; 1 error (unreadable file, unsupported op, wrong input dtype/shape...); 2 bad
  flags or input files missing/extra; 3 --check found an output beyond tolerance, or
  --debug-compare a Step that differs from the CPU.

Examples:
  loom-run --onnx model.onnx --input-dir test_data_set_0 --output-dir out
  loom-run --onnx model.onnx --input-dir in --output-dir out --device cuda --check --rtol 1e-3
  loom-run --onnx model.onnx --input-dir in --output-dir out --device cuda --debug-compare --debug-inputs bad
  loom-run --onnx yolo.onnx --input-dir in --output-dir out --iterations 20
  loom-run --onnx minilm.onnx --dim-range sequence_length=1:16:128 --dims batch_size=2 \
           --input-dir in8 --output-dir out8 --input-dir in64 --output-dir out64
  loom-run --onnx model.onnx --input-dir in --output-dir out --placement-report placement.json \
           --placement-processors cpu:accel,cpu --placement-th1 1 --placement-th2 200
  loom-run --list-devices)";

}  // namespace

int main(int argc, char** argv) {
  RunOptions options;
  CLI::App app{
      "Runs one ONNX model on inputs read from files and writes its outputs as TensorProto files;\n"
      "--check compares the device's outputs with the CPU backend's.",
      "loom-run"};
  app.footer(kFooter);
  app.get_formatter()->column_width(36);
  try {
    app.set_version_flag("--version", std::string("loom-run ") + loom::version(), "Print the version and exit");
    app.add_option("--onnx", options.onnx, "The ONNX model file (required)")->type_name("FILE");
    app.add_option("--input-dir", options.input_dirs,
                   "Folder holding input_0.pb (or .npy), input_1.pb, ... (required); repeat it to run several "
                   "requests in one executor, in order (with --dim-range, of different sizes)")
        ->allow_extra_args(false)
        ->type_name("DIR");
    app.add_option("--output-dir", options.output_dirs,
                   "Folder to write output_0.pb, ... into; created if missing (required); one per --input-dir")
        ->allow_extra_args(false)
        ->type_name("DIR");
    app.add_option("--device", options.device,
                   "auto (CUDA when a GPU is present, else CPU), cpu, cuda, cuda:N, or cpu:accel (a second CPU "
                   "backend standing in for an accelerator: a test and debug device)")
        ->type_name("auto|cpu|cpu:accel|cuda|cuda:N")
        ->check(cli::device_name())
        ->capture_default_str();
    app.add_flag("--check", options.check,
                 "Also run the model on the CPU backend and print, per output, shape, max abs and max rel "
                 "difference; exit 3 when |out - cpu| > atol + rtol * |cpu| anywhere");
    app.add_option("--rtol", options.rtol, "Relative tolerance of --check")
        ->check(cli::non_negative_number())
        ->type_name("R")
        ->capture_default_str();
    app.add_option("--atol", options.atol, "Absolute tolerance of --check")
        ->check(cli::non_negative_number())
        ->type_name("A")
        ->capture_default_str();
    app.add_option("--shapes", options.shapes,
                   "Expected input shapes, e.g. images:1x3x224x224,ids:2x16; the files must agree (their shapes "
                   "bind the symbolic dims in any case)")
        ->delimiter(',')
        ->type_name("NAME:DIMS[,...]");
    app.add_option("--dims", options.dims,
                   "Sizes of symbolic dims that no input shape fixes (e.g. inside the graph), e.g. batch=1,seq=16; "
                   "a dim with no name (written as -1 or left empty) is called INPUT:AXIS, e.g. x:0=8")
        ->delimiter(',')
        ->type_name("NAME=N[,...]");
    app.add_option("--dim-range", options.dim_ranges,
                   "Leave a symbolic dim open at load within MIN..MAX (planned at OPT; every request's arena "
                   "sized for MAX), e.g. sequence_length=1:16:128; each request's files give its size, and a "
                   "plan per size is made on first use and reused (LoadOptions::dim_ranges)")
        ->delimiter(',')
        ->type_name("NAME=MIN:OPT:MAX[,...]");
    app.add_option("--iterations", options.iterations,
                   "Run the model N times and report min/mean latency (outputs of the last run are written)")
        ->check(cli::positive_integer())
        ->type_name("N")
        ->capture_default_str();
    app.add_option("--persistent-grid-max-sms", options.persistent_grid_max_sms,
                   "Most SMs an LSTM/GRU node's persistent loop may hold, one block each (CUDA); 0 = no cap")
        ->check(cli::non_negative_integer())
        ->type_name("N")
        ->capture_default_str();
    app.add_option("--threads", options.threads,
                   "Threads each CPU kernel may use (the CPU backend's large ops split over them; results are the "
                   "same bits for any count); 0 = the cores this process may use")
        ->check(cli::non_negative_integer())
        ->type_name("N")
        ->capture_default_str();
    cli::add_debug_flags(app, options.debug);
    app.add_option("--debug-inputs", options.debug_inputs,
                   "With --debug-compare: write the inputs of the first request that diverged into DIR as "
                   "input_0.pb, ... (the --input-dir layout)")
        ->type_name("DIR");
    cli::add_placement_flags(app, options.placement);
    app.add_option("--placement-report", options.placement_report,
                   "Write the placement pass's decisions as JSON to FILE: per node its op, class (tensor or scalar "
                   "work), processor, reason and the c = t + a, p = s + o figures on every processor")
        ->type_name("FILE");
    app.add_flag("--list-devices", options.list_devices,
                 "Print the devices this build can run on, one per line (cpu, cuda:0, ...), and exit");
  } catch (const std::exception& e) {
    std::fprintf(stderr, "loom-run: error: %s\n", e.what());
    return 1;
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // --help and --version exit 0; every flag mistake exits 2, as the footer says.
    return app.exit(e) == 0 ? 0 : 2;
  }
  return cli::run_guarded("loom-run", [&] { return run(options); });
}
