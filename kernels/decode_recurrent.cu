// Stacked LSTM/GRU loops on the device. Both the persistent kernel and the per-step kernels share
// one layer pass: a block owns a slice of hidden units (all gates of them), stages the input and
// previous h of a tile of batch rows in shared memory, computes its gate rows with one warp per
// row (16-byte loads, f32 accumulation), then updates the cell state of its units. The persistent
// kernel keeps each block's weight rows in shared memory when they fit and meets the other blocks
// at a counter barrier after every layer, so one step costs one barrier per layer (two for GRU
// without linear_before_reset, whose candidate product needs r first).
#include "decode_recurrent.cuh"

#include <algorithm>
#include <string>

#include "backend/cuda/cuda_check.hpp"
#include "backend/cuda/cuda_handles.hpp"
#include "backend/cuda/smem_limit.hpp"
#include "decode_common.cuh"

namespace loom::kernels::decode {
namespace {

namespace loop_plan = backend::recurrent_loop;
using loop_plan::align_up;
using loop_plan::SmemLayout;

constexpr int kThreads = 256;
constexpr int kTile = loop_plan::kMaxTileRows;    // batch rows staged at once, at most
constexpr int kControlBytes = 64;                 // RecurrentControl, padded
constexpr std::size_t kStepSmemSoft = 48 * 1024;  // step kernels prefer the default shared-memory limit

static_assert(sizeof(RecurrentControl) <= kControlBytes);

__host__ __device__ inline int gate_count(const RecurrentModel& m) { return m.gru ? 3 : 4; }
__host__ __device__ inline std::size_t elem_bytes(const RecurrentModel& m) { return m.dtype == DType::f16 ? 2 : 4; }
__host__ __device__ inline loop_plan::LoopShape loop_shape(const RecurrentModel& m) {
  return {gate_count(m), m.layers, m.hidden, static_cast<int>(elem_bytes(m))};
}
__host__ __device__ inline int row_elems(const RecurrentModel& m, int layer) {
  return loop_plan::row_elems(loop_shape(m), layer);
}
__host__ __device__ inline std::size_t slice_elems(const RecurrentModel& m, int units) {
  return loop_plan::slice_elems(loop_shape(m), units);
}
__host__ __device__ inline SmemLayout smem_layout(const RecurrentModel& m, std::size_t weight_bytes, int units,
                                                  int tile_rows, int lens_count) {
  return loop_plan::smem_layout(loop_shape(m), weight_bytes, units, tile_rows, lens_count);
}

// VEC elements at p, converted to f32. VEC > 1 needs 16-byte alignment.
template <class T, int VEC>
struct Vec;
template <>
struct Vec<float, 4> {
  __device__ __forceinline__ static void load(const float* p, float (&v)[4]) {
    const float4 a = *reinterpret_cast<const float4*>(p);
    v[0] = a.x, v[1] = a.y, v[2] = a.z, v[3] = a.w;
  }
  __device__ __forceinline__ static void load_ldg(const float* p, float (&v)[4]) {
    const float4 a = __ldg(reinterpret_cast<const float4*>(p));
    v[0] = a.x, v[1] = a.y, v[2] = a.z, v[3] = a.w;
  }
};
template <>
struct Vec<__half, 8> {
  __device__ __forceinline__ static void unpack(const uint4& raw, float (&v)[8]) {
    const __half2* h = reinterpret_cast<const __half2*>(&raw);
#pragma unroll
    for (int k = 0; k < 4; ++k) {
      const float2 f = __half22float2(h[k]);
      v[2 * k] = f.x, v[2 * k + 1] = f.y;
    }
  }
  __device__ __forceinline__ static void load(const __half* p, float (&v)[8]) {
    unpack(*reinterpret_cast<const uint4*>(p), v);
  }
  __device__ __forceinline__ static void load_ldg(const __half* p, float (&v)[8]) {
    unpack(__ldg(reinterpret_cast<const uint4*>(p)), v);
  }
};
template <class T>
struct Vec<T, 1> {
  __device__ __forceinline__ static void load(const T* p, float (&v)[1]) { v[0] = to_float(*p); }
  __device__ __forceinline__ static void load_ldg(const T* p, float (&v)[1]) { v[0] = to_float(__ldg(p)); }
};

// Loads that bypass L1: the data was written by other blocks of the same kernel.
template <class T>
__device__ __forceinline__ T load_cg(const T* p) {
  using Bits = typename bits_of<sizeof(T)>::type;
  const Bits bits = __ldcg(reinterpret_cast<const Bits*>(p));
  return *reinterpret_cast<const T*>(&bits);
}

// Copies n elements (a multiple of VEC) from global memory, through L2, to shared memory.
template <class T, int VEC>
__device__ __forceinline__ void copy_cg(T* dst, const T* src, int n, int first, int stride) {
  if constexpr (VEC > 1) {
    const int vectors = n / VEC;
    const uint4* s = reinterpret_cast<const uint4*>(src);
    uint4* d = reinterpret_cast<uint4*>(dst);
    for (int i = first; i < vectors; i += stride) d[i] = __ldcg(s + i);
  } else {
    for (int i = first; i < n; i += stride) dst[i] = load_cg(src + i);
  }
}

__device__ __forceinline__ float load_bias(const RecurrentModel& m, const void* bias, int at) {
  if (!bias) return 0.0f;
  if (m.bias_dtype == DType::f16) return __half2float(static_cast<const __half*>(bias)[at]);
  return static_cast<const float*>(bias)[at];
}

// acc[i] += w[0..n) · stage[i*S + offset ..] for the tile's rows, this lane's share of k.
template <class T, int VEC, bool kGlobalWeights>
__device__ __forceinline__ void dot_accumulate(const T* w, const T* stage, int S, int offset, int n, int rows, int lane,
                                               float (&acc)[kTile]) {
  for (int k = lane * VEC; k < n; k += 32 * VEC) {
    float wv[VEC];
    if constexpr (kGlobalWeights)
      Vec<T, VEC>::load_ldg(w + k, wv);
    else
      Vec<T, VEC>::load(w + k, wv);
#pragma unroll
    for (int i = 0; i < kTile; ++i) {
      if (i < rows) {
        float xv[VEC];
        Vec<T, VEC>::load(stage + static_cast<std::size_t>(i) * S + offset + k, xv);
#pragma unroll
        for (int e = 0; e < VEC; ++e) acc[i] = fmaf(wv[e], xv[e], acc[i]);
      }
    }
  }
}

// Phases of a layer pass: full (LSTM, GRU with linear_before_reset); GRU without it runs
// kResetPhase (z, r, the candidate's W part; writes r ⊙ h) then, after a barrier, kCandidatePhase
// (the candidate's R part over r ⊙ h; updates h).
enum Phase : int { kFullPhase = 0, kResetPhase = 1, kCandidatePhase = 2 };

struct PassContext {
  int layer = 0;
  int phase = kFullPhase;
  int step = 0;  // loop iterations done before this one in this call
  int j0 = 0;    // first unit of this block
  int units = 0;
  int units_cap = 0;  // gate buffers hold gates*units_cap rows
  int tile_rows = 1;
  const int* lens = nullptr;  // row lengths (shared or global memory)
};

template <class T>
__device__ __forceinline__ T* state_h(const RecurrentRun& run, const RecurrentModel& m, int parity, int layer) {
  return static_cast<T*>(run.h_state) +
         (static_cast<std::size_t>(parity) * m.layers + layer) * static_cast<std::size_t>(run.batch) * m.hidden;
}

// One layer of one step for this block's units and every batch row. `slice` is this layer's
// weight rows in shared memory (kOnChip) — row rl = g*units + u holds W's then R's row of unit
// j0+u, gate g.
template <class T, int VEC, bool kOnChip>
__device__ void layer_pass(const RecurrentModel& m, const RecurrentRun& run, const PassContext& c, const T* slice,
                           unsigned char* smem, const SmemLayout& lay) {
  const int H = m.hidden, G = gate_count(m), B = run.batch, l = c.layer;
  const bool last_layer = l == m.layers - 1;
  const int Kx = (l > 0 && c.phase != kCandidatePhase) ? H : 0;  // staged x part
  const int S = Kx + H;                                          // staged row length
  const int rows = G * c.units;
  const int row_cap = G * c.units_cap;
  T* stage = reinterpret_cast<T*>(smem + lay.stage);
  float* gx = reinterpret_cast<float*>(smem + lay.gates_x);
  float* gh = reinterpret_cast<float*>(smem + lay.gates_h);
  const std::size_t state = static_cast<std::size_t>(B) * H;
  const T* h_prev = state_h<T>(run, m, c.step & 1, l);
  T* h_next = state_h<T>(run, m, (c.step + 1) & 1, l);
  const T* x_in = l > 0 ? state_h<T>(run, m, (c.step + 1) & 1, l - 1) : nullptr;
  const T* h_src = c.phase == kCandidatePhase ? static_cast<const T*>(run.reset_h) : h_prev;
  T* output = static_cast<T*>(run.output);
  const void* bias = m.layer[l].bias;
  const int pos = run.start_step + c.step;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, warps = blockDim.x / 32;
  const int row_begin = c.phase == kCandidatePhase ? 2 * c.units : 0;
  const int row_end = c.phase == kCandidatePhase ? 3 * c.units : rows;

  for (int b0 = 0; b0 < B; b0 += c.tile_rows) {
    const int nb = min(c.tile_rows, B - b0);
    __syncthreads();  // the previous tile's readers are done with the stage and the gate sums
    for (int i = 0; i < nb; ++i) {
      T* dst = stage + static_cast<std::size_t>(i) * S;
      if (Kx) copy_cg<T, VEC>(dst, x_in + static_cast<std::size_t>(b0 + i) * H, H, threadIdx.x, blockDim.x);
      copy_cg<T, VEC>(dst + Kx, h_src + static_cast<std::size_t>(b0 + i) * H, H, threadIdx.x, blockDim.x);
    }
    __syncthreads();

    for (int rl = row_begin + warp; rl < row_end; rl += warps) {
      const int g = rl / c.units, u = rl - g * c.units;
      const bool use_x = Kx > 0;
      const bool use_h = !(c.phase == kResetPhase && g == 2);
      const T* w_row;
      const T* r_row;
      if constexpr (kOnChip) {
        w_row = slice + static_cast<std::size_t>(rl) * row_elems(m, l);
        r_row = w_row + (l > 0 ? H : 0);
      } else {
        const std::size_t at = static_cast<std::size_t>(g * H + c.j0 + u) * H;
        w_row = l > 0 ? static_cast<const T*>(m.layer[l].w) + at : nullptr;
        r_row = static_cast<const T*>(m.layer[l].r) + at;
      }
      float ax[kTile], ah[kTile];
#pragma unroll
      for (int i = 0; i < kTile; ++i) ax[i] = ah[i] = 0.0f;
      if (use_x) dot_accumulate<T, VEC, !kOnChip>(w_row, stage, S, 0, H, nb, lane, ax);
      if (use_h) dot_accumulate<T, VEC, !kOnChip>(r_row, stage, S, Kx, H, nb, lane, ah);
#pragma unroll
      for (int i = 0; i < kTile; ++i) {
        if (i < nb) {
          const float sx = warp_sum(ax[i]);
          const float sh = warp_sum(ah[i]);
          if (lane == 0) {
            gx[i * row_cap + rl] = sx;
            gh[i * row_cap + rl] = sh;
          }
        }
      }
    }
    __syncthreads();

    for (int idx = threadIdx.x; idx < nb * c.units; idx += blockDim.x) {
      const int i = idx / c.units, u = idx - i * c.units;
      const int b = b0 + i, j = c.j0 + u;
      const std::size_t sj = static_cast<std::size_t>(b) * H + j;
      const int len = c.lens[b];
      const T hp_stored = load_cg(h_prev + sj);
      if (pos >= len) {  // past the row's end: keep the state, zeros out
        if (c.phase == kResetPhase) {
          static_cast<T*>(run.reset_h)[sj] = from_float<T>(0.0f);
        } else {
          h_next[sj] = hp_stored;
          if (last_layer && output) output[static_cast<std::size_t>(pos) * state + sj] = from_float<T>(0.0f);
        }
        continue;
      }
      const int t = run.reverse ? len - 1 - pos : pos;
      const float hp = to_float(hp_stored);
      float xp[4] = {0.0f, 0.0f, 0.0f, 0.0f};
      if (l == 0) {
        const float* xr = run.x_proj + (static_cast<std::size_t>(t - run.x_proj_first_step) * B + b) * G * H;
#pragma unroll
        for (int g = 0; g < 4; ++g)
          if (g < G) xp[g] = __ldg(xr + g * H + j);
      }
      const int base = i * row_cap + u;
      // Pre-activation of gate g from its x part (with Wb) and its h part (with Rb).
      auto x_part = [&](int g) { return gx[base + g * c.units] + xp[g] + load_bias(m, bias, g * H + j); };
      auto h_part = [&](int g) { return gh[base + g * c.units] + load_bias(m, bias, (G + g) * H + j); };
      T h_new;
      if (!m.gru) {
        // Only this block reads and writes its units' c, so plain loads see the last step's value.
        const std::size_t cell_at = static_cast<std::size_t>(l) * state + sj;
        const float c_prev = m.cell_f32 ? static_cast<const float*>(run.c_state)[cell_at]
                                        : to_float(static_cast<const T*>(run.c_state)[cell_at]);
        const LstmState next = lstm_cell(x_part(0) + h_part(0), x_part(1) + h_part(1), x_part(2) + h_part(2),
                                         x_part(3) + h_part(3), c_prev);
        if (m.cell_f32)
          static_cast<float*>(run.c_state)[cell_at] = next.c;
        else
          static_cast<T*>(run.c_state)[cell_at] = from_float<T>(next.c);
        h_new = from_float<T>(next.h);
      } else if (c.phase == kFullPhase) {
        h_new = from_float<T>(gru_cell(x_part(0) + h_part(0), x_part(1) + h_part(1), x_part(2), h_part(2), hp, true));
      } else if (c.phase == kResetPhase) {
        const float r = sigmoid(x_part(1) + h_part(1));
        static_cast<T*>(run.reset_h)[sj] = from_float<T>(r * hp);
        run.gru_pre[(static_cast<std::size_t>(b) * 2) * H + j] = x_part(0) + h_part(0);
        run.gru_pre[(static_cast<std::size_t>(b) * 2 + 1) * H + j] = x_part(2);
        continue;
      } else {
        const float z_pre = run.gru_pre[(static_cast<std::size_t>(b) * 2) * H + j];
        const float x_h = run.gru_pre[(static_cast<std::size_t>(b) * 2 + 1) * H + j];
        h_new = from_float<T>(gru_cell(z_pre, 0.0f, x_h, h_part(2), hp, false));
      }
      h_next[sj] = h_new;
      if (last_layer && output) output[(static_cast<std::size_t>(t) * B + b) * H + j] = h_new;
    }
  }
}

// --- pieces every method runs once per call ---

// Row lengths, encoded so that zero-filled memory means "the whole sequence": code = T - length.
// With a mask each zero at (t, b) proposes T - t and the largest proposal (the first zero) wins.
__device__ void scan_lengths(const RecurrentRun& run, int* codes, long long first, long long stride) {
  const int T = run.steps, B = run.batch;
  if (run.lengths) {
    for (long long b = first; b < B; b += stride) {
      const long long v =
          run.lengths_i64 ? static_cast<const long long*>(run.lengths)[b] : static_cast<const int*>(run.lengths)[b];
      codes[b] = T - static_cast<int>(v < 0 ? 0 : (v > T ? T : v));
    }
  } else if (run.mask) {
    const long long n = static_cast<long long>(T) * B;
    for (long long i = first; i < n; i += stride)
      if (run.mask[i] == 0) atomicMax(codes + i % B, T - static_cast<int>(i / B));
  }
}

// Decodes the lengths into `lens` (shared) and returns the loop bound, the longest row.
__device__ int read_lengths(const RecurrentRun& run, const int* codes, int* lens, int* count) {
  if (threadIdx.x == 0) *count = 0;
  __syncthreads();
  for (int b = threadIdx.x; b < run.batch; b += blockDim.x) {
    lens[b] = run.steps - __ldcg(codes + b);
    atomicMax(count, lens[b]);
  }
  __syncthreads();
  return *count;
}

// Output positions past the loop bound ([count, T)) belong to no row: zeros, whichever call gets there.
template <class T>
__device__ void zero_tail(const RecurrentRun& run, int hidden, int count, long long first, long long stride) {
  if (!run.output) return;
  const long long from = count;
  const long long row = static_cast<long long>(run.batch) * hidden;
  const long long n = (run.steps - from) * row;
  T* out = static_cast<T*>(run.output) + from * row;
  for (long long i = first; i < n; i += stride) out[i] = from_float<T>(0.0f);
}

// h (parity 0) and c of units [j0, j0 + units) from the initial state or zeros.
template <class T>
__device__ void init_state(const RecurrentModel& m, const RecurrentRun& run, int j0, int units, long long first,
                           long long stride) {
  const long long n = static_cast<long long>(m.layers) * run.batch * units;
  T* h = state_h<T>(run, m, 0, 0);
  T* cell = static_cast<T*>(run.c_state);
  for (long long i = first; i < n; i += stride) {
    const long long at = i / units * m.hidden + j0 + i % units;  // [layer, batch] row, then unit
    h[at] = run.initial_h ? static_cast<const T*>(run.initial_h)[at] : from_float<T>(0.0f);
    if (m.gru) continue;
    if (m.cell_f32 && run.initial_c_f32) {
      static_cast<float*>(run.c_state)[at] = run.initial_c ? static_cast<const float*>(run.initial_c)[at] : 0.0f;
      continue;
    }
    const T c0 = run.initial_c ? static_cast<const T*>(run.initial_c)[at] : from_float<T>(0.0f);
    if (m.cell_f32)
      static_cast<float*>(run.c_state)[at] = to_float(c0);
    else
      cell[at] = c0;
  }
}

// final_h / final_c of units [j0, j0 + units) after `steps_run` iterations.
template <class T>
__device__ void write_final(const RecurrentModel& m, const RecurrentRun& run, int steps_run, int j0, int units,
                            long long first, long long stride) {
  const long long n = static_cast<long long>(m.layers) * run.batch * units;
  const T* h = state_h<T>(run, m, steps_run & 1, 0);
  const T* cell = static_cast<const T*>(run.c_state);
  for (long long i = first; i < n; i += stride) {
    const long long at = i / units * m.hidden + j0 + i % units;
    if (run.final_h) static_cast<T*>(run.final_h)[at] = load_cg(h + at);
    if (run.final_c && !m.gru && m.cell_f32 && run.final_c_f32)
      static_cast<float*>(run.final_c)[at] = load_cg(static_cast<const float*>(run.c_state) + at);
    else if (run.final_c && !m.gru)
      static_cast<T*>(run.final_c)[at] =
          m.cell_f32 ? from_float<T>(load_cg(static_cast<const float*>(run.c_state) + at)) : load_cg(cell + at);
  }
}

__device__ __forceinline__ int* length_codes(const RecurrentRun& run) {
  return reinterpret_cast<int*>(reinterpret_cast<unsigned char*>(run.control) + kControlBytes);
}

// --- the persistent kernel ---

template <class T, int VEC>
__device__ void load_slices(const RecurrentModel& m, int j0, int units, int units_cap, T* slices) {
  const int H = m.hidden, G = gate_count(m);
  std::size_t offset = 0;
  for (int l = 0; l < m.layers; ++l) {
    const int re = row_elems(m, l);
    for (int rl = 0; rl < G * units; ++rl) {
      const int g = rl / units, u = rl - g * units;
      const std::size_t at = static_cast<std::size_t>(g * H + j0 + u) * H;
      T* dst = slices + offset + static_cast<std::size_t>(rl) * re;
      if (l > 0) copy_cg<T, VEC>(dst, static_cast<const T*>(m.layer[l].w) + at, H, threadIdx.x, blockDim.x);
      copy_cg<T, VEC>(dst + (l > 0 ? H : 0), static_cast<const T*>(m.layer[l].r) + at, H, threadIdx.x, blockDim.x);
    }
    offset += static_cast<std::size_t>(G) * units_cap * re;
  }
}

template <class T, int VEC, bool kOnChip>
__global__ void __launch_bounds__(kThreads)
    persistent_kernel(__grid_constant__ const RecurrentModel m, __grid_constant__ const RecurrentRun run, int units_cap,
                      int tile_rows) {
  extern __shared__ __align__(16) unsigned char smem[];
  const std::size_t weight_bytes = kOnChip ? slice_elems(m, units_cap) * sizeof(T) : 0;
  const SmemLayout lay = smem_layout(m, weight_bytes, units_cap, tile_rows, run.batch);
  int* lens = reinterpret_cast<int*>(smem + lay.lens);
  int* count_word = reinterpret_cast<int*>(smem + lay.misc);
  T* slices = reinterpret_cast<T*>(smem);
  const int j0 = blockIdx.x * units_cap;
  const int units = min(units_cap, m.hidden - j0);
  const long long gtid = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  const long long gstride = static_cast<long long>(gridDim.x) * blockDim.x;
  RecurrentControl* ctrl = run.control;

  if constexpr (kOnChip) load_slices<T, VEC>(m, j0, units, units_cap, slices);
  scan_lengths(run, length_codes(run), gtid, gstride);  // codes were zeroed before the launch
  init_state<T>(m, run, j0, units, threadIdx.x, blockDim.x);
  unsigned int arrived = 0;
  grid_barrier(&ctrl->barrier, arrived);

  const int count = read_lengths(run, length_codes(run), lens, count_word);
  zero_tail<T>(run, m.hidden, count, gtid, gstride);

  volatile int* stop = ctrl->stop;
  const bool watcher = blockIdx.x == 0 && threadIdx.x == 0;
  int s = 0;
  bool paused = false;
  while (run.start_step + s < count) {
    // Issued now, used after the step: the mapped-memory read overlaps the step's work.
    const int flag = watcher && flag_set(run.pause) ? 1 : 0;
    std::size_t slice_offset = 0;
    for (int l = 0; l < m.layers; ++l) {
      const T* slice = slices + slice_offset;
      slice_offset += static_cast<std::size_t>(gate_count(m)) * units_cap * row_elems(m, l);
      PassContext c{l, kFullPhase, s, j0, units, units_cap, tile_rows, lens};
      if (m.gru && !m.linear_before_reset) {
        c.phase = kResetPhase;
        layer_pass<T, VEC, kOnChip>(m, run, c, slice, smem, lay);
        grid_barrier(&ctrl->barrier, arrived);
        c.phase = kCandidatePhase;
      }
      layer_pass<T, VEC, kOnChip>(m, run, c, slice, smem, lay);
      if (l == m.layers - 1 && watcher) stop[s & 1] = flag;
      grid_barrier(&ctrl->barrier, arrived);
    }
    ++s;
    // Every block reads block 0's decision for this step, so all leave at the same boundary.
    if (stop[(s - 1) & 1] && run.start_step + s < count) {
      paused = true;
      break;
    }
  }
  write_final<T>(m, run, s, j0, units, threadIdx.x, blockDim.x);
  if (watcher && run.status) {
    run.status->steps_run = s;
    run.status->paused = paused ? 1 : 0;
  }
}

// --- step kernels (graph body and host loop) ---

__global__ void reset_codes_kernel(const RecurrentRun* runp) {
  int* codes = length_codes(*runp);
  for (int b = threadIdx.x; b < runp->batch; b += blockDim.x) codes[b] = 0;
}

__global__ void scan_kernel(const RecurrentRun* runp) {
  scan_lengths(*runp, length_codes(*runp), static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x,
               static_cast<long long>(gridDim.x) * blockDim.x);
}

template <class T>
__global__ void prepare_kernel(__grid_constant__ const RecurrentModel m, const RecurrentRun* runp,
                               cudaGraphConditionalHandle handle, int use_graph) {
  extern __shared__ __align__(16) unsigned char smem[];
  const RecurrentRun& run = *runp;
  int* lens = reinterpret_cast<int*>(smem);
  int* count_word = lens + run.batch;
  const int count = read_lengths(run, length_codes(run), lens, count_word);
  const long long gtid = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  const long long gstride = static_cast<long long>(gridDim.x) * blockDim.x;
  if (blockIdx.x == 0) {
    for (int b = threadIdx.x; b < run.batch; b += blockDim.x) run.row_lengths[b] = lens[b];
    if (threadIdx.x == 0) {
      RecurrentControl* ctrl = run.control;
      const int keep = run.start_step < count ? 1 : 0;
      ctrl->step = 0;
      ctrl->count = count;
      ctrl->paused = 0;
      ctrl->pause_seen = 0;
      ctrl->keep_going = keep;
      if (use_graph) cudaGraphSetConditional(handle, keep);
    }
  }
  zero_tail<T>(run, m.hidden, count, gtid, gstride);
  init_state<T>(m, run, 0, m.hidden, gtid, gstride);
}

template <class T, int VEC>
__global__ void __launch_bounds__(kThreads)
    step_kernel(__grid_constant__ const RecurrentModel m, const RecurrentRun* runp, int layer, int phase, int units_cap,
                int tile_rows) {
  extern __shared__ __align__(16) unsigned char smem[];
  const RecurrentRun& run = *runp;
  const SmemLayout lay = smem_layout(m, 0, units_cap, tile_rows, 0);
  const int j0 = blockIdx.x * units_cap;
  const PassContext c{layer,     phase,     run.control->step, j0, min(units_cap, m.hidden - j0),
                      units_cap, tile_rows, run.row_lengths};
  const bool watcher = layer == 0 && phase != kCandidatePhase && blockIdx.x == 0 && threadIdx.x == 0;
  const int flag = watcher && flag_set(run.pause) ? 1 : 0;
  layer_pass<T, VEC, false>(m, run, c, nullptr, smem, lay);
  if (watcher) run.control->pause_seen = flag;
}

__global__ void control_kernel(const RecurrentRun* runp, cudaGraphConditionalHandle handle, int use_graph) {
  RecurrentControl* ctrl = runp->control;
  const int s = ctrl->step + 1;
  ctrl->step = s;
  const bool more = runp->start_step + s < ctrl->count;
  const bool pause = more && ctrl->pause_seen != 0;
  if (pause) ctrl->paused = 1;
  const int keep = more && !pause ? 1 : 0;
  ctrl->keep_going = keep;
  if (use_graph) cudaGraphSetConditional(handle, keep);
}

template <class T>
__global__ void finish_kernel(__grid_constant__ const RecurrentModel m, const RecurrentRun* runp) {
  const RecurrentRun& run = *runp;
  const int steps_run = run.control->step;
  write_final<T>(m, run, steps_run, 0, m.hidden, static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x,
                 static_cast<long long>(gridDim.x) * blockDim.x);
  if (blockIdx.x == 0 && threadIdx.x == 0 && run.status) {
    run.status->steps_run = steps_run;
    run.status->paused = run.control->paused;
  }
}

// --- after a resumable run ---

// One thread writes the progress; on a finished run every thread copies part of the final state.
template <class T>
__global__ void resume_report_kernel(const RecurrentStatus* status, int start_step, int total_steps, long long elements,
                                     const T* final_h, const void* final_c, bool final_c_f32, T* out_h, T* out_c,
                                     RecurrentProgress* progress) {
  const bool paused = status->paused != 0;
  const long long first = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (first == 0) {
    progress->next_step = paused ? start_step + status->steps_run : total_steps;
    progress->paused = paused ? 1 : 0;
  }
  if (paused) return;
  const long long stride = static_cast<long long>(gridDim.x) * blockDim.x;
  for (long long i = first; i < elements; i += stride) {
    if (out_h) out_h[i] = final_h[i];
    if (out_c)
      out_c[i] = final_c_f32 ? from_float<T>(static_cast<const float*>(final_c)[i]) : static_cast<const T*>(final_c)[i];
  }
}

// --- host side ---

using PersistentFn = void (*)(RecurrentModel, RecurrentRun, int, int);
using StepFn = void (*)(RecurrentModel, const RecurrentRun*, int, int, int, int);
using PrepareFn = void (*)(RecurrentModel, const RecurrentRun*, cudaGraphConditionalHandle, int);
using FinishFn = void (*)(RecurrentModel, const RecurrentRun*);

void require_dtype(const RecurrentModel& m, const char* where) {
  if (m.dtype != DType::f32 && m.dtype != DType::f16) throw_unhandled_dtype(where, m.dtype);
}

int full_vec(const RecurrentModel& m) { return m.dtype == DType::f16 ? 8 : 4; }

// 16-byte loads need H to be a multiple of the vector and every weight row 16-byte aligned.
int choose_vec(const RecurrentModel& m) {
  const int v = full_vec(m);
  if (m.hidden % v != 0) return 1;
  for (int l = 0; l < m.layers; ++l) {
    if (reinterpret_cast<std::uintptr_t>(m.layer[l].r) % 16 != 0) return 1;
    if (l > 0 && reinterpret_cast<std::uintptr_t>(m.layer[l].w) % 16 != 0) return 1;
  }
  return v;
}

PersistentFn persistent_fn(const RecurrentModel& m, int vec, bool on_chip) {
  const bool wide = vec > 1;
  if (m.dtype == DType::f16) {
    if (wide) return on_chip ? persistent_kernel<__half, 8, true> : persistent_kernel<__half, 8, false>;
    return on_chip ? persistent_kernel<__half, 1, true> : persistent_kernel<__half, 1, false>;
  }
  if (wide) return on_chip ? persistent_kernel<float, 4, true> : persistent_kernel<float, 4, false>;
  return on_chip ? persistent_kernel<float, 1, true> : persistent_kernel<float, 1, false>;
}

StepFn step_fn(const RecurrentModel& m, int vec) {
  if (m.dtype == DType::f16) return vec > 1 ? step_kernel<__half, 8> : step_kernel<__half, 1>;
  return vec > 1 ? step_kernel<float, 4> : step_kernel<float, 1>;
}
PrepareFn prepare_fn(const RecurrentModel& m) {
  return m.dtype == DType::f16 ? prepare_kernel<__half> : prepare_kernel<float>;
}
FinishFn finish_fn(const RecurrentModel& m) {
  return m.dtype == DType::f16 ? finish_kernel<__half> : finish_kernel<float>;
}

int sm_count(int device) {
  int sms = 0;
  LOOM_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  return sms;
}

// The least dynamic shared-memory limit of `kernels` on `device`, each raised to the device's
// maximum on its first use there (backend/cuda/smem_limit.hpp); nothing here ever lowers one.
template <class... Fn>
std::size_t smem_limit(int device, Fn... kernels) {
  return std::min({backend::cuda::raise_smem_limit(reinterpret_cast<const void*>(kernels), device)...});
}

struct SmemLimits {
  std::size_t persistent = 0, step = 0;  // the least of each kind's variants
};
// Raises every kernel with dynamic shared memory that a run of `m` may launch, before any plan
// queries its occupancy or any launch reads its limit.
SmemLimits raise_smem_limits(const RecurrentModel& m, int device) {
  const int v = full_vec(m);
  SmemLimits limits;
  limits.persistent = smem_limit(device, persistent_fn(m, v, true), persistent_fn(m, v, false),
                                 persistent_fn(m, 1, true), persistent_fn(m, 1, false));
  limits.step = smem_limit(device, step_fn(m, v), step_fn(m, 1));
  smem_limit(device, prepare_fn(m));  // checked at each launch: its need depends on max_batch
  return limits;
}

// Co-resident blocks per SM for both vector widths (the launch may fall back to scalar loads), on
// the current device, whose limits raise_smem_limits() has raised.
int occupancy(const RecurrentModel& m, bool on_chip, std::size_t smem) {
  int lowest = 1 << 30;
  for (int vec : {full_vec(m), 1}) {
    int blocks = 0;
    LOOM_CUDA_CHECK(
        cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, persistent_fn(m, vec, on_chip), kThreads, smem));
    lowest = std::min(lowest, blocks);
  }
  return lowest;
}

int ceil_div(int a, int b) { return (a + b - 1) / b; }

// The prepare kernel's dynamic shared memory: every row's length and the count.
std::size_t prepare_smem(int max_batch) { return (static_cast<std::size_t>(max_batch) + 1) * sizeof(int); }

}  // namespace

