// Warp-level matrix products on tensor cores for generated kernels: a warp multiplies tiles of
// float16 or bfloat16 into float32 accumulators (fp32 accumulation, as cuBLASLt's
// CUBLAS_COMPUTE_32F). Products of 16-bit values are exact in float, so the host target and the
// GPU differ only by the order in which the tensor core adds them.
//
// Register fragments of known layout, for kernels that keep their tiles in registers (PTX
// mma.sync.aligned.m16n8k16.row.col.f32 with float16 or bfloat16 operands, sm_80 and later: the
// planner only plans them for such architectures); lane l of the warp
// has g = l / 4 and t = l % 4, and a register holds two elements, the lower column (or k) in
// its low half:
//   FragmentA      16 x 16 of T (rows x k): x[0] (g, 2t), x[1] (g + 8, 2t), x[2] (g, 2t + 8),
//                  x[3] (g + 8, 2t + 8), each with the next column
//   FragmentB      16 x 8 of T (k x columns): x[0] (k 2t and 2t + 1, column g), x[1] (k 2t + 8
//                  and 2t + 9, column g)
//   FragmentC      16 x 8 of float: x[0], x[1] (g, 2t), (g, 2t + 1); x[2], x[3] (g + 8, 2t),
//                  (g + 8, 2t + 1)
//   pack<T>(lo, hi)         two values of T (given as floats) as one register
//   zero(c)                 every element 0
//   product<T>(c, a, b)     c += a · b; every lane of the warp calls it, with its own fragments
//   load_transposed<T>(lo, hi, row)
//                           two B fragments (columns n0 .. n0 + 7 and n0 + 8 .. n0 + 15) of a
//                           16 x 16 tile of T stored row-major in shared memory (k rows x n
//                           columns, as V is [key][dim]): lane l passes the address of element
//                           (k0 + l % 16, n0 + 8 (l / 16)), 16-byte aligned (ldmatrix .x4
//                           .trans)
// On the host target product and load_transposed hand each lane's registers (or address) to the
// others through its warp's state and wait for them (one __syncwarp a call), then compute the
// lane's own part; a product's four elements are c + Σ_k a · b in float, k ascending.
//
// Block tile products from shared memory (row-major T tiles, rows 16-byte aligned; a row
// stride of 8 elements past a multiple of 16 keeps ldmatrix off repeated banks):
//   a_fragment<T>(tile, stride, row0, k0)   the A fragment of rows row0 .. row0 + 15 and k
//                                           k0 .. k0 + 15 of an [m][k] tile
//   multiply_b<T>(acc, a, tile, stride, k0, column0)
//                                           acc[f] += a · B, B the 16 x 8 block of a [k][n] tile
//                                           at rows k0 .., columns column0 + 8f ..; Fragments
//                                           (acc's length) even: load_transposed reads two
//                                           fragments at a time
//
// Asynchronous copies to shared memory (cp.async, sm_80 and later; a plain copy on the host
// target, where the waits have nothing to wait for):
//   copy_async_16(shared_dst, global_src)   16 bytes, both 16-byte aligned
//   copy_async_commit()                     closes the group of copies issued since the last
//   copy_async_wait<N>()                    waits until at most N groups are still in flight
//                                           (then __syncthreads makes them visible to the block)
#pragma once

#include "stitch_cuda.h"
#include "stitch_half.cuh"

#include <type_traits>

#if !defined(__CUDACC__)
#include <math.h>
#include <string.h>
#endif

