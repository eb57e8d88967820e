// The CPU backend's kernel fusion (Backend::create_fused_kernel): a Conv, MatMul or Gemm claims the
// pointwise ops after it in its Step that only refine its result (a bias or residual Add, a scalar
// scale, Relu, Sigmoid, Tanh, Gelu, SiLU as Sigmoid then Mul, GELU as Div/Erf/Add/Mul/Mul) and
// becomes one kernel that applies them as its epilogue (epilogue.hpp) and writes only the last
// value. A value that something outside the chain reads ends the chain.
#pragma once

#include <optional>

#include "backend/backend.hpp"
#include "backend/cpu/epilogue.hpp"

namespace loom::backend::cpu {

// The chain of pointwise ops candidate.nodes[0] can absorb: the members (indices into
// candidate.nodes, 0 first), their epilogue and the run() layout of the fused kernel; nullopt when
// nodes[0] is not a Conv, MatMul or Gemm of f32 values or nothing after it can be absorbed.
struct EpilogueMatch {
  std::vector<std::size_t> members;
  FusedRun run;
};
std::optional<EpilogueMatch> match_epilogue(const FusionCandidate& candidate);

// The fused kernel of match_epilogue()'s chain, nullopt when there is none. Throws what creating
// the anchor's kernel alone throws.
std::optional<FusedKernel> create_fused_kernel(const FusionCandidate& candidate);

}  // namespace loom::backend::cpu