std::size_t recurrent_scratch_bytes(const RecurrentModel& m, int batch) {
  const std::size_t state = static_cast<std::size_t>(batch) * m.hidden;
  const std::size_t e = elem_bytes(m);
  const std::size_t cell_e = m.cell_f32 ? sizeof(float) : e;
  const bool reset = m.gru && !m.linear_before_reset;
  std::size_t n = 256;  // the base is rounded up to 256 first
  n += align_up(2 * m.layers * state * e, 256);
  n += m.gru ? 0 : align_up(m.layers * state * cell_e, 256);
  n += reset ? align_up(state * e, 256) + align_up(2 * state * sizeof(float), 256) : 0;
  n += align_up(batch * sizeof(int), 256);
  n += align_up(kControlBytes + batch * sizeof(int), 256);
  return n;
}

void bind_recurrent_scratch(const RecurrentModel& m, int batch, void* scratch, RecurrentRun& run) {
  const std::size_t state = static_cast<std::size_t>(batch) * m.hidden;
  const std::size_t e = elem_bytes(m);
  auto* p = reinterpret_cast<unsigned char*>(align_up(reinterpret_cast<std::uintptr_t>(scratch), 256));
  auto take = [&](std::size_t bytes) {
    unsigned char* at = p;
    p += align_up(bytes, 256);
    return at;
  };
  run.h_state = take(2 * m.layers * state * e);
  run.c_state = m.gru ? nullptr : take(m.layers * state * (m.cell_f32 ? sizeof(float) : e));
  const bool reset = m.gru && !m.linear_before_reset;
  run.reset_h = reset ? take(state * e) : nullptr;
  run.gru_pre = reset ? reinterpret_cast<float*>(take(2 * state * sizeof(float))) : nullptr;
  run.row_lengths = reinterpret_cast<int*>(take(batch * sizeof(int)));
  run.control = reinterpret_cast<RecurrentControl*>(take(kControlBytes + batch * sizeof(int)));
}

