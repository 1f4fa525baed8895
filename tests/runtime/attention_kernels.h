// Launchers for attention_kernels.cu: device/stitch_attention.cuh's one-pass attention over
// dense per-head tensors, compiled for the host target (test_attention.cpp) and by nvcc for
// sm_90 (the stitch_runtime_nvcc_attention_kernels test). Pointers are device pointers.
#pragma once

#include "stitch_cuda.h"

#include <cstdint>

namespace stitch::test {

// The tile geometries the tests instantiate (FlashConfig<head dim, value dim, warps, rows per
// warp, key tile>).
enum class AttentionGeometry {
  Dim64,  // <64, 64, 4, 4, 32>
  Odd,    // <40, 24, 2, 3, 64>: dims that are no multiple of 32, two keys per lane
  Wide,   // <256, 256, 4, 2, 32>: the largest head, over 48 KiB of shared memory
  Single, // <1, 1, 1, 1, 32>
  // Tensor cores (FlashMmaConfig<element, head dim, value dim, warps, key tile>): the inputs must
  // hold values of the element type (the tests round them).
  MmaHalf,     // <float16, 64, 64, 4, 64>
  MmaBf16Odd,  // <bfloat16, 40, 24, 2, 32>: dims padded to 48 and 32
  MmaHalfWide, // <float16, 256, 256, 2, 32>
};

// q [heads, queries, head_dim], k [heads, keys, head_dim], v [heads, keys, value_dim], the
// optional bias [heads, queries, keys] and out [heads, queries, value_dim], contiguous. The
// logit of query i and key j is dot * scale + bias; with `causal`, keys j > i + causal_offset
// are excluded (-infinity), and the kernel skips the key tiles no query of its tile sees.
struct AttentionProblemArgs {
  const float* q = nullptr;
  const float* k = nullptr;
  const float* v = nullptr;
  const float* bias = nullptr;
  float* out = nullptr;
  int64_t heads = 0, queries = 0, keys = 0;
  int head_dim = 0, value_dim = 0;
  float scale = 1.0f;
  bool causal = false;
  int64_t causal_offset = 0;
  // fp32 geometries whose dims are multiples of 4: the kernel reads rows of Q, K and V as
  // 16-byte vectors (the problem's kQueryVector, ... 4), as generated code does for such rows.
  bool row_vectors = false;
};

// One block per (head, query tile).
cudaError_t launch_flash_attention(AttentionGeometry geometry, const AttentionProblemArgs& args);

// Flash-decoding: the keys in `splits` ranges, one block per (head, query tile, split) writing
// partial results to scratch (allocated here), then a combine kernel.
cudaError_t launch_flash_attention_split(AttentionGeometry geometry,
                                         const AttentionProblemArgs& args, int splits);

} // namespace stitch::test
