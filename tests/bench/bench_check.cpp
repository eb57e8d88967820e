// loom_bench_check: what check_bench_trtexec.cmake needs beyond CMake's string(JSON):
//   make DIR                 writes DIR/mlp.onnx (x [N, 4] f32 -> MatMul -> Add -> y [N, 3]),
//                            DIR/in/input_0.npy (x, 2x4) and DIR/wrong.npy (2x5)
//   same-outputs JSON PB     loom-bench --exportOutput's JSON holds the tensor of loom-run's output
//                            file PB under its name, with the same dimensions and bit-equal values
//   profile PROFILE REPORT   loom-bench --exportProfile's JSON against the --json report of the same
//                            run: per model a head with count = its requests, one entry per Step,
//                            each Step run by every request, times that add up to the head's and fit
//                            inside the requests' compute phase
// Exit status 0 when the check holds, 1 with the reason on stderr otherwise, 2 for bad arguments.
#include <nlohmann/json.hpp>
#include <onnx/onnx_pb.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "loom/onnx.hpp"

namespace fs = std::filesystem;

namespace {

struct CheckFailed : std::runtime_error {
  using std::runtime_error::runtime_error;
};

void require(bool condition, const std::string& what) {
  if (!condition) throw CheckFailed(what);
}

nlohmann::json read_json(const std::string& path) {
  std::ifstream in(path);
  require(static_cast<bool>(in), "cannot read " + path);
  return nlohmann::json::parse(in);
}

// A .npy file (format 1.0) of f32 values in C order.
void write_f32_npy(const fs::path& path, const std::vector<std::int64_t>& shape, const std::vector<float>& values) {
  std::string dims;
  for (std::int64_t d : shape) dims += std::to_string(d) + ", ";
  std::string header = "{'descr': '<f4', 'fortran_order': False, 'shape': (" + dims + "), }";
  header.append(64 - (10 + header.size() + 1) % 64, ' ');  // magic + version + length + header + '\n'
  header += '\n';
  std::ofstream out(path, std::ios::binary);
  out << "\x93NUMPY" << '\x01' << '\x00' << static_cast<char>(header.size() & 0xFF)
      << static_cast<char>(header.size() >> 8) << header;
  out.write(reinterpret_cast<const char*>(values.data()), static_cast<std::streamsize>(values.size() * sizeof(float)));
  require(static_cast<bool>(out), "cannot write " + path.string());
}

void add_tensor_value(onnx::ValueInfoProto* value, const std::string& name, const std::string& batch, int columns) {
  value->set_name(name);
  auto* type = value->mutable_type()->mutable_tensor_type();
  type->set_elem_type(onnx::TensorProto::FLOAT);
  type->mutable_shape()->add_dim()->set_dim_param(batch);
  type->mutable_shape()->add_dim()->set_dim_value(columns);
}

void add_initializer(onnx::GraphProto* graph, const std::string& name, const std::vector<std::int64_t>& dims,
                     const std::vector<float>& values) {
  onnx::TensorProto* tensor = graph->add_initializer();
  tensor->set_name(name);
  tensor->set_data_type(onnx::TensorProto::FLOAT);
  for (std::int64_t d : dims) tensor->add_dims(d);
  for (float v : values) tensor->add_float_data(v);
}

int make(const fs::path& dir) {
  fs::create_directories(dir / "in");
  onnx::ModelProto model;
  model.set_ir_version(8);
  model.add_opset_import()->set_version(17);
  onnx::GraphProto* graph = model.mutable_graph();
  graph->set_name("mlp");
  add_tensor_value(graph->add_input(), "x", "N", 4);
  add_tensor_value(graph->add_output(), "y", "N", 3);
  // Weights with few exact binary digits, so the result does not hide behind rounding.
  add_initializer(graph, "w", {4, 3},
                  {0.5f, -1.0f, 0.25f, 2.0f, 0.75f, -0.5f, -1.5f, 1.0f, 0.125f, 1.0f, -0.25f, 3.0f});
  add_initializer(graph, "b", {3}, {0.1f, -0.2f, 0.3f});
  onnx::NodeProto* matmul = graph->add_node();
  matmul->set_op_type("MatMul");
  matmul->add_input("x");
  matmul->add_input("w");
  matmul->add_output("xw");
  onnx::NodeProto* add = graph->add_node();
  add->set_op_type("Add");
  add->add_input("xw");
  add->add_input("b");
  add->add_output("y");
  std::ofstream file(dir / "mlp.onnx", std::ios::binary | std::ios::trunc);
  require(file && model.SerializeToOstream(&file), "cannot write " + (dir / "mlp.onnx").string());
  write_f32_npy(dir / "in" / "input_0.npy", {2, 4}, {1.5f, -2.0f, 0.3f, 4.0f, -0.7f, 0.0f, 2.25f, -1.0f});
  write_f32_npy(dir / "wrong.npy", {2, 5}, std::vector<float>(10, 1.0f));
  return 0;
}

int same_outputs(const std::string& json_path, const std::string& pb_path) {
  const nlohmann::json doc = read_json(json_path);
  std::string name;
  const loom::Tensor expected = loom::read_tensor_pb(pb_path, &name);
  require(doc.is_array(), json_path + " is not a JSON array");
  for (const auto& entry : doc) {
    if (entry.at("name") != name) continue;
    require(entry.at("dimensions") == expected.shape().to_string(),
            "dimensions " + entry.at("dimensions").dump() + ", loom-run wrote " + expected.shape().to_string());
    const auto& values = entry.at("values");
    const auto wanted = loom::to_doubles(expected);
    require(values.size() == wanted.size(),
            std::to_string(values.size()) + " values, loom-run wrote " + std::to_string(wanted.size()));
    for (std::size_t i = 0; i < wanted.size(); ++i)
      require(
          values[i].is_number() && static_cast<float>(values[i].get<double>()) == static_cast<float>(wanted[i]),
          "value " + std::to_string(i) + " is " + values[i].dump() + ", loom-run wrote " + std::to_string(wanted[i]));
    std::printf("%s: %zu values of '%s' equal to %s\n", json_path.c_str(), wanted.size(), name.c_str(),
                pb_path.c_str());
    return 0;
  }
  throw CheckFailed(json_path + " has no output named '" + name + "'");
}

int profile(const std::string& profile_path, const std::string& report_path) {
  const nlohmann::json doc = read_json(profile_path);
  const nlohmann::json report = read_json(report_path);
  require(doc.is_array(), profile_path + " is not a JSON array");
  std::size_t at = 0;
  for (const auto& model : report.at("models")) {
    const std::string name = model.at("name");
    const std::size_t requests = model.at("requests");
    const std::size_t steps = model.at("steps");
    require(at < doc.size() && doc[at].contains("count") && doc[at].value("model", "") == name,
            "element " + std::to_string(at) + " is not the head of " + name);
    const auto& head = doc[at++];
    require(head.at("count") == requests, name + ": count " + head.at("count").dump() + ", the report says " +
                                              std::to_string(requests) + " requests");
    double time_ms = 0, percentage = 0;
    for (std::size_t s = 0; s < steps; ++s, ++at) {
      require(at < doc.size() && doc[at].contains("name") && doc[at].value("model", "") == name,
              name + ": Step " + std::to_string(s) + " of " + std::to_string(steps) + " is missing");
      const auto& step = doc[at];
      require(step.at("step") == s, name + ": Step entries out of order at " + std::to_string(s));
      require(step.at("count") == requests, step.at("name").get<std::string>() + " ran " + step.at("count").dump() +
                                                " times, not once per request (" + std::to_string(requests) + ")");
      time_ms += step.at("timeMs").get<double>();
      percentage += step.at("percentage").get<double>();
    }
    const double head_ms = head.at("timeMs").get<double>();
    // Each figure is rounded to 0.1 us (0.001 %) in the file.
    require(std::fabs(time_ms - head_ms) <= 1e-4 * static_cast<double>(steps + 1),
            name + ": Steps add up to " + std::to_string(time_ms) + " ms, the head says " + std::to_string(head_ms));
    require(head_ms > 0, name + ": no Step time");
    require(std::fabs(percentage - 100) <= 1e-3 * static_cast<double>(steps + 1),
            name + ": percentages add up to " + std::to_string(percentage));
    // A request's Steps run one after the other inside its compute phase (first Step start -> last
    // Step end), so together they take at most the phase.
    const double compute_ms =
        model.at("phases_ms").at("compute").at("mean").get<double>() * static_cast<double>(requests);
    require(time_ms <= compute_ms * 1.001 + 1e-3, name + ": Steps take " + std::to_string(time_ms) +
                                                      " ms, more than the requests' compute phase " +
                                                      std::to_string(compute_ms) + " ms");
    std::printf("%s: %zu Steps x %zu requests, %.3f ms of Steps within %.3f ms of compute\n", name.c_str(), steps,
                requests, time_ms, compute_ms);
  }
  require(at == doc.size(), profile_path + " has " + std::to_string(doc.size() - at) + " elements past the models");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const std::vector<std::string> args(argv + 1, argv + argc);
  try {
    if (args.size() == 2 && args[0] == "make") return make(args[1]);
    if (args.size() == 3 && args[0] == "same-outputs") return same_outputs(args[1], args[2]);
    if (args.size() == 3 && args[0] == "profile") return profile(args[1], args[2]);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "loom_bench_check %s: %s\n", args[0].c_str(), e.what());
    return 1;
  }
  std::fprintf(stderr, "usage: loom_bench_check make DIR | same-outputs JSON PB | profile PROFILE REPORT\n");
  return 2;
}
