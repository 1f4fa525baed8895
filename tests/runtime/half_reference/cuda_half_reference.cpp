// Compiled by the host compiler against CUDA's headers, without STITCH_HOST_TARGET: the functions
// of cuda_half_reference.h through __float2half_rn, __half2float, __float2bfloat16_rn and
// __bfloat162float, which cuda_fp16.hpp and cuda_bf16.hpp implement for host code as well.
#include "cuda_half_reference.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstring>

namespace stitch::test {

uint16_t cuda_float_to_float16(float f) {
  const __half h = __float2half_rn(f);
  uint16_t bits;
  std::memcpy(&bits, &h, sizeof bits);
  return bits;
}

float cuda_float16_to_float(uint16_t bits) {
  __half h;
  h = __ushort_as_half(bits);
  return __half2float(h);
}

uint16_t cuda_float_to_bfloat16(float f) {
  const __nv_bfloat16 b = __float2bfloat16_rn(f);
  uint16_t bits;
  std::memcpy(&bits, &b, sizeof bits);
  return bits;
}

float cuda_bfloat16_to_float(uint16_t bits) {
  __nv_bfloat16 b;
  b = __ushort_as_bfloat16(bits);
  return __bfloat162float(b);
}

uint16_t cuda_double_to_float16(double d) {
  const __half h = __double2half(d);
  uint16_t bits;
  std::memcpy(&bits, &h, sizeof bits);
  return bits;
}

uint16_t cuda_double_to_bfloat16(double d) {
  const __nv_bfloat16 b = __double2bfloat16(d);
  uint16_t bits;
  std::memcpy(&bits, &b, sizeof bits);
  return bits;
}

} // namespace stitch::test