PersistentPlan plan_recurrent_persistent(const RecurrentModel& m, int device, int max_batch, int max_sms) {
  require_dtype(m, "plan_recurrent_persistent");
  backend::cuda::DeviceGuard guard(device);
  const SmemLimits limits = raise_smem_limits(m, device);
  PersistentPlan plan =
      loop_plan::plan_persistent(loop_shape(m), max_batch, {sm_count(device), limits.persistent, max_sms},
                                 [&m](bool on_chip, std::size_t smem) { return occupancy(m, on_chip, smem); });
  plan.threads = kThreads;
  plan.vec = full_vec(m);
  return plan;
}

void launch_recurrent_persistent(const RecurrentModel& m, const PersistentPlan& plan, const RecurrentRun& run,
                                 cudaStream_t stream) {
  require_dtype(m, "launch_recurrent_persistent");
  const int tile = std::max(1, std::min(plan.max_tile_rows, run.batch));
  const SmemLayout lay = smem_layout(m, plan.weight_smem, plan.units_per_block, tile, run.batch);
  const PersistentFn fn = persistent_fn(m, choose_vec(m), plan.on_chip);
  backend::cuda::require_smem_limit(reinterpret_cast<const void*>(fn), lay.total, "recurrent loop (persistent)");
  // The barrier counter, the stop words and the length codes start at zero.
  LOOM_CUDA_CHECK(cudaMemsetAsync(run.control, 0, kControlBytes + run.batch * sizeof(int), stream));

  cudaLaunchConfig_t config{};
  config.gridDim = dim3(static_cast<unsigned>(plan.blocks));
  config.blockDim = dim3(static_cast<unsigned>(plan.threads));
  config.dynamicSmemBytes = lay.total;
  config.stream = stream;
  // Cooperative: the launch is refused rather than scheduled partially, so the barrier cannot
  // wait on blocks that never start.
  cudaLaunchAttribute attribute{};
  attribute.id = cudaLaunchAttributeCooperative;
  attribute.val.cooperative = 1;
  config.attrs = &attribute;
  config.numAttrs = 1;
  LOOM_CUDA_CHECK(cudaLaunchKernelEx(&config, fn, m, run, plan.units_per_block, tile));
}

