// Warp-level matrix products on tensor cores for generated kernels: a warp multiplies 16 x 16
// tiles of float16 or bfloat16 into float32 accumulators (fp32 accumulation, as cuBLASLt's
// CUBLAS_COMPUTE_32F).
//
//   stitch::mma::A<T>               a 16 x 16 tile of T (float16 or bfloat16), row-major source
//   stitch::mma::B<T, Layout>       a 16 x 16 tile of T, row-major (RowMajor: element (k, n) at
//                                   p[k * ldm + n]) or column-major (ColMajor: at p[n * ldm + k])
//   stitch::mma::Accumulator        a 16 x 16 tile of float
//   load(tile, p, ldm)              every lane of the warp calls with the same p and ldm (in
//                                   elements; a multiple of 8 for T, of 4 for float); p 32-byte
//                                   aligned. An Accumulator loads and stores row-major.
//   zero(acc)                       every element 0
//   multiply_add(acc, a, b)         acc += a · b (the k = 0..15 products summed into each element)
//   store(p, acc, ldm)              writes the tile row-major; the warp's lanes together write
//                                   every element: __syncwarp before other lanes read them
//
// On the CUDA target these are nvcuda::wmma's m16n16k16 fragments (sm_80 and later: bfloat16
// needs sm_80; the planner only plans them for such architectures). On the host target a lane's
// A and B hold the whole tile (loaded from the shared memory every lane can read) and an
// Accumulator holds elements 8 * lane .. 8 * lane + 7 of the row-major tile, so each element is
// computed once, by one lane, as c + Σ_k a[i][k] · b[k][j] in float with k ascending. Products of
// 16-bit values are exact in float, so the host and the GPU differ only by the order in which
// the tensor core adds them.
#pragma once

#include "stitch_cuda.h"
#include "stitch_half.cuh"

#if defined(__CUDACC__)
#include <mma.h>
#else
#include <math.h>
#endif

namespace stitch {
namespace mma {

struct RowMajor {};
struct ColMajor {};

inline constexpr int kTile = 16;

#if defined(__CUDACC__)

namespace detail {
template <class T> struct Native;
template <> struct Native<float16> { using type = __half; };
template <> struct Native<bfloat16> { using type = __nv_bfloat16; };
template <class L> struct WmmaLayout;
template <> struct WmmaLayout<RowMajor> { using type = nvcuda::wmma::row_major; };
template <> struct WmmaLayout<ColMajor> { using type = nvcuda::wmma::col_major; };
} // namespace detail

template <class T> struct A {
  nvcuda::wmma::fragment<nvcuda::wmma::matrix_a, 16, 16, 16, typename detail::Native<T>::type,
                         nvcuda::wmma::row_major>
      f;
};
template <class T, class Layout> struct B {
  nvcuda::wmma::fragment<nvcuda::wmma::matrix_b, 16, 16, 16, typename detail::Native<T>::type,
                         typename detail::WmmaLayout<Layout>::type>
      f;
};
struct Accumulator {
  nvcuda::wmma::fragment<nvcuda::wmma::accumulator, 16, 16, 16, float> f;
};

template <class T> __device__ __forceinline__ void load(A<T>& a, const T* p, unsigned ldm) {
  nvcuda::wmma::load_matrix_sync(a.f, reinterpret_cast<const typename detail::Native<T>::type*>(p),
                                 ldm);
}
template <class T, class L>
__device__ __forceinline__ void load(B<T, L>& b, const T* p, unsigned ldm) {
  nvcuda::wmma::load_matrix_sync(b.f, reinterpret_cast<const typename detail::Native<T>::type*>(p),
                                 ldm);
}
__device__ __forceinline__ void load(Accumulator& c, const float* p, unsigned ldm) {
  nvcuda::wmma::load_matrix_sync(c.f, p, ldm, nvcuda::wmma::mem_row_major);
}
__device__ __forceinline__ void zero(Accumulator& c) { nvcuda::wmma::fill_fragment(c.f, 0.0f); }
template <class T, class L>
__device__ __forceinline__ void multiply_add(Accumulator& c, const A<T>& a, const B<T, L>& b) {
  nvcuda::wmma::mma_sync(c.f, a.f, b.f, c.f);
}
__device__ __forceinline__ void store(float* p, const Accumulator& c, unsigned ldm) {
  nvcuda::wmma::store_matrix_sync(p, c.f, ldm, nvcuda::wmma::mem_row_major);
}

#else // the host target

namespace detail {
inline constexpr int kPerLane = kTile * kTile / 32;
inline int lane() { return static_cast<int>(threadIdx.x) & 31; }
} // namespace detail

template <class T> struct A {
  float x[kTile][kTile]; // [row][k]
};
template <class T, class Layout> struct B {
  float x[kTile][kTile]; // [k][column]
};
struct Accumulator {
  float x[detail::kPerLane]; // row-major elements 8 * lane ...
};

template <class T> inline void load(A<T>& a, const T* p, unsigned ldm) {
  for (int i = 0; i < kTile; ++i)
    for (int k = 0; k < kTile; ++k)
      a.x[i][k] = static_cast<float>(p[i * ldm + k]);
}
template <class T> inline void load(B<T, RowMajor>& b, const T* p, unsigned ldm) {
  for (int k = 0; k < kTile; ++k)
    for (int n = 0; n < kTile; ++n)
      b.x[k][n] = static_cast<float>(p[k * ldm + n]);
}
template <class T> inline void load(B<T, ColMajor>& b, const T* p, unsigned ldm) {
  for (int n = 0; n < kTile; ++n)
    for (int k = 0; k < kTile; ++k)
      b.x[k][n] = static_cast<float>(p[n * ldm + k]);
}
inline void load(Accumulator& c, const float* p, unsigned ldm) {
  for (int e = 0; e < detail::kPerLane; ++e) {
    const int at = detail::lane() * detail::kPerLane + e;
    c.x[e] = p[(at / kTile) * ldm + at % kTile];
  }
}
inline void zero(Accumulator& c) {
  for (float& v : c.x)
    v = 0.0f;
}
template <class T, class L>
inline void multiply_add(Accumulator& c, const A<T>& a, const B<T, L>& b) {
  for (int e = 0; e < detail::kPerLane; ++e) {
    const int at = detail::lane() * detail::kPerLane + e;
    const int i = at / kTile, j = at % kTile;
    float sum = c.x[e];
    for (int k = 0; k < kTile; ++k)
      sum = fmaf(a.x[i][k], b.x[k][j], sum);
    c.x[e] = sum;
  }
}
inline void store(float* p, const Accumulator& c, unsigned ldm) {
  for (int e = 0; e < detail::kPerLane; ++e) {
    const int at = detail::lane() * detail::kPerLane + e;
    p[(at / kTile) * ldm + at % kTile] = c.x[e];
  }
}

#endif

} // namespace mma
} // namespace stitch
