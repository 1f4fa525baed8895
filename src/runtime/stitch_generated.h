// stitch_generated.h: the one header every source stitchc generates includes. It brings the
// portability layer, the model ABI, the device helpers and the library calls, and the small
// functions generated code uses to report a failed launch or copy as a status and message.
#pragma once

#include "stitch_cuda.h"

#include <stdint.h>
#include <stdio.h>

#include "device/stitch_attention.cuh"
#include "device/stitch_gemm_chain.cuh"
#include "device/stitch_half.cuh"
#include "device/stitch_movement.cuh"
#include "device/stitch_ops.cuh"
#include "device/stitch_reduce.cuh"
#include "device/stitch_rows.cuh"
#include "device/stitch_sort.cuh"
#include "device/stitch_vector.cuh"
#include "device/stitch_window.cuh"
#include "stitch_model_abi.h"

// The arithmetic of symbolic dims (`stitchc --dim`) as generated code writes it: every extent
// that depends on the symbols is an int64_t expression of their values (DimExpr::to_code).
namespace stitch::dims {
__host__ __device__ __forceinline__ int64_t floor_div(int64_t a, int64_t d) {
  const int64_t q = a / d;
  return (a % d != 0 && a < 0) ? q - 1 : q; // d > 0
}
// a / d and a % d of indices known below 2^31 (LaunchConfig::index32), in 32 bits: a 64-bit
// division is several times dearer on a GPU.
__host__ __device__ __forceinline__ int64_t div32(int64_t a, int64_t d) {
  return static_cast<int64_t>(static_cast<uint32_t>(a) / static_cast<uint32_t>(d));
}
__host__ __device__ __forceinline__ int64_t mod32(int64_t a, int64_t d) {
  return static_cast<int64_t>(static_cast<uint32_t>(a) % static_cast<uint32_t>(d));
}
__host__ __device__ __forceinline__ int64_t min(int64_t a, int64_t b) { return a < b ? a : b; }
__host__ __device__ __forceinline__ int64_t max(int64_t a, int64_t b) { return a > b ? a : b; }
// The blocks of a grid-stride launch over `work` items, `per_block` per block: enough to cover
// the work once, at most `cap` (the planned grid at the symbols' maxima), at least 1.
inline unsigned grid_for(int64_t work, int64_t per_block, int64_t cap) {
  const int64_t blocks = (work + per_block - 1) / per_block;
  return static_cast<unsigned>(blocks < 1 ? 1 : (blocks > cap ? cap : blocks));
}
} // namespace stitch::dims

// STITCH_OK, or STITCH_ERROR_CUDA (3) with "group N: launch of KERNEL failed: ..." written.
inline int32_t stitch_launch_result(cudaError_t status, const char* kernel, int group, char* error,
                                    size_t error_size) {
  if (status == cudaSuccess) return 0;
  snprintf(error, error_size, "group %d: launch of %s failed: %s (%s)", group, kernel,
           cudaGetErrorName(status), cudaGetErrorString(status));
  return 3;
}

inline int32_t stitch_call_result(cudaError_t status, const char* call, char* error,
                                  size_t error_size) {
  if (status == cudaSuccess) return 0;
  snprintf(error, error_size, "%s failed: %s (%s)", call, cudaGetErrorName(status),
           cudaGetErrorString(status));
  return 3;
}

// What a model asks the device once, when it is created (the ABI's prepare), for one kernel of
// group `group` named `name`: STITCH_OK, or STITCH_ERROR_CUDA (3) with a message naming both.

// That the device grants the kernel `bytes` of dynamic shared memory (it opts in past 48 KiB);
// where it does not, the bytes and the device's limit (a library built for a newer GPU).
template <typename... Params>
inline int32_t stitch_check_shared_memory(void (*kernel)(Params...), const char* name, int group,
                                          int bytes, char* error, size_t error_size) {
  const cudaError_t status =
      cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes);
  if (status == cudaSuccess) return 0;
  int device = 0, limit = 0;
  (void)cudaGetDevice(&device);
  (void)cudaDeviceGetAttribute(&limit, cudaDevAttrMaxSharedMemoryPerBlockOptin, device);
  (void)cudaGetLastError(); // reported here, not left for the next call
  if (limit >= bytes) {
    char call[160];
    snprintf(call, sizeof(call), "the shared-memory opt-in of %s (group %d)", name, group);
    return stitch_call_result(status, call, error, error_size);
  }
  snprintf(error, error_size,
           "group %d: %s needs %d bytes of dynamic shared memory; this device grants a block at "
           "most %d",
           group, name, bytes, limit);
  return 3;
}

// A cooperative (grid-barrier) launch's grid on this device: the blocks it keeps resident
// (stitch::resident_blocks), at most `planned`, whose scratch the arena holds.
template <typename... Params>
inline int32_t stitch_cooperative_grid(int32_t* grid, void (*kernel)(Params...), const char* name,
                                       int group, dim3 block, size_t shared_bytes, int planned,
                                       char* error, size_t error_size) {
  int blocks = 0;
  const cudaError_t status = stitch::resident_blocks(&blocks, kernel, block, shared_bytes);
  if (status != cudaSuccess) {
    (void)cudaGetLastError(); // reported here, not left for the next call
    char call[160];
    snprintf(call, sizeof(call), "sizing the grid of %s (group %d)", name, group);
    return stitch_call_result(status, call, error, error_size);
  }
  if (blocks < 1) {
    snprintf(error, error_size,
             "group %d: the device keeps no block of %s resident (%u threads, %zu bytes of "
             "dynamic shared memory), and its grid-wide barrier needs every block resident",
             group, name, block.x * block.y * block.z, shared_bytes);
    return 3;
  }
  *grid = blocks < planned ? blocks : planned;
  return 0;
}
