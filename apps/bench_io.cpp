// --loadInputs and --exportOutput for loom-bench.
#include "bench_io.hpp"

#include <cmath>
#include <cstdint>

#include "cli_support.hpp"
#include "loom/error.hpp"
#include "loom/onnx.hpp"
#include "model_flags.hpp"

namespace loom::bench {
namespace {

std::string qualified(const ModelInputs& model, std::size_t input) {
  return model.model + "/" + model.inputs[input].name;
}

std::string every_input(const std::vector<ModelInputs>& models) {
  std::string text;
  for (const auto& model : models)
    for (std::size_t i = 0; i < model.inputs.size(); ++i) text += (text.empty() ? "" : ", ") + qualified(model, i);
  return text;
}

// The index of the input named `name`, or npos.
std::size_t find_input(const std::vector<ValueInfo>& inputs, const std::string& name) {
  for (std::size_t i = 0; i < inputs.size(); ++i)
    if (inputs[i].name == name) return i;
  return std::string::npos;
}

// A JSON number for one element; null where JSON has none.
nlohmann::ordered_json float_value(double value) {
  if (!std::isfinite(value)) return nullptr;
  return value;
}

}  // namespace

std::vector<InputFile> parse_input_files(const std::vector<std::string>& items, const std::string& flag) {
  std::vector<InputFile> files;
  for (const auto& item : items) {
    std::size_t colon = std::string::npos;
    std::string name;
    if (!item.empty() && item.front() == '\'') {
      const std::size_t close = item.find('\'', 1);
      if (close == std::string::npos)
        throw cli::UsageError(flag + ": '" + item + "': the quote around the input name is not closed");
      name = item.substr(1, close - 1);
      colon = close + 1 < item.size() && item[close + 1] == ':' ? close + 1 : std::string::npos;
    } else {
      colon = item.find(':');
      if (colon != std::string::npos) name = item.substr(0, colon);
    }
    if (colon == std::string::npos || name.empty() || colon + 1 == item.size())
      throw cli::UsageError(flag + ": expected NAME:FILE or MODEL/NAME:FILE (e.g. images:in.npy), got '" + item + "'");
    files.push_back({name, item.substr(colon + 1)});
  }
  return files;
}

std::vector<InputAssignment> assign_input_files(const std::vector<InputFile>& files,
                                                const std::vector<ModelInputs>& models, const std::string& flag) {
  std::vector<InputAssignment> assigned;
  for (const auto& file : files) {
    InputAssignment assignment{std::string::npos, std::string::npos, file.file};
    // MODEL/INPUT, when MODEL runs and has INPUT; an input's own name may hold a '/' too.
    const std::size_t slash = file.name.find('/');
    for (std::size_t m = 0; slash != std::string::npos && m < models.size(); ++m)
      if (models[m].model == file.name.substr(0, slash)) {
        const std::size_t input = find_input(models[m].inputs, file.name.substr(slash + 1));
        if (input != std::string::npos) assignment = {m, input, file.file};
      }
    if (assignment.model == std::string::npos) {
      std::vector<std::size_t> owners;
      for (std::size_t m = 0; m < models.size(); ++m)
        if (find_input(models[m].inputs, file.name) != std::string::npos) owners.push_back(m);
      if (owners.size() > 1) {
        std::string names;
        for (std::size_t m : owners) names += (names.empty() ? "" : ", ") + models[m].model;
        throw cli::UsageError(flag + ": input '" + file.name + "' belongs to several models (" + names +
                              "); name one as MODEL/" + file.name + ":" + file.file);
      }
      if (owners.size() == 1) assignment = {owners[0], find_input(models[owners[0]].inputs, file.name), file.file};
    }
    if (assignment.model == std::string::npos)
      throw cli::UsageError(flag + ": no running model has an input '" + file.name +
                            "' (inputs: " + every_input(models) + ")");
    for (const auto& earlier : assigned)
      if (earlier.model == assignment.model && earlier.input == assignment.input)
        throw cli::UsageError(flag + ": input " + qualified(models[assignment.model], assignment.input) +
                              " is given twice (" + earlier.file + " and " + file.file + ")");
    assigned.push_back(std::move(assignment));
  }
  return assigned;
}

Tensor read_input_file(const std::string& file, const std::string& model, const ValueInfo& declared,
                       const std::string& flag) {
  const std::string where = flag + ": input " + model + "/" + declared.name + " from " + file;
  Tensor tensor;
  try {
    tensor = read_tensor_file(file);
  } catch (const Error& e) {
    throw Error(e.code(), where + ": " + e.what());
  }
  if (tensor.dtype() != declared.dtype)
    throw Error(ErrorCode::dtype_mismatch, where + ": the file holds " + std::string(dtype_name(tensor.dtype())) +
                                               ", the model takes " + cli::describe_declared_input(declared));
  bool fits = tensor.shape().rank() == declared.shape.rank();
  for (std::size_t axis = 0; fits && axis < declared.shape.rank(); ++axis)
    fits = declared.shape[axis] < 0 || declared.shape[axis] == tensor.shape()[axis];
  if (!fits)
    throw Error(ErrorCode::shape_mismatch, where + ": the file holds shape " + tensor.shape().to_string() +
                                               ", the model takes " + cli::describe_declared_input(declared));
  return tensor;
}

std::vector<InputTensors> read_input_files(const std::vector<std::string>& items,
                                           const std::vector<ModelInputs>& models, const std::string& flag) {
  std::vector<InputTensors> read(models.size());
  for (const auto& assignment : assign_input_files(parse_input_files(items, flag), models, flag)) {
    const ValueInfo& input = models[assignment.model].inputs[assignment.input];
    read[assignment.model].emplace(input.name,
                                   read_input_file(assignment.file, models[assignment.model].model, input, flag));
  }
  return read;
}

void use_input_files(std::vector<Tensor>& inputs, const std::vector<ValueInfo>& declared, const InputTensors& files,
                     const std::string& model, const std::string& flag) {
  for (const auto& [name, tensor] : files) {
    const std::size_t i = find_input(declared, name);
    if (i == std::string::npos || i >= inputs.size())
      throw Error(ErrorCode::internal, flag + ": " + model + " has no input '" + name + "' once loaded");
    if (tensor.shape() != declared[i].shape)
      throw Error(ErrorCode::shape_mismatch, flag + ": input " + model + "/" + name + ": the file holds shape " +
                                                 tensor.shape().to_string() + ", the model is loaded for " +
                                                 declared[i].shape.to_string() + " (check --shapes and --batch)");
    inputs[i] = tensor;
  }
}

nlohmann::ordered_json outputs_json(const std::vector<ModelOutputs>& models) {
  nlohmann::ordered_json doc = nlohmann::ordered_json::array();
  for (const auto& model : models) {
    if (model.values.size() != model.declared.size())
      throw Error(ErrorCode::internal, model.model + " returned " + std::to_string(model.values.size()) +
                                           " outputs and declares " + std::to_string(model.declared.size()));
    for (std::size_t i = 0; i < model.values.size(); ++i) {
      const Tensor& tensor = model.values[i];
      nlohmann::ordered_json values = nlohmann::ordered_json::array();
      // 64-bit integers from their own storage: a double holds only 53 bits.
      if (tensor.dtype() == DType::i64) {
        for (std::int64_t v : tensor.values<std::int64_t>()) values.push_back(v);
      } else if (tensor.dtype() == DType::u64) {
        for (std::uint64_t v : tensor.values<std::uint64_t>()) values.push_back(v);
      } else if (is_integer(tensor.dtype()) || tensor.dtype() == DType::boolean) {
        for (double v : to_doubles(tensor)) values.push_back(static_cast<std::int64_t>(v));
      } else {
        for (double v : to_doubles(tensor)) values.push_back(float_value(v));
      }
      nlohmann::ordered_json entry;
      entry["name"] = model.declared[i].name;
      entry["dimensions"] = tensor.shape().to_string();
      entry["values"] = std::move(values);
      entry["model"] = model.model;
      entry["dtype"] = std::string(dtype_name(tensor.dtype()));
      doc.push_back(std::move(entry));
    }
  }
  return doc;
}

std::vector<ModelOutputs> run_each_once(Executor& executor, const std::vector<LoadTarget>& targets) {
  std::vector<ModelOutputs> outputs;
  for (const auto& target : targets)
    outputs.push_back({target.model, executor.model_info(target.model).outputs,
                       executor.submit(target.model, target.inputs, target.options).get()});
  return outputs;
}

}  // namespace loom::bench
