// host_matmul.cpp: packing and the inner tile of the host target's matrix multiply (see
// host_matmul.h for the summation order this must keep).
#include "host_matmul.h"

#include <vector>

namespace stitch::library::host {

void pack_panel(const MatrixView& x, int64_t k, int64_t col0, int64_t cols, float* panel) {
  with_reader(x.load, [&](auto reader) {
    for (int64_t p = 0; p < k; ++p) {
      float* destination = panel + p * cols;
      if (!x.transposed) {
        const int64_t source = p * x.ld + col0;
        for (int64_t j = 0; j < cols; ++j)
          destination[j] = reader.read(x.data, source + j);
      } else {
        const int64_t source = col0 * x.ld + p;
        for (int64_t j = 0; j < cols; ++j)
          destination[j] = reader.read(x.data, source + j * x.ld);
      }
    }
  });
}

void pack_row_block(const MatrixView& x, int64_t k, int64_t row0, int64_t rows, float* block) {
  with_reader(x.load, [&](auto reader) {
    for (int64_t i = 0; i < kRowBlock; ++i) {
      if (i >= rows) {
        for (int64_t p = 0; p < k; ++p)
          block[p * kRowBlock + i] = 0.0f;
        continue;
      }
      const int64_t row = row0 + i;
      if (!x.transposed) {
        const int64_t source = row * x.ld;
        for (int64_t p = 0; p < k; ++p)
          block[p * kRowBlock + i] = reader.read(x.data, source + p);
      } else {
        for (int64_t p = 0; p < k; ++p)
          block[p * kRowBlock + i] = reader.read(x.data, row + p * x.ld);
      }
    }
  });
}

void multiply_tile(int64_t k, int64_t cols, const float* __restrict block,
                   const float* __restrict panel, float (*sums)[kPanelColumns]) {
  static_assert(kRowBlock == 4, "multiply_tile is written for four rows");
  float* __restrict sum0 = sums[0];
  float* __restrict sum1 = sums[1];
  float* __restrict sum2 = sums[2];
  float* __restrict sum3 = sums[3];
  for (int64_t j = 0; j < cols; ++j)
    sum0[j] = sum1[j] = sum2[j] = sum3[j] = 0.0f;
  for (int64_t p = 0; p < k; ++p) {
    const float a0 = block[p * kRowBlock + 0];
    const float a1 = block[p * kRowBlock + 1];
    const float a2 = block[p * kRowBlock + 2];
    const float a3 = block[p * kRowBlock + 3];
    const float* __restrict row = panel + p * cols;
    for (int64_t j = 0; j < cols; ++j) {
      const float b = row[j];
      sum0[j] += a0 * b;
      sum1[j] += a1 * b;
      sum2[j] += a2 * b;
      sum3[j] += a3 * b;
    }
  }
}

float* thread_scratch(int slot, std::size_t floats) {
  thread_local std::vector<float> buffers[2];
  std::vector<float>& buffer = buffers[slot];
  if (buffer.size() < floats) buffer.resize(floats);
  return buffer.data();
}

} // namespace stitch::library::host