namespace stitch {
namespace mma {

inline constexpr int kTile = 16; // a fragment's rows (and A's k)

struct FragmentA {
  uint32_t x[4];
};
struct FragmentB {
  uint32_t x[2];
};
struct FragmentC {
  float x[4];
};

template <class T> __device__ __forceinline__ uint32_t pack(float lo, float hi) {
  return static_cast<uint32_t>(T(lo).bits) | static_cast<uint32_t>(T(hi).bits) << 16;
}

__device__ __forceinline__ void zero(FragmentC& c) { c.x[0] = c.x[1] = c.x[2] = c.x[3] = 0.0f; }

#if defined(__CUDACC__)

template <class T>
__device__ __forceinline__ void product(FragmentC& c, const FragmentA& a, const FragmentB& b) {
  static_assert(std::is_same_v<T, float16> || std::is_same_v<T, bfloat16>,
                "tensor-core products take float16 or bfloat16");
  if constexpr (std::is_same_v<T, float16>)
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, "
                 "{%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
                 : "+f"(c.x[0]), "+f"(c.x[1]), "+f"(c.x[2]), "+f"(c.x[3])
                 : "r"(a.x[0]), "r"(a.x[1]), "r"(a.x[2]), "r"(a.x[3]), "r"(b.x[0]), "r"(b.x[1]));
  else
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, "
                 "{%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
                 : "+f"(c.x[0]), "+f"(c.x[1]), "+f"(c.x[2]), "+f"(c.x[3])
                 : "r"(a.x[0]), "r"(a.x[1]), "r"(a.x[2]), "r"(a.x[3]), "r"(b.x[0]), "r"(b.x[1]));
}

template <class T>
__device__ __forceinline__ void load_transposed(FragmentB& lo, FragmentB& hi, const T* row) {
  const unsigned address = static_cast<unsigned>(__cvta_generic_to_shared(row));
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(lo.x[0]), "=r"(lo.x[1]), "=r"(hi.x[0]), "=r"(hi.x[1])
               : "r"(address));
}

__device__ __forceinline__ void copy_async_16(void* shared_dst, const void* global_src) {
  const unsigned address = static_cast<unsigned>(__cvta_generic_to_shared(shared_dst));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(address), "l"(global_src));
}
__device__ __forceinline__ void copy_async_commit() { asm volatile("cp.async.commit_group;\n"); }
template <int N> __device__ __forceinline__ void copy_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N));
}

#else // the host target

namespace detail {
// The GPU faults on a vector access its size does not align (cudaErrorMisalignedAddress); so
// does the host target, where memcpy would not.
inline void check_aligned_16(const void* p, const char* what) {
  if (reinterpret_cast<uintptr_t>(p) % 16 != 0)
    throw host::KernelFault(cudaErrorMisalignedAddress,
                            std::string(what) + ": an address not 16-byte aligned");
}
} // namespace detail

template <class T> inline void load_transposed(FragmentB& lo, FragmentB& hi, const T* row) {
  detail::check_aligned_16(row, "stitch::mma::load_transposed");
  host::EmulatedThread& thread = host::running_thread("stitch::mma::load_transposed");
  host::WarpState& warp = thread.block->warps[thread.warp()];
  const unsigned lane = thread.lane();
  if (warp.matrix_rows.empty()) warp.matrix_rows.assign(2 * 32, nullptr);
  const void** const round =
      warp.matrix_rows.data() + (warp.matrix_row_loads[lane]++ & 1u) * 32; // as in product
  round[lane] = row;
  __syncwarp();
  // Register m holds matrix m's (rows 2t, 2t + 1; column g); matrix m's rows are lanes 8m ..
  // 8m + 7's addresses.
  const int g = static_cast<int>(lane) >> 2, t = static_cast<int>(lane) & 3;
  uint32_t reg[4];
  for (int m = 0; m < 4; ++m) {
    const T* const upper = static_cast<const T*>(round[8 * m + 2 * t]);
    const T* const lower = static_cast<const T*>(round[8 * m + 2 * t + 1]);
    reg[m] = static_cast<uint32_t>(upper[g].bits) | static_cast<uint32_t>(lower[g].bits) << 16;
  }
  lo.x[0] = reg[0], lo.x[1] = reg[1], hi.x[0] = reg[2], hi.x[1] = reg[3];
}

inline void copy_async_16(void* shared_dst, const void* global_src) {
  detail::check_aligned_16(shared_dst, "stitch::mma::copy_async_16");
  detail::check_aligned_16(global_src, "stitch::mma::copy_async_16");
  memcpy(shared_dst, global_src, 16);
}
inline void copy_async_commit() {}
template <int N> inline void copy_async_wait() {}
namespace detail {
template <class T> inline float half_of(uint32_t reg, int high) {
  return static_cast<float>(T::from_bits(static_cast<uint16_t>(high ? reg >> 16 : reg & 0xffffu)));
}
} // namespace detail

