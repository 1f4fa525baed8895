// nvcc_header_check.cu: stitch_library.h under nvcc, as generated code includes it: the
// stitch_abi_buffers entry points compile and have the signatures generated code calls, and
// take the typed pointers it passes (float, stitch::float16, stitch::bfloat16).
#include "device/stitch_half.cuh"
#include "library/stitch_library.h"

int32_t stitch_library_nvcc_check(const stitch_abi_buffers* buffers, float* y, stitch::float16* h,
                                  const stitch::bfloat16* b) {
  char error[128];
  stitch_gemm_desc gemm = stitch_gemm_desc_packed(1, 1, 1);
  stitch_conv_desc conv = {};
  int32_t (*gemm_entry)(const stitch_abi_buffers*, const stitch_gemm_desc*, const void*,
                        const void*, const void*, const void*, void*, char*, size_t) =
      stitch_library_gemm;
  if (int32_t status = gemm_entry(buffers, &gemm, y, y, nullptr, nullptr, y, error, sizeof(error)))
    return status;
  gemm.dtype = STITCH_LIBRARY_FLOAT16;
  if (int32_t status = stitch_library_gemm(buffers, &gemm, h, h, h, h, h, error, sizeof(error)))
    return status;
  conv.dtype = STITCH_LIBRARY_BFLOAT16;
  if (int32_t status =
          stitch_library_conv(buffers, &conv, b, b, nullptr, reinterpret_cast<stitch::bfloat16*>(h),
                              error, sizeof(error)))
    return status;
  conv.dtype = STITCH_LIBRARY_FLOAT32;
  if (int32_t status = stitch_library_conv_epilogue(buffers, &conv, y, y, y, nullptr, 1, y, error,
                                                    sizeof(error)))
    return status;
  return stitch_library_conv_transpose(buffers, &conv, y, y, nullptr, y, error, sizeof(error));
}
