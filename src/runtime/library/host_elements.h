// host_elements.h: how the host target's library routines read and write the elements of
// stitch_library.h's dtypes. Every element becomes an fp32 value when it is read (float16 and
// bfloat16 exactly, through device/stitch_half.cuh's conversions, bit for bit CUDA's) and every
// fp32 result is rounded once to the storage type when it is written (round to nearest even).
//
// TF32 (allow_tf32 on float32): the multiply's operands are rounded to TF32 as they are read,
// 10 mantissa bits kept, rounded to nearest even (CUTLASS's float-to-tfloat32 conversion; the
// tensor core itself reads only those bits), so the host's products carry TF32's error while
// its sums stay fp32, as on the tensor cores. Internal to src/runtime/library (host target).
#pragma once

#include "descriptor_checks.h"
#include "device/stitch_half.cuh"

#include <cstdint>

namespace stitch::library::host {

// f with its mantissa rounded to 10 bits, to nearest even; infinities and NaN unchanged.
inline float round_to_tf32(float f) {
  uint32_t bits = float_bits(f);
  if ((bits & 0x7f800000u) == 0x7f800000u) return f;
  bits += 0xfffu + ((bits >> 13) & 1u);
  return bits_to_float(bits & ~0x1fffu);
}

// How one operand's elements become fp32 values.
enum class ElementLoad { Float32, Float32AsTf32, Float16, BFloat16 };

// A multiply operand's load: its dtype's, or TF32 for a float32 operand with allow_tf32.
inline ElementLoad operand_load(int32_t dtype, int32_t allow_tf32) {
  switch (dtype) {
  case STITCH_LIBRARY_FLOAT16:
    return ElementLoad::Float16;
  case STITCH_LIBRARY_BFLOAT16:
    return ElementLoad::BFloat16;
  default:
    return allow_tf32 ? ElementLoad::Float32AsTf32 : ElementLoad::Float32;
  }
}

// An epilogue operand's (C, bias, Z) load: its dtype's, never TF32.
inline ElementLoad value_load(int32_t dtype) { return operand_load(dtype, 0); }

// Readers, one per load: `read(data, i)` is element i as fp32. Loops that read many elements
// pick a reader once (with_reader) rather than switch per element.
struct ReadFloat32 {
  static float read(const void* data, int64_t i) { return static_cast<const float*>(data)[i]; }
};
struct ReadTf32 {
  static float read(const void* data, int64_t i) {
    return round_to_tf32(static_cast<const float*>(data)[i]);
  }
};
struct ReadFloat16 {
  static float read(const void* data, int64_t i) {
    return float16_bits_to_float(static_cast<const uint16_t*>(data)[i]);
  }
};
struct ReadBFloat16 {
  static float read(const void* data, int64_t i) {
    return bfloat16_bits_to_float(static_cast<const uint16_t*>(data)[i]);
  }
};

// body(Reader{}) with the reader of `load`.
template <typename Body> decltype(auto) with_reader(ElementLoad load, Body&& body) {
  switch (load) {
  case ElementLoad::Float32AsTf32:
    return body(ReadTf32{});
  case ElementLoad::Float16:
    return body(ReadFloat16{});
  case ElementLoad::BFloat16:
    return body(ReadBFloat16{});
  default:
    return body(ReadFloat32{});
  }
}

// One element, for the few reads outside the multiply's loops.
inline float read_element(ElementLoad load, const void* data, int64_t i) {
  return with_reader(load, [&](auto reader) { return reader.read(data, i); });
}

// The address of element `index` of an array of `dtype` at `base`.
inline const void* element_at(const void* base, int64_t index, int32_t dtype) {
  return static_cast<const char*>(base) + index * static_cast<int64_t>(dtype_bytes(dtype));
}
inline void* element_at(void* base, int64_t index, int32_t dtype) {
  return static_cast<char*>(base) + index * static_cast<int64_t>(dtype_bytes(dtype));
}

// `values[0, count)` rounded once to `dtype` into elements [at, at + count) of `data`.
inline void write_elements(int32_t dtype, void* data, int64_t at, const float* values,
                           int64_t count) {
  switch (dtype) {
  case STITCH_LIBRARY_FLOAT16: {
    uint16_t* out = static_cast<uint16_t*>(data) + at;
    for (int64_t j = 0; j < count; ++j)
      out[j] = float_to_float16_bits(values[j]);
    return;
  }
  case STITCH_LIBRARY_BFLOAT16: {
    uint16_t* out = static_cast<uint16_t*>(data) + at;
    for (int64_t j = 0; j < count; ++j)
      out[j] = float_to_bfloat16_bits(values[j]);
    return;
  }
  default: {
    float* out = static_cast<float*>(data) + at;
    for (int64_t j = 0; j < count; ++j)
      out[j] = values[j];
    return;
  }
  }
}

} // namespace stitch::library::host
