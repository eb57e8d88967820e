// Shape inference for MatMul and Gemm.
#include <algorithm>
#include <cmath>
#include <numeric>

#include "graph/op_schema.hpp"
#include "graph/op_support.hpp"

namespace loom::graph {
namespace {
// numpy matmul: a 1-D A is a row vector [1, K] and a 1-D B a column vector [K, 1]; the added
// dimension is dropped from the result. Batch dimensions broadcast.
std::vector<ValueInfo> infer_matmul(const Node& node, std::span<const ValueInfo* const> in,
                                    std::span<const Tensor* const>) {
  const auto& a = need(in, 0, "A");
  const auto& b = need(in, 1, "B");
  need_float(a, "A");
  need_same_dtype(a, b);
  if (a.shape.rank() == 0 || b.shape.rank() == 0)
    fail(ErrorCode::shape_mismatch,
         "MatMul operands must have rank >= 1, got " + a.shape.to_string() + " and " + b.shape.to_string());
  std::vector<std::int64_t> ad = a.shape.dims(), bd = b.shape.dims();
  const bool a_vector = ad.size() == 1, b_vector = bd.size() == 1;
  if (a_vector) ad.insert(ad.begin(), 1);
  if (b_vector) bd.push_back(1);
  if (ad.back() != bd[bd.size() - 2])
    fail(ErrorCode::shape_mismatch, "inner dimensions differ: A " + a.shape.to_string() + " B " + b.shape.to_string());
  Shape batch_a(std::vector<std::int64_t>(ad.begin(), ad.end() - 2));
  Shape batch_b(std::vector<std::int64_t>(bd.begin(), bd.end() - 2));
  auto dims = broadcast_shapes(batch_a, batch_b).dims();
  if (!a_vector) dims.push_back(ad[ad.size() - 2]);
  if (!b_vector) dims.push_back(bd.back());
  return {out(node, 0, a.dtype, Shape(dims))};
}

std::vector<ValueInfo> infer_gemm(const Node& node, std::span<const ValueInfo* const> in,
                                  std::span<const Tensor* const>) {
  const auto& a = need(in, 0, "A");
  const auto& b = need(in, 1, "B");
  need_float(a, "A");
  need_same_dtype(a, b);
  need_rank(a, 2, "A");
  need_rank(b, 2, "B");
  const bool ta = node.attrs.get_int("transA", 0) != 0, tb = node.attrs.get_int("transB", 0) != 0;
  const auto m = ta ? a.shape[1] : a.shape[0], ka = ta ? a.shape[0] : a.shape[1];
  const auto kb = tb ? b.shape[1] : b.shape[0], n = tb ? b.shape[0] : b.shape[1];
  if (ka != kb)
    fail(ErrorCode::shape_mismatch, "inner dimensions differ: A " + a.shape.to_string() + " B " + b.shape.to_string());
  Shape y{m, n};
  if (in.size() > 2 && in[2]) {
    if (broadcast_shapes(in[2]->shape, y) != y)
      fail(ErrorCode::shape_mismatch, "C " + in[2]->shape.to_string() + " does not broadcast to " + y.to_string());
  }
  return {out(node, 0, a.dtype, y)};
}

double matmul_flops(const Node&, std::span<const ValueInfo* const> in, std::span<const ValueInfo* const> outs) {
  const auto& a = in[0]->shape;  // K is A's last dim, whatever A's rank
  return 2.0 * static_cast<double>(outs[0]->shape.numel()) * static_cast<double>(a[a.rank() - 1]);
}

double gemm_flops(const Node& node, std::span<const ValueInfo* const> in, std::span<const ValueInfo* const> outs) {
  const double y = static_cast<double>(outs[0]->shape.numel());
  const auto& a = in[0]->shape;
  const double k = static_cast<double>(node.attrs.get_int("transA", 0) ? a[0] : a[1]);
  return 2.0 * y * k + (in.size() > 2 && in[2] ? y : 0.0);
}

}  // namespace

void register_linear_schemas(SchemaTable& table) {
  table["MatMul"] = {OpRole::anchor, infer_matmul, matmul_flops, {}};
  table["Gemm"] = {OpRole::anchor, infer_gemm, gemm_flops, {}};
}

}  // namespace loom::graph
