// Which op kind the function library files a node under, and the size buckets of its keys.
#include <array>
#include <set>

#include "graph/op_schema.hpp"
#include "graph/ops.hpp"
#include "loom/placement.hpp"

namespace loom {
namespace {

const std::set<std::string, std::less<>> kMatmul = {"MatMul", "Gemm", "MatMulInteger", "QLinearMatMul", "Einsum"};
const std::set<std::string, std::less<>> kConv = {"Conv", "ConvTranspose", "ConvInteger", "QLinearConv"};
const std::set<std::string, std::less<>> kPool = {"MaxPool",       "AveragePool", "GlobalAveragePool",
                                                  "GlobalMaxPool", "LpPool",      "GlobalLpPool"};
const std::set<std::string, std::less<>> kRecurrent = {"LSTM", "GRU", "RNN"};
const std::set<std::string, std::less<>> kControl = {"If", "Loop", "Scan"};
const std::set<std::string, std::less<>> kReduce = {"Softmax",
                                                    "LogSoftmax",
                                                    "Hardmax",
                                                    "LayerNormalization",
                                                    "InstanceNormalization",
                                                    "GroupNormalization",
                                                    "LpNormalization",
                                                    "ArgMax",
                                                    "ArgMin",
                                                    "TopK",
                                                    "CumSum",
                                                    "MeanVarianceNormalization"};

}  // namespace

std::vector<std::string> library_op_kinds() {
  return {"matmul", "conv", "pointwise", "reduce", "pool", "layout", "scalar"};
}

std::string library_op_kind(std::string_view op_type, WorkClass work_class) {
  if (work_class == WorkClass::scalar) return "scalar";
  if (kMatmul.count(op_type)) return "matmul";
  if (kConv.count(op_type)) return "conv";
  if (kPool.count(op_type)) return "pool";
  if (kRecurrent.count(op_type)) return "recurrent";
  if (kControl.count(op_type)) return "control";
  if (kReduce.count(op_type) || op_type.starts_with("Reduce")) return "reduce";
  const graph::OpSchema* schema = graph::find_schema(op_type);
  if (!schema) return "other";
  switch (schema->role) {
    case graph::OpRole::view:
      return "view";
    case graph::OpRole::pointwise:
      return "pointwise";
    case graph::OpRole::anchor:
      break;
  }
  return "layout";  // data movement: Transpose, Concat, Gather, Slice, Pad, Resize...
}

int size_bucket(double work) {
  int bucket = 0;
  for (; work >= 4; work /= 4) ++bucket;
  return bucket;
}

}  // namespace loom
