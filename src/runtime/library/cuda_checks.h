// cuda_checks.h: how the CUDA implementation (gemm_cuda.cpp, conv_cuda.cpp,
// libraries_cuda.cpp) reports a failing cuBLASLt or cuDNN call: STITCH_ERROR_CUBLAS or
// STITCH_ERROR_CUDNN with "<call> failed: <status name> (<status text>)". Also the plan caches
// that a context's destruction frees. Compiled by the host compiler against the CUDA headers.
#pragma once

#include "descriptor_checks.h"

#include <cublasLt.h>
#include <cudnn.h>

#include <string>

namespace stitch::library::cuda {

inline std::string cublaslt_failure(const char* call, cublasStatus_t status) {
  return std::string(call) + " failed: " + cublasLtGetStatusName(status) + " (" +
         cublasLtGetStatusString(status) + ")";
}

// cuDNN 9 also keeps a detailed message of the thread's last failure; it is added when there.
inline std::string cudnn_failure(const char* call, cudnnStatus_t status) {
  std::string message = std::string(call) + " failed: " + cudnnGetErrorString(status);
  char detail[512] = {};
  cudnnGetLastErrorString(detail, sizeof(detail));
  if (detail[0] != '\0') message += std::string(" (") + detail + ")";
  return message;
}

// Defined next to the plans they free (gemm_cuda.cpp, conv_cuda.cpp); null is accepted.
void destroy_gemm_plans(stitch_library_gemm_plans* plans);
void destroy_conv_plans(stitch_library_conv_plans* plans);

} // namespace stitch::library::cuda

// Calls `function(args...)`; on failure returns from the enclosing function (which returns a
// status) with the failure written through `sink`.
#define STITCH_CHECK_CUBLASLT(sink, function, ...)                                                 \
  do {                                                                                             \
    const cublasStatus_t stitch_status_ = function(__VA_ARGS__);                                   \
    if (stitch_status_ != CUBLAS_STATUS_SUCCESS)                                                   \
      return (sink).fail(STITCH_ERROR_CUBLAS,                                                      \
                         ::stitch::library::cuda::cublaslt_failure(#function, stitch_status_));    \
  } while (0)

#define STITCH_CHECK_CUDNN(sink, function, ...)                                                    \
  do {                                                                                             \
    const cudnnStatus_t stitch_status_ = function(__VA_ARGS__);                                    \
    if (stitch_status_ != CUDNN_STATUS_SUCCESS)                                                    \
      return (sink).fail(STITCH_ERROR_CUDNN,                                                       \
                         ::stitch::library::cuda::cudnn_failure(#function, stitch_status_));       \
  } while (0)
