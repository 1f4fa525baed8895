// Launchers for chain_kernels.cu: device/stitch_gemm_chain.cuh's GEMM chain in thread-block
// clusters over dense row-major tensors, compiled for the host target (test_gemm_chain.cpp) and
// by nvcc for sm_90 (the stitch_runtime_nvcc_chain_kernels test). Pointers are device pointers.
#pragma once

#include "stitch_cuda.h"

#include <cstdint>

namespace stitch::test {

enum class ChainActivation {
  BiasGelu, // hidden = gelu_erf(X·W1 + b1)
  SiluGate, // hidden = silu(X·W1) · (X·W3), a gated MLP
};

// The tile geometries the tests instantiate (ChainConfig<element, warps m, warps n, k step,
// hidden tile, output tile, gated>).
enum class ChainGeometry {
  Half,       // <float16, 2, 2, 32, 64, 64>: 32-row tiles
  Bf16Decode, // <bfloat16, 1, 4, 64, 64, 128>: 16-row tiles, for a few rows
  HalfNarrow, // <float16, 2, 2, 64, 32, 64>: a k step wider than the hidden tile (a slice that
              // is no multiple of it)
};

// X [rows, inner], W1 and W3 [inner, hidden], W2 [hidden, columns], each row-major, as the bits
// of the element type (float16 or bfloat16, by the geometry); b1 [hidden], b2 [columns] and out
// [rows, columns] are float. out = (hidden values rounded to the element type) · W2 + b2,
// rounded to the element type. With `vectors` the kernel copies whole 16-byte vectors of rows
// asynchronously (the row lengths must be multiples of 8).
struct ChainArgs {
  const uint16_t* x = nullptr;
  const uint16_t* w1 = nullptr;
  const uint16_t* w3 = nullptr;
  const uint16_t* w2 = nullptr;
  const float* b1 = nullptr;
  const float* b2 = nullptr;
  float* out = nullptr;
  int64_t rows = 0, inner = 0, hidden = 0, columns = 0;
  ChainActivation activation = ChainActivation::BiasGelu;
  bool vectors = false;
};

// One cluster of `cluster_blocks` blocks per row tile, the hidden dim split over its blocks.
cudaError_t launch_gemm_chain(ChainGeometry geometry, const ChainArgs& args, int cluster_blocks);

} // namespace stitch::test
