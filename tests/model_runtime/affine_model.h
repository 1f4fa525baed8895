// affine_model.h: what the tests know about the hand-written "generated" model in
// affine_model.cu, and the test-only switch that makes it misbehave.
//
// The model: input x float32[4,8]; weights w float32[8] embedded in the library;
//   output 0  y float32[4,8] = 2x + 1
//   output 1  z float32[4]   = per row, the sum of (2x + 1) * w, through an arena buffer
// z's sum runs as a shared-memory tree (columns c and c + 4, then c + 2, then c + 1), and
// affine_reference repeats that order, so a correct run matches it bitwise.
#pragma once

#include <cstddef>

namespace affine {

inline constexpr int kRows = 4;
inline constexpr int kCols = 8;
inline constexpr std::size_t kInputBytes = kRows * kCols * sizeof(float);
inline constexpr std::size_t kSumBytes = kRows * sizeof(float);
// The symbolic variant's arena at its maximum (kRows): two slots, 1024 + 256 bytes (its
// layout for fewer rows is smaller: see affine_model.cu).
inline constexpr std::size_t kSymbolicArenaBytes = 1280;
inline constexpr float kWeights[kCols] = {0.5f, -1.25f, 2.0f, 0.75f, -0.5f, 1.5f, -2.25f, 0.375f};

// What the model computes, in the model's order of operations.
inline void affine_reference(const float* x, float* y, float* z) {
  for (int r = 0; r < kRows; ++r) {
    float partial[kCols];
    for (int c = 0; c < kCols; ++c) {
      y[r * kCols + c] = x[r * kCols + c] * 2.0f + 1.0f;
      partial[c] = y[r * kCols + c] * kWeights[c];
    }
    for (int stride = kCols / 2; stride > 0; stride /= 2)
      for (int c = 0; c < stride; ++c)
        partial[c] += partial[c + stride];
    z[r] = partial[0];
  }
}

// Ways the model can be made to misbehave (affine_model_set_fault).
enum Fault : int {
  kNoFault = 0,
  kBadLaunch = 1,   // enqueue launches a 2048-thread block: the launch fails
  kAbiVersion = 2,  // stitch_generated_model reports ABI version 99
  kWrongTarget = 3, // ... the other target
  kBadTable = 4,    // ... an input of rank 9
  kNullModel = 5,   // ... returns null
  // The model with a symbolic dim "rows" (1..kRows) as x's dim 0: y is [rows,8], z [rows].
  // Set before stitch_model_create.
  kSymbolicRows = 6,
};

} // namespace affine

// Exported by the model library for the tests; affects every later call.
extern "C" void affine_model_set_fault(int fault);