template <class T> inline void product(FragmentC& c, const FragmentA& a, const FragmentB& b) {
  constexpr int kRegisters = 6; // a lane's four A and two B registers
  host::EmulatedThread& thread = host::running_thread("stitch::mma::product");
  host::WarpState& warp = thread.block->warps[thread.warp()];
  const unsigned lane = thread.lane();
  if (warp.matrix_operands.empty()) warp.matrix_operands.assign(2 * 32 * kRegisters, 0u);
  // Two rounds alternate: a lane writes round r + 2 only after every lane has passed round
  // r + 1's __syncwarp, that is, after every lane has read round r.
  uint32_t* const round =
      warp.matrix_operands.data() + (warp.matrix_products[lane]++ & 1u) * 32 * kRegisters;
  for (int r = 0; r < 4; ++r)
    round[lane * kRegisters + r] = a.x[r];
  round[lane * kRegisters + 4] = b.x[0];
  round[lane * kRegisters + 5] = b.x[1];
  __syncwarp();
  const int g = static_cast<int>(lane) >> 2, t = static_cast<int>(lane) & 3;
  for (int e = 0; e < 4; ++e) {
    const int row = g + (e >= 2 ? 8 : 0), column = 2 * t + (e & 1);
    float sum = c.x[e];
    for (int k = 0; k < kTile; ++k) {
      // A (row, k): lane (row % 8) * 4 + (k % 8) / 2, register (row >= 8) + 2 (k >= 8).
      const uint32_t a_reg =
          round[((row & 7) * 4 + (k & 7) / 2) * kRegisters + (row >= 8) + 2 * (k >= 8)];
      // B (k, column): lane column * 4 + (k % 8) / 2, register 4 + (k >= 8).
      const uint32_t b_reg = round[(column * 4 + (k & 7) / 2) * kRegisters + 4 + (k >= 8)];
      sum = fmaf(detail::half_of<T>(a_reg, k & 1), detail::half_of<T>(b_reg, k & 1), sum);
    }
    c.x[e] = sum;
  }
}

#endif

template <class T>
__device__ __forceinline__ FragmentA a_fragment(const T* tile, int stride, int row0, int k0) {
  const int lane = static_cast<int>(threadIdx.x) & 31, g = lane >> 2, t = lane & 3;
  const T* const at = tile + (row0 + g) * stride + k0 + 2 * t;
#if defined(__CUDACC__)
  const auto pair = [](const T* p) { return *reinterpret_cast<const uint32_t*>(p); };
#else
  const auto pair = [](const T* p) { // a 4-byte load: the GPU faults where it is misaligned
    if (reinterpret_cast<uintptr_t>(p) % 4 != 0)
      throw host::KernelFault(cudaErrorMisalignedAddress,
                              "stitch::mma::a_fragment: an address not 4-byte aligned");
    uint32_t bits;
    memcpy(&bits, p, 4);
    return bits;
  };
#endif
  return FragmentA{{pair(at), pair(at + 8 * stride), pair(at + 8), pair(at + 8 * stride + 8)}};
}

template <class T, int Fragments>
__device__ __forceinline__ void multiply_b(FragmentC (&acc)[Fragments], const FragmentA& a,
                                           const T* tile, int stride, int k0, int column0) {
  static_assert(Fragments % 2 == 0, "B fragments load in pairs");
  const int lane = static_cast<int>(threadIdx.x) & 31;
  for (int f = 0; f < Fragments; f += 2) {
    FragmentB lo, hi;
    load_transposed<T>(lo, hi,
                       tile + (k0 + (lane & 15)) * stride + column0 + 8 * f + 8 * (lane >> 4));
    product<T>(acc[f], a, lo);
    product<T>(acc[f + 1], a, hi);
  }
}

} // namespace mma
} // namespace stitch
