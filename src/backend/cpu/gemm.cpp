// A cache-blocked f32 GEMM in the classic packed form: B is copied block by block into column
// slivers that stay in L1/L2, A into row slivers, and a small fixed-size tile kernel does the
// multiply-adds. The tile kernel is plain C++ with compile-time sizes so the compiler vectorises
// and register-allocates it; on x86-64 it is also built for AVX2+FMA and picked at load time.
// Large problems are split into panels of C over the kernel's threads (parallel.hpp).
#include "backend/cpu/gemm.hpp"

#include <algorithm>
#include <cstring>

#include "backend/cpu/kernel_support.hpp"
#include "backend/cpu/parallel.hpp"
#include "backend/cpu/target_clones.hpp"

namespace loom::backend::cpu {
namespace {

// Tile shape: 4 x 16 accumulators are 8 AVX registers; measured faster than 6 x 16 (which GCC
// spills) on Zen 4 with GCC 12.
constexpr std::int64_t kTileRows = 4;
constexpr std::int64_t kTileCols = 16;
// Block sizes: a packed A block (kRowBlock x kDepthBlock, 120 KiB) sits in L2, a B sliver
// (kDepthBlock x kTileCols, 16 KiB) in L1; the packed B block (up to 1 MiB) in L2/L3.
constexpr std::int64_t kDepthBlock = 256;
constexpr std::int64_t kRowBlock = 120;   // a multiple of kTileRows
constexpr std::int64_t kColBlock = 1024;  // a multiple of kTileCols

// Packs rows [row0, row0 + rows) x depth [p0, p0 + depth) of A into slivers of kTileRows rows:
// sliver s holds, for each p, the kTileRows values A[row0 + s*kTileRows + i, p0 + p]. Rows past
// the end are zero so the tile kernel never needs an edge case.
void pack_a(const MatrixRef& a, std::int64_t row0, std::int64_t p0, std::int64_t rows, std::int64_t depth, float* dst) {
  for (std::int64_t s = 0; s < rows; s += kTileRows) {
    const std::int64_t valid = std::min(kTileRows, rows - s);
    for (std::int64_t i = 0; i < kTileRows; ++i) {
      float* out = dst + i;
      if (i >= valid) {
        for (std::int64_t p = 0; p < depth; ++p) out[p * kTileRows] = 0.0f;
        continue;
      }
      const float* in = a.data + (row0 + s + i) * a.row_stride + p0 * a.col_stride;
      for (std::int64_t p = 0; p < depth; ++p) out[p * kTileRows] = in[p * a.col_stride];
    }
    dst += kTileRows * depth;
  }
}

// Packs depth [p0, p0 + depth) x columns [col0, col0 + cols) of B into slivers of kTileCols
// columns: sliver s holds, for each p, the kTileCols values B[p0 + p, col0 + s*kTileCols + j].
void pack_b(const MatrixRef& b, std::int64_t p0, std::int64_t col0, std::int64_t depth, std::int64_t cols, float* dst) {
  for (std::int64_t s = 0; s < cols; s += kTileCols) {
    const std::int64_t valid = std::min(kTileCols, cols - s);
    const float* in = b.data + p0 * b.row_stride + (col0 + s) * b.col_stride;
    if (b.col_stride == 1 && valid == kTileCols) {
      // Rows of B are contiguous: copy kTileCols at a time (a fixed size the compiler vectorises).
      for (std::int64_t p = 0; p < depth; ++p)
        std::memcpy(dst + p * kTileCols, in + p * b.row_stride, sizeof(float) * kTileCols);
    } else if (b.col_stride == 1) {
      for (std::int64_t p = 0; p < depth; ++p) {
        float* out = dst + p * kTileCols;
        const float* row = in + p * b.row_stride;
        std::int64_t j = 0;
        for (; j < valid; ++j) out[j] = row[j];
        for (; j < kTileCols; ++j) out[j] = 0.0f;
      }
    } else {
      // Columns are contiguous (a transposed operand): walk each column down its storage.
      for (std::int64_t j = 0; j < kTileCols; ++j) {
        float* out = dst + j;
        if (j >= valid) {
          for (std::int64_t p = 0; p < depth; ++p) out[p * kTileCols] = 0.0f;
          continue;
        }
        const float* column = in + j * b.col_stride;
        for (std::int64_t p = 0; p < depth; ++p) out[p * kTileCols] = column[p * b.row_stride];
      }
    }
    dst += kTileCols * depth;
  }
}

// tile[i][j] = sum_p a[p][i] * b[p][j] over one packed A sliver and one packed B sliver.
LOOM_CPU_CLONES
void multiply_tile(std::int64_t depth, const float* __restrict a, const float* __restrict b, float* __restrict tile) {
  float acc[kTileRows][kTileCols] = {};
  for (std::int64_t p = 0; p < depth; ++p) {
#pragma GCC unroll 8
    for (std::int64_t i = 0; i < kTileRows; ++i) {
      const float a_value = a[i];
#pragma GCC unroll 16
      for (std::int64_t j = 0; j < kTileCols; ++j) acc[i][j] += a_value * b[j];
    }
    a += kTileRows;
    b += kTileCols;
  }
  std::memcpy(tile, acc, sizeof(acc));
}

// Writes a finished tile into C. The first depth block applies beta; later ones accumulate.
void store_tile(const float* tile, float* c, std::int64_t ldc, std::int64_t rows, std::int64_t cols, float alpha,
                float beta, bool first_depth_block) {
  for (std::int64_t i = 0; i < rows; ++i) {
    float* out = c + i * ldc;
    const float* in = tile + i * kTileCols;
    if (!first_depth_block || beta == 1.0f) {
      for (std::int64_t j = 0; j < cols; ++j) out[j] += alpha * in[j];
    } else if (beta == 0.0f) {
      for (std::int64_t j = 0; j < cols; ++j) out[j] = alpha * in[j];
    } else {
      for (std::int64_t j = 0; j < cols; ++j) out[j] = alpha * in[j] + beta * out[j];
    }
  }
}

// Few rows of A (an LSTM step, a batch-1 classifier): packing B would cost as much as the multiply,
// so stream B once. Used when B's rows are contiguous; C already holds beta * C.
constexpr std::int64_t kSmallRows = 4;

LOOM_CPU_CLONES
void multiply_few_rows(std::int64_t m, std::int64_t n, std::int64_t k, float alpha, MatrixRef a,
                       const float* __restrict b, std::int64_t ldb, float* __restrict c, std::int64_t ldc) {
  // Column blocks keep the kSmallRows pieces of C in L1 while B streams past.
  constexpr std::int64_t kColumns = 512;
  for (std::int64_t col0 = 0; col0 < n; col0 += kColumns) {
    const std::int64_t cols = std::min(kColumns, n - col0);
    for (std::int64_t p = 0; p < k; ++p) {
      const float* b_row = b + p * ldb + col0;
      for (std::int64_t i = 0; i < m; ++i) {
        const float a_value = alpha * a.data[i * a.row_stride + p * a.col_stride];
        float* out = c + i * ldc + col0;
        for (std::int64_t j = 0; j < cols; ++j) out[j] += a_value * b_row[j];
      }
    }
  }
}

// The same with B's columns contiguous (a transposed weight): each C entry is a dot product,
// summed in 16 independent lanes so it vectorises without reassociation.
LOOM_CPU_CLONES
void multiply_few_rows_by_columns(std::int64_t m, std::int64_t n, std::int64_t k, float alpha, MatrixRef a,
                                  const float* __restrict b, std::int64_t ldb, float* __restrict c, std::int64_t ldc,
                                  float* __restrict a_row) {
  constexpr std::int64_t kLanes = 16;
  for (std::int64_t i = 0; i < m; ++i) {
    for (std::int64_t p = 0; p < k; ++p) a_row[p] = a.data[i * a.row_stride + p * a.col_stride];
    for (std::int64_t j = 0; j < n; ++j) {
      const float* column = b + j * ldb;
      float lanes[kLanes] = {};
      std::int64_t p = 0;
      for (; p + kLanes <= k; p += kLanes)
#pragma GCC unroll 16
        for (std::int64_t q = 0; q < kLanes; ++q) lanes[q] += a_row[p + q] * column[p + q];
      float sum = 0.0f;
      for (; p < k; ++p) sum += a_row[p] * column[p];
      for (std::int64_t q = 0; q < kLanes; ++q) sum += lanes[q];
      c[i * ldc + j] += alpha * sum;
    }
  }
}

// Floats of the packed A block, rounded to 64 bytes so the packed B block after it is aligned.
std::int64_t packed_a_floats(std::int64_t m, std::int64_t k) {
  return round_up(round_up(std::min(m, kRowBlock), kTileRows) * std::min(k, kDepthBlock), 16);
}

void scale_c(std::int64_t m, std::int64_t n, float beta, float* c, std::int64_t ldc) {
  for (std::int64_t i = 0; i < m; ++i) {
    float* row = c + i * ldc;
    if (beta == 0.0f) {
      std::fill(row, row + n, 0.0f);
    } else if (beta != 1.0f) {
      for (std::int64_t j = 0; j < n; ++j) row[j] *= beta;
    }
  }
}

}  // namespace

std::size_t gemm_workspace_bytes(std::int64_t m, std::int64_t n, std::int64_t k) {
  if (m <= 0 || n <= 0 || k <= 0) return 0;
  // The packed path holds one A block and one B block; the few-rows path with a transposed B
  // instead copies one row of A (k floats).
  const std::int64_t b_floats = round_up(std::min(n, kColBlock), kTileCols) * std::min(k, kDepthBlock);
  const std::int64_t packed_floats = packed_a_floats(m, k) + b_floats;
  return static_cast<std::size_t>(std::max(packed_floats, k)) * sizeof(float);
}

namespace {

// The one-thread GEMM over a block of C. `few_rows` is decided once for the whole problem, so a
// block of a split problem takes the path the whole would (the paths round differently).
void gemm_block(std::int64_t m, std::int64_t n, std::int64_t k, float alpha, MatrixRef a, MatrixRef b, float beta,
                float* c, std::int64_t ldc, void* workspace, bool few_rows) {
  if (few_rows) {
    scale_c(m, n, beta, c, ldc);
    if (b.col_stride == 1)
      multiply_few_rows(m, n, k, alpha, a, b.data, b.row_stride, c, ldc);
    else
      multiply_few_rows_by_columns(m, n, k, alpha, a, b.data, b.col_stride, c, ldc, static_cast<float*>(workspace));
    return;
  }
  float* packed_a = static_cast<float*>(workspace);
  float* packed_b = packed_a + packed_a_floats(m, k);
  alignas(64) float tile[kTileRows * kTileCols];

  for (std::int64_t col0 = 0; col0 < n; col0 += kColBlock) {
    const std::int64_t cols = std::min(kColBlock, n - col0);
    for (std::int64_t p0 = 0; p0 < k; p0 += kDepthBlock) {
      const std::int64_t depth = std::min(kDepthBlock, k - p0);
      const bool first_depth_block = p0 == 0;
      pack_b(b, p0, col0, depth, cols, packed_b);
      for (std::int64_t row0 = 0; row0 < m; row0 += kRowBlock) {
        const std::int64_t rows = std::min(kRowBlock, m - row0);
        pack_a(a, row0, p0, rows, depth, packed_a);
        for (std::int64_t js = 0; js < cols; js += kTileCols) {
          const float* b_sliver = packed_b + js * depth;
          const std::int64_t tile_cols = std::min(kTileCols, cols - js);
          for (std::int64_t is = 0; is < rows; is += kTileRows) {
            multiply_tile(depth, packed_a + is * depth, b_sliver, tile);
            store_tile(tile, c + (row0 + is) * ldc + col0 + js, ldc, std::min(kTileRows, rows - is), tile_cols, alpha,
                       beta, first_depth_block);
          }
        }
      }
    }
  }
}

}  // namespace

// Multiply-adds below which a chunk does not pay for waking another thread (~25 us of one core).
constexpr std::int64_t kChunkMacs = std::int64_t{1} << 19;

void gemm(std::int64_t m, std::int64_t n, std::int64_t k, float alpha, MatrixRef a, MatrixRef b, float beta, float* c,
          std::int64_t ldc, void* workspace) {
  if (m <= 0 || n <= 0) return;
  if (k <= 0 || alpha == 0.0f) {
    scale_c(m, n, beta, c, ldc);
    return;
  }
  const bool few_rows = m <= kSmallRows && (b.col_stride == 1 || b.row_stride == 1);
  // Threads split C into panels of whole tiles, columns first (each thread packs only its part of
  // B; A, the smaller operand in convolutions, is packed by each). Every element still sums the
  // same depth blocks in the same order, so the result does not depend on the split.
  const int chunks = parallel_chunks(m * n * k, kChunkMacs);
  const int column_chunks = static_cast<int>(std::min<std::int64_t>(chunks, (n + kTileCols - 1) / kTileCols));
  const int row_chunks =
      few_rows ? 1 : static_cast<int>(std::min<std::int64_t>(chunks, (m + kTileRows - 1) / kTileRows));
  if (std::max(column_chunks, row_chunks) <= 1)
    return gemm_block(m, n, k, alpha, a, b, beta, c, ldc, workspace, few_rows);
  const bool by_columns = column_chunks >= row_chunks;
  const int panels = by_columns ? column_chunks : row_chunks;
  run_chunks(panels, [&](int panel) {
    if (by_columns) {
      const auto [begin, end] = chunk_range(n, panels, panel, kTileCols);
      if (begin == end) return;
      MatrixRef block = b;
      block.data += begin * b.col_stride;
      gemm_block(m, end - begin, k, alpha, a, block, beta, c + begin, ldc,
                 thread_scratch(gemm_workspace_bytes(m, end - begin, k)), few_rows);
    } else {
      const auto [begin, end] = chunk_range(m, panels, panel, kTileRows);
      if (begin == end) return;
      MatrixRef block = a;
      block.data += begin * a.row_stride;
      gemm_block(end - begin, n, k, alpha, block, b, beta, c + begin * ldc, ldc,
                 thread_scratch(gemm_workspace_bytes(end - begin, n, k)), few_rows);
    }
  });
}

}  // namespace loom::backend::cpu