void launch_recurrent_resume_report(const RecurrentModel& m, const RecurrentStatus* status, int start_step,
                                    int total_steps, std::size_t elements, const void* final_h, const void* final_c,
                                    bool final_c_f32, void* out_h, void* out_c, RecurrentProgress* progress,
                                    cudaStream_t stream) {
  require_dtype(m, "launch_recurrent_resume_report");
  if ((out_h && !final_h) || (out_c && !final_c))
    throw Error(ErrorCode::internal, "launch_recurrent_resume_report: an output state without its final state");
  const auto blocks =
      static_cast<unsigned>(std::clamp<std::size_t>((elements + kThreads - 1) / kThreads, std::size_t{1}, 1024));
  const auto n = static_cast<long long>(elements);
  if (m.dtype == DType::f16)
    resume_report_kernel<__half><<<blocks, kThreads, 0, stream>>>(
        status, start_step, total_steps, n, static_cast<const __half*>(final_h), final_c, final_c_f32,
        static_cast<__half*>(out_h), static_cast<__half*>(out_c), progress);
  else
    resume_report_kernel<float><<<blocks, kThreads, 0, stream>>>(
        status, start_step, total_steps, n, static_cast<const float*>(final_h), final_c, final_c_f32,
        static_cast<float*>(out_h), static_cast<float*>(out_c), progress);
}

