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
