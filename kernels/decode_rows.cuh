// Device pieces the greedy and encoder loop kernels share: warp-wide products of one weight row with
// a few batch rows at once (the weights are read once for all of them), loads that see what other
// thread blocks wrote before a grid barrier, and the list of batch rows still running.
// Included only by .cu files.
#pragma once

#include <cuda_fp16.h>

#include <climits>
#include <cstdint>
#include <type_traits>

#include "common.cuh"

namespace loom::kernels::decode {

constexpr int kLoopThreads = 256;  // every decode-loop kernel runs blocks of this many threads
constexpr int kLoopWarps = kLoopThreads / 32;
constexpr int kMaxRows = 64;  // DecoderOptions::max_batch's upper bound

// Loads through L2 only. Data written by other blocks of a running kernel must not come from a
// block's L1, which is not coherent with them.
__device__ __forceinline__ float load_shared_value(const float* p) { return __ldcg(p); }
__device__ __forceinline__ float load_shared_value(const __half* p) {
  return __half2float(__ushort_as_half(__ldcg(reinterpret_cast<const unsigned short*>(p))));
}

// N consecutive values from an address aligned to N * sizeof(T), converted to float. `coherent`:
// through L2 (values other blocks wrote); otherwise an ordinary load (weights: read-only, possibly
// in shared memory).
template <int N, class T>
__device__ __forceinline__ void load_packet(const T* p, float (&out)[N], bool coherent) {
  constexpr int kBytes = N * static_cast<int>(sizeof(T));
  static_assert(kBytes == 8 || kBytes == 16 || kBytes == 32, "packets are 8, 16 or 32 bytes");
  if constexpr (std::is_same_v<T, float>) {
    const float4* q = reinterpret_cast<const float4*>(p);
    if constexpr (N == 4) {
      const float4 v = coherent ? __ldcg(q) : *q;
      out[0] = v.x, out[1] = v.y, out[2] = v.z, out[3] = v.w;
    } else {
      const float4 a = coherent ? __ldcg(q) : q[0];
      const float4 b = coherent ? __ldcg(q + 1) : q[1];
      out[0] = a.x, out[1] = a.y, out[2] = a.z, out[3] = a.w;
      out[4] = b.x, out[5] = b.y, out[6] = b.z, out[7] = b.w;
    }
  } else {
    static_assert(std::is_same_v<T, __half>, "float or __half");
    if constexpr (N == 8) {
      const uint4* q = reinterpret_cast<const uint4*>(p);
      const uint4 v = coherent ? __ldcg(q) : *q;
      const unsigned words[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        const float2 f = __half22float2(*reinterpret_cast<const __half2*>(&words[i]));
        out[2 * i] = f.x, out[2 * i + 1] = f.y;
      }
    } else {
      const uint2* q = reinterpret_cast<const uint2*>(p);
      const uint2 v = coherent ? __ldcg(q) : *q;
      const unsigned words[2] = {v.x, v.y};
#pragma unroll
      for (int i = 0; i < 2; ++i) {
        const float2 f = __half22float2(*reinterpret_cast<const __half2*>(&words[i]));
        out[2 * i] = f.x, out[2 * i + 1] = f.y;
      }
    }
  }
}

// K batch rows of one product: row k is rows[k][0, n).
template <class V, int K>
struct RowSet {
  const V* rows[K];
};

// acc[k] += this lane's share of w · rows[k] over n values. The caller sums over the warp
// (warp_sum). Weights are W (float or __half, global or shared memory); rows are V (float or
// __half) in global memory written by other blocks. 16-byte weight loads when n allows them; all
// base pointers are 16-byte aligned (device allocations, shared-memory slots, scratch arrays).
template <class W, class V, int K>
__device__ __forceinline__ void accumulate_row(const W* w, const RowSet<V, K>& x, int n, float (&acc)[K]) {
  constexpr int N = 16 / static_cast<int>(sizeof(W));
  const int lane = threadIdx.x & 31;
  if (n % N == 0) {
#pragma unroll 2
    for (int i = lane * N; i < n; i += 32 * N) {
      float wf[N];
      load_packet<N>(w + i, wf, false);
#pragma unroll
      for (int k = 0; k < K; ++k) {
        float xf[N];
        load_packet<N>(x.rows[k] + i, xf, true);
#pragma unroll
        for (int e = 0; e < N; ++e) acc[k] = fmaf(wf[e], xf[e], acc[k]);
      }
    }
  } else {
    for (int i = lane; i < n; i += 32) {
      const float wv = to_float(w[i]);
#pragma unroll
      for (int k = 0; k < K; ++k) acc[k] = fmaf(wv, load_shared_value(x.rows[k] + i), acc[k]);
    }
  }
}

template <int K>
__device__ __forceinline__ void warp_sum_all(float (&acc)[K]) {
#pragma unroll
  for (int k = 0; k < K; ++k) acc[k] = warp_sum(acc[k]);
}

// The batch rows still running, in increasing order: row[p] for p < count. Built by each block
// from a per-row flag; every block that builds it from the same flags gets the same list.
struct LiveRows {
  int count;
  int row[kMaxRows];
};

// Thread 0 builds the list; the caller's __syncthreads() publishes it. `alive` may be shared or
// global memory (read coherently).
__device__ __forceinline__ void build_live_rows(LiveRows& live, const std::int32_t* alive, int batch, bool global) {
  if (threadIdx.x == 0) {
    int count = 0;
    for (int b = 0; b < batch; ++b) {
      const std::int32_t on = global ? __ldcg(alive + b) : alive[b];
      if (on) live.row[count++] = b;
    }
    live.count = count;
  }
}

// Calls body.template operator()<K>(first) for consecutive chunks of up to 4 live rows, with K the
// chunk's size rounded down to 4, 2 or 1 so that no product is computed for a row twice.
template <class Body>
__device__ __forceinline__ void for_row_chunks(int count, Body&& body) {
  int first = 0;
  for (; first + 4 <= count; first += 4) body.template operator()<4>(first);
  if (first + 2 <= count) {
    body.template operator()<2>(first);
    first += 2;
  }
  if (first < count) body.template operator()<1>(first);
}

// (logit, token) pairs: the larger logit wins, equal logits go to the smaller token.
__device__ __forceinline__ bool better_choice(float value, int token, float best_value, int best_token) {
  return value > best_value || (value == best_value && token < best_token);
}

__device__ __forceinline__ void warp_best(float& value, int& token) {
  for (int offset = 16; offset > 0; offset >>= 1) {
    const float other_value = __shfl_xor_sync(0xffffffffu, value, offset);
    const int other_token = __shfl_xor_sync(0xffffffffu, token, offset);
    if (better_choice(other_value, other_token, value, token)) value = other_value, token = other_token;
  }
}

}  // namespace loom::kernels::decode
