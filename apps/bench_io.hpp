// Request data in and out of loom-bench, as trtexec's --loadInputs and --exportOutput: input files
// (NumPy .npy or ONNX TensorProto) assigned to the models' inputs and checked against them, and the
// models' outputs written as JSON.
#pragma once

#include <nlohmann/json.hpp>

#include <cstddef>
#include <map>
#include <string>
#include <vector>

#include "bench_runner.hpp"
#include "loom/executor.hpp"
#include "loom/model.hpp"
#include "loom/tensor.hpp"

namespace loom::bench {

// One --loadInputs item as written: NAME:FILE, NAME being INPUT or MODEL/INPUT, in single quotes
// when it holds a ':' ('input:0':x.npy, as trtexec takes it).
struct InputFile {
  std::string name;  // without the quotes
  std::string file;
};

// Splits the items (the flag's comma list, already split). Throws cli::UsageError naming `flag`
// for an item without NAME or FILE, or with an unclosed quote.
std::vector<InputFile> parse_input_files(const std::vector<std::string>& items, const std::string& flag);

// A running model's name and its inputs as it declares them.
struct ModelInputs {
  std::string model;
  std::vector<ValueInfo> inputs;
};

// Which model input a file feeds: indices into the ModelInputs list and its inputs.
struct InputAssignment {
  std::size_t model = 0;
  std::size_t input = 0;
  std::string file;
};

// Matches each file to one input: MODEL/INPUT names it outright (when MODEL runs and has INPUT);
// a bare INPUT must be the name of exactly one running model's input. Throws cli::UsageError
// naming `flag` for a name no model has (listing the inputs), a bare name two models share
// (naming them, and the MODEL/INPUT to write), and an input given twice.
std::vector<InputAssignment> assign_input_files(const std::vector<InputFile>& files,
                                                const std::vector<ModelInputs>& models, const std::string& flag);

// Reads `file` (NumPy or TensorProto, told apart by content: loom::read_tensor_file) for `model`'s
// input `declared` and checks it: the same dtype, rank and every fixed dim (a symbolic dim takes
// any size). Throws loom::Error naming the flag, the model, the input and the file: the reader's
// code for a file that cannot be read or parsed, dtype_mismatch or shape_mismatch for one that
// does not fit.
Tensor read_input_file(const std::string& file, const std::string& model, const ValueInfo& declared,
                       const std::string& flag);

// The tensors read for one model's inputs, by input name.
using InputTensors = std::map<std::string, Tensor>;

// --loadInputs whole: parses `items`, assigns them and reads every file, checked against the
// model's declared input. One entry per model of `models`, in order. Throws as
// parse_input_files(), assign_input_files() and read_input_file() do.
std::vector<InputTensors> read_input_files(const std::vector<std::string>& items,
                                           const std::vector<ModelInputs>& models, const std::string& flag);

// Puts each tensor of `files` in place of the request input of the same name: `inputs` follows
// `declared` (the model as loaded, its shapes now concrete). Throws Error(shape_mismatch) naming
// `model`, the input and `flag` when a tensor's shape is not the loaded input's (a --shapes or
// --batch that disagrees with the file).
void use_input_files(std::vector<Tensor>& inputs, const std::vector<ValueInfo>& declared, const InputTensors& files,
                     const std::string& model, const std::string& flag);

// One model's outputs of one request, named as the model declares them.
struct ModelOutputs {
  std::string model;
  std::vector<ValueInfo> declared;
  std::vector<Tensor> values;  // in the order of `declared`
};

// trtexec's --exportOutput layout, one array over every model's outputs in order: {"name",
// "dimensions": "1x84x8400", "values": [...]} plus "model" and "dtype". Floats are written as
// JSON numbers exactly (f32 widened to double), integers as integers, bool as 0/1; a NaN or an
// infinity is written as null (JSON has neither). Throws Error(internal) when values and
// declared differ in count.
nlohmann::ordered_json outputs_json(const std::vector<ModelOutputs>& models);

// Runs one more request of every target, one after the other, with its inputs and options, and
// returns the outputs (ModelInfo::outputs of each model for the names). Throws the request's error.
std::vector<ModelOutputs> run_each_once(Executor& executor, const std::vector<LoadTarget>& targets);

}  // namespace loom::bench
