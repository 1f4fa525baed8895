// host_matmul.h: the host target's one matrix-multiply kernel, shared by GEMM and convolution
// (convolution feeds it im2col panels and scatters its sums, see conv_host.cpp).
//
// Determinism: every sum is one fp32 accumulator that starts at 0 and adds a(i, p) * b(p, j)
// for p = 0, 1, ..., k - 1 in that order. Blocking decides only which sums are computed
// together, never the order inside one, so results are bitwise repeatable and do not depend on
// the tile sizes below (nor on where a row falls in its block).
//
// Speed: op(B) is packed kPanelColumns columns at a time into a contiguous k x cols panel, op(A)
// kRowBlock rows at a time (k-major, so one k's values are adjacent), and the inner loop updates
// a kRowBlock x cols tile of sums from one row of the panel, which the compiler vectorizes.
// A 128 x 768 x 768 GEMM takes tens of milliseconds at -O2 on one core.
//
// Element types: packing reads each operand through its ElementLoad (host_elements.h), so the
// panels, the tile and every sum are fp32 whatever the operands' dtype (and TF32-rounded
// operands for allow_tf32); the callers round the results to the output's dtype.
#pragma once

#include "host_elements.h"

#include <algorithm>
#include <cstddef>
#include <cstdint>

namespace stitch::library::host {

inline constexpr int64_t kRowBlock = 4;
inline constexpr int64_t kPanelColumns = 128;

// A row-major matrix read as op(X): element (r, c) is data[r * ld + c], or data[c * ld + r]
// when `transposed`, each read as `load` says.
struct MatrixView {
  const void* data;
  int64_t ld;
  bool transposed;
  ElementLoad load = ElementLoad::Float32;
};

// Packs op(X) rows [0, k), columns [col0, col0 + cols) into panel[p * cols + j].
void pack_panel(const MatrixView& x, int64_t k, int64_t col0, int64_t cols, float* panel);
// Packs op(X) rows [row0, row0 + rows), columns [0, k) into block[p * kRowBlock + i]; the
// rows of the block past `rows` are zero.
void pack_row_block(const MatrixView& x, int64_t k, int64_t row0, int64_t rows, float* block);

// sums[i][j] = sum over p in [0, k) of block[p * kRowBlock + i] * panel[p * cols + j],
// accumulated in ascending p from 0.
void multiply_tile(int64_t k, int64_t cols, const float* block, const float* panel,
                   float (*sums)[kPanelColumns]);

// The calling thread's scratch buffer `slot` (0 or 1), grown to at least `floats` floats and
// kept for the thread's next call.
float* thread_scratch(int slot, std::size_t floats);

// S = op(A) @ op(B), m x n with inner size k, tile by tile. The operands come from
//   pack_rows(row0, rows, block)      as pack_row_block does for op(A), and
//   pack_columns(col0, cols, panel)   as pack_panel does for op(B);
// each finished row segment goes to store(row, col0, sums, cols): S(row, col0 + j) = sums[j].
// Segments arrive in a fixed order (column panels outer, then rows ascending).
template <typename PackRows, typename PackColumns, typename Store>
void multiply_packed(int64_t m, int64_t n, int64_t k, PackRows&& pack_rows,
                     PackColumns&& pack_columns, Store&& store) {
  float* panel = thread_scratch(0, static_cast<std::size_t>(k * kPanelColumns));
  float* block = thread_scratch(1, static_cast<std::size_t>(k * kRowBlock));
  alignas(64) float sums[kRowBlock][kPanelColumns];
  for (int64_t col0 = 0; col0 < n; col0 += kPanelColumns) {
    const int64_t cols = std::min(kPanelColumns, n - col0);
    pack_columns(col0, cols, panel);
    for (int64_t row0 = 0; row0 < m; row0 += kRowBlock) {
      const int64_t rows = std::min(kRowBlock, m - row0);
      pack_rows(row0, rows, block);
      multiply_tile(k, cols, block, panel, sums);
      for (int64_t i = 0; i < rows; ++i)
        store(row0 + i, col0, sums[i], cols);
    }
  }
}

// multiply_packed() with both operands read through views.
template <typename Store>
void multiply(int64_t m, int64_t n, int64_t k, const MatrixView& a, const MatrixView& b,
              Store&& store) {
  multiply_packed(
      m, n, k,
      [&](int64_t row0, int64_t rows, float* block) { pack_row_block(a, k, row0, rows, block); },
      [&](int64_t col0, int64_t cols, float* panel) { pack_panel(b, k, col0, cols, panel); },
      store);
}

} // namespace stitch::library::host
