// The tools' side of the debug mode (debug_report.hpp): flag wiring and the printed report.
#include "debug_report.hpp"

#include <filesystem>

#include "cli_support.hpp"
#include "loom/onnx.hpp"

namespace loom::cli {

void add_debug_flags(CLI::App& app, DebugFlags& flags) {
  app.add_option("--debug", flags.mode,
                 "Debug mode: off; cpu (run on the CPU backend in f32 instead of --device); compare (run on "
                 "--device and on the CPU, compare every Step's outputs, report the first divergence)")
      ->check(CLI::IsMember({"off", "cpu", "compare"}).description(""))
      ->type_name("off|cpu|compare")
      ->capture_default_str();
  app.add_flag("--debug-compare", flags.compare,
               "Same as --debug=compare: every Step also runs on the CPU and is compared; prints, per model, "
               "\"no divergence\" or the first Step that differs (node, op, values, the request's inputs); exit 3 "
               "when one does");
  app.add_option("--debug-tolerance", flags.tolerance,
                 "Compare mode: an element differs where |device - cpu| > ABS + REL * |cpu| (default 1e-4,1e-3 for "
                 "f32, 2e-2,2e-2 for f16)")
      ->delimiter(',')
      ->expected(2)
      ->check(non_negative_number())
      ->type_name("ABS,REL");
}

void apply_debug_flags(const DebugFlags& flags, ExecutorOptions& options) {
  try {
    options.debug = debug_mode_from_name(flags.mode);
  } catch (const Error& e) {
    throw UsageError(std::string("--debug: ") + e.what());
  }
  if (flags.compare) {
    if (options.debug == DebugMode::cpu) throw UsageError("--debug-compare and --debug=cpu: give one of them");
    options.debug = DebugMode::compare;
  }
  if (flags.tolerance.empty()) return;
  if (flags.tolerance.size() != 2) throw UsageError("--debug-tolerance: expected ABS,REL");
  if (options.debug != DebugMode::compare) throw UsageError("--debug-tolerance applies to --debug-compare");
  options.debug_tolerance = DebugTolerance{flags.tolerance[0], flags.tolerance[1]};
}

bool print_debug_report(std::FILE* out, const DebugReport& report) {
  if (report.mode != DebugMode::compare) return false;
  bool diverged = false;
  std::fprintf(out, "\n=== Debug compare (tolerance |device - cpu| <= %g + %g * |cpu|) ===\n", report.tolerance.abs,
               report.tolerance.rel);
  for (const DebugModelSummary& model : report.models) {
    std::fprintf(out, "%s\n", format_debug_summary(model, report).c_str());
    diverged |= model.divergent_requests > 0;
  }
  for (const DebugModelSummary& model : report.models) {
    for (const DebugDivergence& divergence : report.divergences) {
      if (divergence.model != model.model) continue;
      std::fprintf(out, "%s", format_divergence(divergence).c_str());
      break;
    }
  }
  std::fflush(out);
  return diverged;
}

void write_divergence_inputs(const DebugDivergence& divergence, const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (!std::filesystem::is_directory(dir))
    throw Error(ErrorCode::invalid_argument, "cannot create the folder '" + dir + "' for the divergent inputs");
  for (std::size_t i = 0; i < divergence.inputs.size(); ++i) {
    const std::string name = i < divergence.input_names.size() ? divergence.input_names[i] : "";
    write_tensor_pb((std::filesystem::path(dir) / ("input_" + std::to_string(i) + ".pb")).string(),
                    divergence.inputs[i], name);
  }
}

}  // namespace loom::cli
