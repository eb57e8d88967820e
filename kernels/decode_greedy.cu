// The greedy decoder's kernels. One set of device phases (cells, projection, token choice) serves
// both shapes of the loop: the persistent kernel runs every step in one launch, its blocks meeting
// at grid barriers between the phases and keeping their share of the cell weights in shared memory;
// the step kernels run one phase per launch (graph WHILE body, or the host loop), kernel boundaries
// taking the barriers' place.
#include "decode_greedy.cuh"

#include <climits>

#include "decode_common.cuh"
#include "decode_rows.cuh"

namespace loom::kernels::decode {
namespace {

static_assert(kGreedyThreads == kLoopThreads, "the greedy kernels use the shared loop block size");

// What a block knows about the rows. The persistent kernel keeps it across steps (every block
// derives the same tokens from the same partials); step kernels load it from the run's scratch.
struct BlockState {
  LiveRows live;
  std::int32_t token[kMaxRows];  // each row's next input token
  std::int32_t alive[kMaxRows];
  float best_logit[kLoopWarps][kMaxRows];  // projection: per warp, per live row
  std::int32_t best_token[kLoopWarps][kMaxRows];
};

__device__ __forceinline__ GreedyRun run_of(const GreedyKernelArgs& a) {
  return a.run_on_device ? *a.run_on_device : a.run;
}

__device__ __forceinline__ bool token_in_range(const GreedyModel& m, std::int32_t token) {
  return token >= 0 && token < m.vocab;
}

__device__ __forceinline__ std::int64_t state_size(const GreedyModel& m, const GreedyRun& r) {
  return static_cast<std::int64_t>(m.layers) * r.batch * m.hidden;
}

// Outputs to -1 and lengths to 0; the state from initial_h/initial_c or zeros into the half step 0
// reads; the rows' first tokens into the scratch. Grid-stride over whatever grid runs it.
template <class T>
__device__ void init_run(const GreedyModel& m, const GreedyRun& r) {
  const std::int64_t start = global_thread_index(), stride = grid_stride();
  const std::int64_t emitted = static_cast<std::int64_t>(r.steps) * r.batch;
  for (std::int64_t i = start; i < emitted; i += stride) r.tokens[i] = -1;
  const std::int64_t n = state_size(m, r);
  T* h = static_cast<T*>(r.h);
  const T* h0 = static_cast<const T*>(r.initial_h);
  for (std::int64_t i = start; i < n; i += stride) h[i] = h0 ? h0[i] : from_float<T>(0.0f);
  if (!m.gru) {
    T* c = static_cast<T*>(r.c);
    const T* c0 = static_cast<const T*>(r.initial_c);
    for (std::int64_t i = start; i < n; i += stride) c[i] = c0 ? c0[i] : from_float<T>(0.0f);
  }
  for (std::int64_t b = start; b < r.batch; b += stride) {
    const std::int32_t token = r.first_tokens[b];
    r.next_token[b] = token;
    r.alive[b] = token_in_range(m, token) ? 1 : 0;
    if (r.out_lengths) r.out_lengths[b] = 0;
  }
}

// final_h / final_c from the state's half `half`. Grid-stride.
template <class T>
__device__ void write_final_state(const GreedyModel& m, const GreedyRun& r, int half) {
  const std::int64_t n = state_size(m, r);
  const T* h = static_cast<const T*>(r.h) + half * n;
  for (std::int64_t i = global_thread_index(); i < n; i += grid_stride()) {
    if (r.final_h) static_cast<T*>(r.final_h)[i] = from_float<T>(load_shared_value(h + i));
    if (r.final_c && !m.gru)
      static_cast<T*>(r.final_c)[i] = from_float<T>(load_shared_value(static_cast<const T*>(r.c) + i));
  }
}

// Copies this block's rows of one weight matrix ([gates * hidden, n]) for its first `units` hidden
// units into shared memory, unit-major ([unit][gate][n]), one warp per row.
template <class T>
__device__ void cache_rows(T* dst, const T* src, int units, int gates, int hidden, int n, int first_unit) {
  constexpr int N = 16 / static_cast<int>(sizeof(T));
  const int warp = threadIdx.x / 32, lane = threadIdx.x & 31;
  for (int row = warp; row < units * gates; row += kLoopWarps) {
    const int u = row / gates, g = row % gates, j = first_unit + u;
    if (j >= hidden) continue;
    const T* from = src + (static_cast<std::int64_t>(g) * hidden + j) * n;
    T* to = dst + static_cast<std::int64_t>(row) * n;
    if (n % N == 0) {
      for (int i = lane * N; i < n; i += 32 * N)
        *reinterpret_cast<uint4*>(to + i) = *reinterpret_cast<const uint4*>(from + i);
    } else {
      for (int i = lane; i < n; i += 32) to[i] = from[i];
    }
  }
}

template <class T>
__device__ void fill_cache(const GreedyModel& m, unsigned char* cache) {
  const int gates = m.gru ? 3 : 4, first_unit = blockIdx.x * m.units_per_block;
  for (int l = 0; l < m.layers; ++l) {
    const GreedyLayer layer = m.layer[l];
    if (layer.w_units_cached > 0)
      cache_rows(reinterpret_cast<T*>(cache + layer.w_offset), static_cast<const T*>(layer.w), layer.w_units_cached,
                 gates, m.hidden, layer.input, first_unit);
    if (layer.r_units_cached > 0)
      cache_rows(reinterpret_cast<T*>(cache + layer.r_offset), static_cast<const T*>(layer.r), layer.r_units_cached,
                 gates, m.hidden, m.hidden, first_unit);
  }
}

// One step of layer `l` for the block's hidden units, every live row: h(t) into the state half
// 1 - parity (layer l > 0 reads layer l - 1's h(t) from there), c in place. A GRU without
// linear_before_reset runs in two parts with a grid barrier between: part 0 computes z, r and
// W_h·x and publishes r ⊙ h(t-1); part 1 reads every unit's r ⊙ h(t-1) for R_h and finishes.
// Rows that have stopped copy their h into the new half, so they keep their state.
template <class T, bool Gru>
__device__ void cell_phase(const GreedyModel& m, const GreedyRun& r, int l, int part, int parity, const BlockState& s,
                           const unsigned char* cache) {
  constexpr int G = Gru ? 3 : 4;
  const GreedyLayer layer = m.layer[l];
  const int H = m.hidden, B = r.batch, in = layer.input;
  const std::int64_t half = state_size(m, r), layer_stride = static_cast<std::int64_t>(B) * H;
  const T* h_all = static_cast<const T*>(r.h);
  const T* h_prev = h_all + parity * half + l * layer_stride;
  T* h_next = static_cast<T*>(r.h) + (1 - parity) * half + l * layer_stride;
  const T* x_base = l == 0 ? static_cast<const T*>(m.embedding) : h_all + (1 - parity) * half + (l - 1) * layer_stride;
  T* c = Gru ? nullptr : static_cast<T*>(r.c) + l * layer_stride;
  const T* bias = static_cast<const T*>(layer.bias);
  const bool split = Gru && !m.linear_before_reset;
  const int warp = threadIdx.x / 32, lane = threadIdx.x & 31;
  const int first_unit = blockIdx.x * m.units_per_block;

  for (int u = warp; u < m.units_per_block; u += kLoopWarps) {
    const int j = first_unit + u;
    if (j >= H) break;
    const T* w_row[G];
    const T* r_row[G];
#pragma unroll
    for (int g = 0; g < G; ++g) {
      w_row[g] = cache && u < layer.w_units_cached
                     ? reinterpret_cast<const T*>(cache + layer.w_offset) + static_cast<std::int64_t>(u * G + g) * in
                     : static_cast<const T*>(layer.w) + (static_cast<std::int64_t>(g) * H + j) * in;
      r_row[g] = cache && u < layer.r_units_cached
                     ? reinterpret_cast<const T*>(cache + layer.r_offset) + static_cast<std::int64_t>(u * G + g) * H
                     : static_cast<const T*>(layer.r) + (static_cast<std::int64_t>(g) * H + j) * H;
    }
    // Gate sums: LSTM i, o, f, c (W·x + R·h); GRU z, r (W·x + R·h), then W_h·x and R_h·h apart.
    const auto update = [&](int b, float a0, float a1, float a2, float a3) {
      const float h_old = load_shared_value(h_prev + static_cast<std::int64_t>(b) * H + j);
      const std::int64_t at = static_cast<std::int64_t>(b) * H + j;
      if constexpr (!Gru) {
        const auto gate = [&](int g, float acc) {
          return acc + to_float(bias[g * H + j]) + to_float(bias[(4 + g) * H + j]);
        };
        const LstmState next = lstm_cell(gate(0, a0), gate(1, a1), gate(2, a2), gate(3, a3), load_shared_value(c + at));
        c[at] = from_float<T>(next.c);
        h_next[at] = from_float<T>(next.h);
      } else {
        float* kept = r.kept_gates + static_cast<std::int64_t>(b) * 2 * H;
        if (split && part == 0) {
          const float z_pre = a0 + to_float(bias[j]) + to_float(bias[3 * H + j]);
          const float reset = sigmoid(a1 + to_float(bias[H + j]) + to_float(bias[4 * H + j]));
          kept[j] = z_pre;
          kept[H + j] = a2 + to_float(bias[2 * H + j]);
          r.reset_h[at] = reset * h_old;
        } else if (split) {
          const float h_h = a3 + to_float(bias[5 * H + j]);
          h_next[at] = from_float<T>(gru_cell(__ldcg(kept + j), 0.0f, __ldcg(kept + H + j), h_h, h_old, false));
        } else {
          const float z_pre = a0 + to_float(bias[j]) + to_float(bias[3 * H + j]);
          const float r_pre = a1 + to_float(bias[H + j]) + to_float(bias[4 * H + j]);
          const float x_h = a2 + to_float(bias[2 * H + j]);
          const float h_h = a3 + to_float(bias[5 * H + j]);
          h_next[at] = from_float<T>(gru_cell(z_pre, r_pre, x_h, h_h, h_old, true));
        }
      }
    };
    const auto chunk = [&]<int K>(int first) {
      float acc[4][K];
#pragma unroll
      for (int g = 0; g < 4; ++g)
#pragma unroll
        for (int k = 0; k < K; ++k) acc[g][k] = 0.0f;
      if (split && part == 1) {
        RowSet<float, K> reset_rows;
#pragma unroll
        for (int k = 0; k < K; ++k)
          reset_rows.rows[k] = r.reset_h + static_cast<std::int64_t>(s.live.row[first + k]) * H;
        accumulate_row(r_row[2], reset_rows, H, acc[3]);
      } else {
        RowSet<T, K> xs, hs;
#pragma unroll
        for (int k = 0; k < K; ++k) {
          const int b = s.live.row[first + k];
          xs.rows[k] =
              l == 0 ? x_base + static_cast<std::int64_t>(s.token[b]) * in : x_base + static_cast<std::int64_t>(b) * H;
          hs.rows[k] = h_prev + static_cast<std::int64_t>(b) * H;
        }
#pragma unroll
        for (int g = 0; g < G; ++g) accumulate_row(w_row[g], xs, in, acc[g]);
        accumulate_row(r_row[0], hs, H, acc[0]);
        accumulate_row(r_row[1], hs, H, acc[1]);
        if constexpr (Gru) {
          if (!split) accumulate_row(r_row[2], hs, H, acc[3]);
        } else {
          accumulate_row(r_row[2], hs, H, acc[2]);
          accumulate_row(r_row[3], hs, H, acc[3]);
        }
      }
#pragma unroll
      for (int g = 0; g < 4; ++g) warp_sum_all(acc[g]);
#pragma unroll
      for (int k = 0; k < K; ++k)
        if (lane == k) update(s.live.row[first + k], acc[0][k], acc[1][k], acc[2][k], acc[3][k]);
    };
    for_row_chunks(s.live.count, chunk);
    if (!split || part == 1)
      for (int b = lane; b < B; b += 32)
        if (!s.alive[b]) {
          const std::int64_t at = static_cast<std::int64_t>(b) * H + j;
          h_next[at] = from_float<T>(load_shared_value(h_prev + at));
        }
  }
}

template <class T>
__device__ void run_cells(const GreedyModel& m, const GreedyRun& r, int l, int part, int parity, const BlockState& s,
                          const unsigned char* cache) {
  if (m.gru)
    cell_phase<T, true>(m, r, l, part, parity, s, cache);
  else
    cell_phase<T, false>(m, r, l, part, parity, s, cache);
}

// Logits of the block's vocabulary slice for every live row from the top layer's h(t) (state half
// `half`); writes the slice's best (logit, token) per row to the partials at index blockIdx.x.
template <class T>
__device__ void projection_phase(const GreedyModel& m, const GreedyRun& r, int half, BlockState& s) {
  const int H = m.hidden, B = r.batch;
  const int warp = threadIdx.x / 32, lane = threadIdx.x & 31;
  const T* top = static_cast<const T*>(r.h) + half * state_size(m, r) + static_cast<std::int64_t>(m.layers - 1) * B * H;
  const T* projection = static_cast<const T*>(m.projection);
  const T* projection_bias = static_cast<const T*>(m.projection_bias);
  const int v_begin = blockIdx.x * m.vocab_per_block;
  const int v_end = min(v_begin + m.vocab_per_block, m.vocab);
  // Lane p % 32 keeps the best of live row p (p < 32 in slot 0, else slot 1).
  float best_logit[2] = {-INFINITY, -INFINITY};
  int best_token[2] = {INT_MAX, INT_MAX};
  for (int v = v_begin + warp; v < v_end; v += kLoopWarps) {
    const T* w = projection + static_cast<std::int64_t>(v) * H;
    const float bias = to_float(projection_bias[v]);
    const auto chunk = [&]<int K>(int first) {
      RowSet<T, K> hs;
#pragma unroll
      for (int k = 0; k < K; ++k) hs.rows[k] = top + static_cast<std::int64_t>(s.live.row[first + k]) * H;
      float acc[K];
#pragma unroll
      for (int k = 0; k < K; ++k) acc[k] = 0.0f;
      accumulate_row(w, hs, H, acc);
      warp_sum_all(acc);
#pragma unroll
      for (int k = 0; k < K; ++k) {
        const int p = first + k;
        const float logit = acc[k] + bias;
        if (lane == (p & 31)) {
          const int slot = p < 32 ? 0 : 1;
          if (better_choice(logit, v, best_logit[slot], best_token[slot])) {
            if (slot == 0)
              best_logit[0] = logit, best_token[0] = v;
            else
              best_logit[1] = logit, best_token[1] = v;
          }
        }
      }
    };
    for_row_chunks(s.live.count, chunk);
  }
  if (lane < s.live.count) s.best_logit[warp][lane] = best_logit[0], s.best_token[warp][lane] = best_token[0];
  if (lane + 32 < s.live.count)
    s.best_logit[warp][lane + 32] = best_logit[1], s.best_token[warp][lane + 32] = best_token[1];
  __syncthreads();
  const int p = threadIdx.x;
  if (p < s.live.count) {
    float logit = s.best_logit[0][p];
    int token = s.best_token[0][p];
    for (int w = 1; w < kLoopWarps; ++w)
      if (better_choice(s.best_logit[w][p], s.best_token[w][p], logit, token))
        logit = s.best_logit[w][p], token = s.best_token[w][p];
    const std::int64_t at = static_cast<std::int64_t>(blockIdx.x) * B + s.live.row[p];
    r.partial_logit[at] = logit;
    r.partial_token[at] = token;
  }
  __syncthreads();
}

// Every live row's token from the partials (one warp per row): output, length, and whether the
// row goes on. Only the writer block stores to the run's outputs; every caller updates `s`.
__device__ void choose_tokens(const GreedyModel& m, const GreedyRun& r, int step, BlockState& s, bool writer) {
  const int warp = threadIdx.x / 32, lane = threadIdx.x & 31, B = r.batch;
  for (int p = warp; p < s.live.count; p += kLoopWarps) {
    const int b = s.live.row[p];
    float logit = -INFINITY;
    int token = INT_MAX;
    for (int q = lane; q < m.partial_blocks; q += 32) {
      const std::int64_t at = static_cast<std::int64_t>(q) * B + b;
      const float other_logit = __ldcg(r.partial_logit + at);
      const int other_token = __ldcg(r.partial_token + at);
      if (better_choice(other_logit, other_token, logit, token)) logit = other_logit, token = other_token;
    }
    warp_best(logit, token);
    if (lane == 0) {
      if (token == INT_MAX) token = 0;  // every logit NaN: the reference keeps token 0
      if (writer) {
        r.tokens[static_cast<std::int64_t>(step) * B + b] = token;
        if (r.out_lengths) r.out_lengths[b] = step + 1;
      }
      if (token == m.end_token)
        s.alive[b] = 0;
      else
        s.token[b] = token;
    }
  }
}

// Step kernels: the rows' tokens and flags from the scratch into the block, and the live list.
__device__ void load_block_state(const GreedyRun& r, BlockState& s) {
  for (int b = threadIdx.x; b < r.batch; b += blockDim.x) {
    s.token[b] = r.next_token[b];
    s.alive[b] = r.alive[b];
  }
  __syncthreads();
  build_live_rows(s.live, s.alive, r.batch, false);
  __syncthreads();
}

template <class T>
__global__ void __launch_bounds__(kLoopThreads) greedy_persistent_kernel(GreedyKernelArgs a) {
  extern __shared__ __align__(16) unsigned char cache[];
  __shared__ BlockState s;
  const GreedyModel& m = a.model;
  const GreedyRun r = a.run;
  unsigned arrived = 0;
  fill_cache<T>(m, cache);
  init_run<T>(m, r);
  for (int b = threadIdx.x; b < r.batch; b += blockDim.x) {
    s.token[b] = r.first_tokens[b];
    s.alive[b] = token_in_range(m, s.token[b]) ? 1 : 0;
  }
  grid_barrier(r.barrier, arrived);
  int t = 0;
  for (; t < r.steps; ++t) {
    build_live_rows(s.live, s.alive, r.batch, false);
    __syncthreads();
    if (s.live.count == 0) break;  // every block sees the same flags: all leave together
    const int parity = t & 1;
    for (int l = 0; l < m.layers; ++l) {
      if (m.gru && !m.linear_before_reset) {
        run_cells<T>(m, r, l, 0, parity, s, cache);
        grid_barrier(r.barrier, arrived);
        run_cells<T>(m, r, l, 1, parity, s, cache);
      } else {
        run_cells<T>(m, r, l, 0, parity, s, cache);
      }
      grid_barrier(r.barrier, arrived);
    }
    projection_phase<T>(m, r, 1 - parity, s);
    grid_barrier(r.barrier, arrived);
    choose_tokens(m, r, t, s, blockIdx.x == 0);
    __syncthreads();
  }
  // After t steps the state is in half t % 2; its last writes came before the last barrier.
  write_final_state<T>(m, r, t & 1);
  if (blockIdx.x == 0 && threadIdx.x == 0) {
    r.status[0] = t;
    r.status[1] = 0;
  }
}

template <class T>
__global__ void __launch_bounds__(kLoopThreads) greedy_init_kernel(GreedyKernelArgs a) {
  const GreedyModel& m = a.model;
  const GreedyRun r = run_of(a);
  init_run<T>(m, r);
  if (blockIdx.x == 0 && threadIdx.x == 0) {
    bool any = false;
    for (int b = 0; b < r.batch; ++b) any = any || token_in_range(m, r.first_tokens[b]);
    const bool go_on = any && r.steps > 0;
    r.loop[0] = 0;
    r.loop[1] = go_on ? 1 : 0;
    r.status[0] = 0;
    r.status[1] = 0;
    if (a.set_condition) cudaGraphSetConditional(a.condition, go_on ? 1u : 0u);
  }
}

template <class T>
__global__ void __launch_bounds__(kLoopThreads) greedy_cell_kernel(GreedyKernelArgs a) {
  __shared__ BlockState s;
  const GreedyRun r = run_of(a);
  load_block_state(r, s);
  run_cells<T>(a.model, r, a.layer, a.part, r.loop[0] & 1, s, nullptr);
}

template <class T>
__global__ void __launch_bounds__(kLoopThreads) greedy_projection_kernel(GreedyKernelArgs a) {
  __shared__ BlockState s;
  const GreedyRun r = run_of(a);
  load_block_state(r, s);
  projection_phase<T>(a.model, r, 1 - (r.loop[0] & 1), s);
}

__global__ void __launch_bounds__(kLoopThreads) greedy_advance_kernel(GreedyKernelArgs a) {
  __shared__ BlockState s;
  const GreedyModel& m = a.model;
  const GreedyRun r = run_of(a);
  load_block_state(r, s);
  const int step = r.loop[0];
  choose_tokens(m, r, step, s, true);
  __syncthreads();
  for (int b = threadIdx.x; b < r.batch; b += blockDim.x) {
    r.next_token[b] = s.token[b];
    r.alive[b] = s.alive[b];
  }
  if (threadIdx.x == 0) {
    bool any = false;
    for (int b = 0; b < r.batch; ++b) any = any || s.alive[b] != 0;
    const bool go_on = any && step + 1 < r.steps;
    r.loop[0] = step + 1;
    r.loop[1] = go_on ? 1 : 0;
    r.status[0] = step + 1;
    if (a.set_condition) cudaGraphSetConditional(a.condition, go_on ? 1u : 0u);
  }
}

template <class T>
__global__ void __launch_bounds__(kLoopThreads) greedy_finish_kernel(GreedyKernelArgs a) {
  const GreedyRun r = run_of(a);
  write_final_state<T>(a.model, r, r.loop[0] & 1);
}

template <class T>
const void* kernel_of(GreedyKernel which) {
  switch (which) {
    case GreedyKernel::persistent:
      return reinterpret_cast<const void*>(&greedy_persistent_kernel<T>);
    case GreedyKernel::init:
      return reinterpret_cast<const void*>(&greedy_init_kernel<T>);
    case GreedyKernel::cell:
      return reinterpret_cast<const void*>(&greedy_cell_kernel<T>);
    case GreedyKernel::projection:
      return reinterpret_cast<const void*>(&greedy_projection_kernel<T>);
    case GreedyKernel::advance:
      return reinterpret_cast<const void*>(&greedy_advance_kernel);
    case GreedyKernel::finish:
      return reinterpret_cast<const void*>(&greedy_finish_kernel<T>);
  }
  return nullptr;
}

}  // namespace

const void* greedy_kernel(GreedyKernel which, DType dtype) {
  if (dtype == DType::f32) return kernel_of<float>(which);
  if (dtype == DType::f16) return kernel_of<__half>(which);
  throw_unhandled_dtype("greedy_kernel", dtype);
}

}  // namespace loom::kernels::decode