StepPlan plan_recurrent_steps(const RecurrentModel& m, int device) {
  require_dtype(m, "plan_recurrent_steps");
  backend::cuda::DeviceGuard guard(device);
  const SmemLimits limits = raise_smem_limits(m, device);
  StepPlan plan;
  plan.threads = kThreads;
  plan.vec = full_vec(m);
  // About 16 gate rows per block: enough blocks to spread the weight reads over the SMs.
  plan.units_per_block = std::min(m.hidden, std::max(1, 16 / gate_count(m)));
  plan.blocks = ceil_div(m.hidden, plan.units_per_block);
  int tile = kTile;
  while (tile > 1 && smem_layout(m, 0, plan.units_per_block, tile, 0).total > kStepSmemSoft) --tile;
  plan.smem_bytes = smem_layout(m, 0, plan.units_per_block, tile, 0).total;
  if (plan.smem_bytes > limits.step) loop_plan::throw_hidden_too_large(m.hidden);
  plan.max_tile_rows = tile;
  plan.prepare_blocks = 2 * sm_count(device);
  return plan;
}

void launch_recurrent_prepare(const RecurrentModel& m, const StepPlan& plan, const RecurrentRun* run, int max_batch,
                              cudaStream_t stream) {
  require_dtype(m, "launch_recurrent_prepare");
  const PrepareFn prepare = prepare_fn(m);
  backend::cuda::require_smem_limit(reinterpret_cast<const void*>(prepare), prepare_smem(max_batch),
                                    "recurrent loop (prepare)");
  reset_codes_kernel<<<1, kThreads, 0, stream>>>(run);
  scan_kernel<<<plan.prepare_blocks, kThreads, 0, stream>>>(run);
  prepare<<<plan.prepare_blocks, kThreads, prepare_smem(max_batch), stream>>>(m, run, 0, 0);
}

