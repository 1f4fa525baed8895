// CUDA's own float16 and bfloat16 conversions (cuda_fp16.h, cuda_bf16.h compiled for the host),
// the reference that the host target's software conversions (device/stitch_half.cuh) are tested
// against. Plain functions on raw bits, so that the test including them never sees CUDA's types.
#pragma once

#include <cstdint>

namespace stitch::test {

uint16_t cuda_float_to_float16(float f);
float cuda_float16_to_float(uint16_t bits);
uint16_t cuda_float_to_bfloat16(float f);
float cuda_bfloat16_to_float(uint16_t bits);
uint16_t cuda_double_to_float16(double d);
uint16_t cuda_double_to_bfloat16(double d);

} // namespace stitch::test
