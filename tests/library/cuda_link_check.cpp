// cuda_link_check.cpp: a program that calls every entry point of stitch_library_cuda, so that
// building it proves the CUDA implementation links against cuBLASLt, cuDNN and the CUDA
// runtime. It is built, never run (there may be no GPU); tests/library's ctest entry builds it.
#include "library/stitch_library.h"

#include <cstdio>

int main() {
  char error[256] = {};
  stitch_abi_libraries* libraries = nullptr;
  int32_t status = stitch_libraries_create(&libraries, error, sizeof(error));
  stitch_library_call call = {nullptr, nullptr, stitch_library_workspace_bytes(), libraries};

  const stitch_gemm_desc gemm = stitch_gemm_desc_packed(1, 1, 1);
  const float one = 1.0f;
  float out = 0.0f;
  if (status == 0)
    status = stitch_library_gemm_on(&call, &gemm, &one, &one, nullptr, nullptr, &out, error,
                                    sizeof(error));

  stitch_conv_desc conv = {};
  conv.spatial_rank = 1;
  conv.batch = conv.in_channels = conv.out_channels = conv.groups = 1;
  conv.in_spatial[0] = conv.out_spatial[0] = conv.kernel[0] = 1;
  conv.strides[0] = conv.dilations[0] = 1;
  if (status == 0)
    status = stitch_library_conv_on(&call, &conv, &one, &one, nullptr, &out, error, sizeof(error));
  if (status == 0)
    status = stitch_library_conv_transpose_on(&call, &conv, &one, &one, nullptr, &out, error,
                                              sizeof(error));
  const float residual = 1.0f;
  if (status == 0)
    status = stitch_library_conv_epilogue_on(&call, &conv, &one, &one, &one, &residual, 1, &out,
                                             error, sizeof(error));
  stitch_libraries_destroy(libraries);
  if (status != 0) std::fprintf(stderr, "%s\n", error);
  return status;
}