void launch_recurrent_step(const RecurrentModel& m, const StepPlan& plan, const RecurrentRun* run,
                           cudaStream_t stream) {
  const StepFn fn = step_fn(m, choose_vec(m));
  backend::cuda::require_smem_limit(reinterpret_cast<const void*>(fn), plan.smem_bytes, "recurrent loop (step)");
  for (int l = 0; l < m.layers; ++l) {
    if (m.gru && !m.linear_before_reset)
      fn<<<plan.blocks, plan.threads, plan.smem_bytes, stream>>>(m, run, l, kResetPhase, plan.units_per_block,
                                                                 plan.max_tile_rows);
    fn<<<plan.blocks, plan.threads, plan.smem_bytes, stream>>>(
        m, run, l, m.gru && !m.linear_before_reset ? kCandidatePhase : kFullPhase, plan.units_per_block,
        plan.max_tile_rows);
  }
  control_kernel<<<1, 1, 0, stream>>>(run, 0, 0);
}

void launch_recurrent_finish(const RecurrentModel& m, const StepPlan& plan, const RecurrentRun* run,
                             cudaStream_t stream) {
  finish_fn(m)<<<plan.prepare_blocks, kThreads, 0, stream>>>(m, run);
}

namespace {

// A kernel node after `after` (nullptr: a root node). The parameter values are copied at creation.
cudaGraphNode_t add_kernel_node(cudaGraph_t graph, cudaGraphNode_t after, const void* fn, unsigned blocks,
                                unsigned threads, std::size_t smem, void** args) {
  cudaGraphNodeParams params{};
  params.type = cudaGraphNodeTypeKernel;
  params.kernel.func = const_cast<void*>(fn);
  params.kernel.gridDim = dim3(blocks);
  params.kernel.blockDim = dim3(threads);
  params.kernel.sharedMemBytes = static_cast<unsigned>(smem);
  params.kernel.kernelParams = args;
  cudaGraphNode_t node = nullptr;
  LOOM_CUDA_CHECK(cudaGraphAddNode(&node, graph, after ? &after : nullptr, nullptr, after ? 1 : 0, &params));
  return node;
}

}  // namespace

