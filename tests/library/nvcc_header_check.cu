// nvcc_header_check.cu: stitch_library.h under nvcc, as generated code includes it: the
// stitch_abi_buffers entry points compile and have the signatures generated code calls.
#include "library/stitch_library.h"

int32_t stitch_library_nvcc_check(const stitch_abi_buffers* buffers, float* y) {
  char error[128];
  const stitch_gemm_desc gemm = stitch_gemm_desc_packed(1, 1, 1);
  stitch_conv_desc conv = {};
  int32_t (*gemm_entry)(const stitch_abi_buffers*, const stitch_gemm_desc*, const float*,
                        const float*, const float*, const float*, float*, char*, size_t) =
      stitch_library_gemm;
  if (int32_t status = gemm_entry(buffers, &gemm, y, y, nullptr, nullptr, y, error, sizeof(error)))
    return status;
  if (int32_t status = stitch_library_conv(buffers, &conv, y, y, nullptr, y, error, sizeof(error)))
    return status;
  if (int32_t status = stitch_library_conv_epilogue(buffers, &conv, y, y, y, nullptr, 1, y, error,
                                                    sizeof(error)))
    return status;
  return stitch_library_conv_transpose(buffers, &conv, y, y, nullptr, y, error, sizeof(error));
}