void build_recurrent_graph(const RecurrentModel& model, const StepPlan& plan, const RecurrentRun* run, int max_batch,
                           cudaGraph_t graph) {
  require_dtype(model, "build_recurrent_graph");
  RecurrentModel m = model;
  const RecurrentRun* runp = run;
  int use_graph = 1;
  const void* prepare = reinterpret_cast<const void*>(prepare_fn(m));
  const void* step = reinterpret_cast<const void*>(step_fn(m, choose_vec(m)));
  backend::cuda::require_smem_limit(prepare, prepare_smem(max_batch), "recurrent loop (prepare)");
  backend::cuda::require_smem_limit(step, plan.smem_bytes, "recurrent loop (step)");

  // The loop condition; reset to 0 at every launch, then set by the prepare kernel.
  cudaGraphConditionalHandle handle = 0;
  LOOM_CUDA_CHECK(cudaGraphConditionalHandleCreate(&handle, graph, 0, cudaGraphCondAssignDefault));

  void* run_args[] = {&runp};
  cudaGraphNode_t node =
      add_kernel_node(graph, nullptr, reinterpret_cast<const void*>(reset_codes_kernel), 1, kThreads, 0, run_args);
  node = add_kernel_node(graph, node, reinterpret_cast<const void*>(scan_kernel),
                         static_cast<unsigned>(plan.prepare_blocks), kThreads, 0, run_args);
  void* prepare_args[] = {&m, &runp, &handle, &use_graph};
  node = add_kernel_node(graph, node, prepare, static_cast<unsigned>(plan.prepare_blocks), kThreads,
                         prepare_smem(max_batch), prepare_args);

  cudaGraphNodeParams loop{};
  loop.type = cudaGraphNodeTypeConditional;
  loop.conditional.handle = handle;
  loop.conditional.type = cudaGraphCondTypeWhile;
  loop.conditional.size = 1;
  cudaGraphNode_t loop_node = nullptr;
  LOOM_CUDA_CHECK(cudaGraphAddNode(&loop_node, graph, &node, nullptr, 1, &loop));
  cudaGraph_t body = loop.conditional.phGraph_out[0];

  // The body: every layer's step kernels in order, then the control kernel.
  int units = plan.units_per_block, tile = plan.max_tile_rows;
  cudaGraphNode_t last = nullptr;
  // kernelParams are copied when each node is added, so these locals may change between adds.
  int layer = 0, phase = kFullPhase;
  void* step_args[] = {&m, &runp, &layer, &phase, &units, &tile};
  for (layer = 0; layer < m.layers; ++layer) {
    if (m.gru && !m.linear_before_reset) {
      phase = kResetPhase;
      last =
          add_kernel_node(body, last, step, static_cast<unsigned>(plan.blocks), kThreads, plan.smem_bytes, step_args);
      phase = kCandidatePhase;
    } else {
      phase = kFullPhase;
    }
    last = add_kernel_node(body, last, step, static_cast<unsigned>(plan.blocks), kThreads, plan.smem_bytes, step_args);
  }
  void* control_args[] = {&runp, &handle, &use_graph};
  add_kernel_node(body, last, reinterpret_cast<const void*>(control_kernel), 1, 1, 0, control_args);

  void* finish_args[] = {&m, &runp};
  add_kernel_node(graph, loop_node, reinterpret_cast<const void*>(finish_fn(m)),
                  static_cast<unsigned>(plan.prepare_blocks), kThreads, 0, finish_args);
}

}  // namespace loom::kernels::decode
