// The host target's float16 and bfloat16 conversions (device/stitch_half.cuh) are bit for bit
// CUDA's: every one of the 65,536 patterns of each type converts to the float CUDA gives, and
// float to half gives CUDA's bits on every float that decides a rounding (each representable
// value, its float neighbours, each midpoint between neighbouring values and its neighbours,
// the overflow and underflow thresholds) and on 2^24 floats spread over all 2^32 patterns.
#include "stitch_cuda.h"

#include "device/stitch_half.cuh"

#include "cuda_half_reference.h"

#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

namespace {

uint32_t bits_of(float f) {
  uint32_t b;
  std::memcpy(&b, &f, sizeof b);
  return b;
}

float float_of(uint32_t b) {
  float f;
  std::memcpy(&f, &b, sizeof f);
  return f;
}

// The floats at which float -> 16-bit rounding can change: for each 16-bit pattern's value v
// (finite), v itself, the midpoint to the next value of the type, and the float neighbours of
// both. `widen` is the type's exact conversion to float.
template <typename Widen> std::vector<float> deciding_floats(Widen widen) {
  std::vector<float> out;
  for (uint32_t h = 0; h < 0x10000u; ++h) {
    const float v = widen(static_cast<uint16_t>(h));
    if (!std::isfinite(v)) continue;
    const float next = widen(static_cast<uint16_t>(h + 1));
    std::vector<float> centres{v};
    if (std::isfinite(next) && (h & 0x7fffu) != 0x7fffu) centres.push_back(v + (next - v) / 2);
    // Past the largest finite value: the overflow threshold is half an ulp above it.
    if (std::isinf(next)) centres.push_back(v + (v - widen(static_cast<uint16_t>(h - 1))) / 2);
    for (float c : centres) {
      out.push_back(c);
      out.push_back(std::nextafter(c, std::numeric_limits<float>::infinity()));
      out.push_back(std::nextafter(c, -std::numeric_limits<float>::infinity()));
    }
  }
  return out;
}

template <typename Convert, typename Reference>
void require_same_bits(const std::vector<float>& inputs, Convert convert, Reference reference,
                       const char* what) {
  size_t mismatches = 0;
  for (float f : inputs) {
    const uint16_t got = convert(f), want = reference(f);
    if (got != want && mismatches++ < 10)
      UNSCOPED_INFO(what << ": float bits 0x" << std::hex << bits_of(f) << " gives 0x" << got
                         << ", CUDA gives 0x" << want);
  }
  CHECK(mismatches == 0);
}

std::vector<float> spread_floats() {
  std::vector<float> out;
  for (uint64_t b = 0; b < (1ull << 32); b += 251) // 251 is prime: every low-bit pattern occurs
    out.push_back(float_of(static_cast<uint32_t>(b)));
  for (uint32_t special : {0x7f800000u, 0xff800000u, 0x7fc00000u, 0xffc00000u, 0x7f800001u,
                           0x7fffffffu, 0x00000001u, 0x80000001u, 0x00000000u, 0x80000000u})
    out.push_back(float_of(special));
  return out;
}

} // namespace

TEST_CASE("float16 to float: all 65,536 patterns give CUDA's float bits", "[half]") {
  size_t mismatches = 0;
  for (uint32_t h = 0; h < 0x10000u; ++h) {
    const uint32_t got = bits_of(stitch::float16_bits_to_float(static_cast<uint16_t>(h)));
    const uint32_t want = bits_of(stitch::test::cuda_float16_to_float(static_cast<uint16_t>(h)));
    if (got != want && mismatches++ < 10)
      UNSCOPED_INFO("float16 0x" << std::hex << h << " gives 0x" << got << ", CUDA 0x" << want);
  }
  CHECK(mismatches == 0);
  // Spot values from the IEEE format, independent of CUDA.
  CHECK(stitch::float16_bits_to_float(0x3c00) == 1.0f);
  CHECK(stitch::float16_bits_to_float(0x7bff) == 65504.0f);
  CHECK(stitch::float16_bits_to_float(0x0001) == std::ldexp(1.0f, -24));
  CHECK(stitch::float16_bits_to_float(0xc000) == -2.0f);
  CHECK(std::isinf(stitch::float16_bits_to_float(0xfc00)));
}

TEST_CASE("bfloat16 to float: all 65,536 patterns give CUDA's float bits", "[half]") {
  size_t mismatches = 0;
  for (uint32_t h = 0; h < 0x10000u; ++h) {
    const uint32_t got = bits_of(stitch::bfloat16_bits_to_float(static_cast<uint16_t>(h)));
    const uint32_t want = bits_of(stitch::test::cuda_bfloat16_to_float(static_cast<uint16_t>(h)));
    if (got != want && mismatches++ < 10)
      UNSCOPED_INFO("bfloat16 0x" << std::hex << h << " gives 0x" << got << ", CUDA 0x" << want);
  }
  CHECK(mismatches == 0);
  CHECK(stitch::bfloat16_bits_to_float(0x3f80) == 1.0f);
  CHECK(stitch::bfloat16_bits_to_float(0xc040) == -3.0f);
}

TEST_CASE("float to float16 rounds to nearest even exactly as CUDA does", "[half]") {
  const auto convert = [](float f) { return stitch::float_to_float16_bits(f); };
  const auto reference = [](float f) { return stitch::test::cuda_float_to_float16(f); };
  require_same_bits(deciding_floats(stitch::test::cuda_float16_to_float), convert, reference,
                    "float16 rounding boundary");
  require_same_bits(spread_floats(), convert, reference, "float16 spread");
  // Independent of CUDA: ties go to the even neighbour, 65520 overflows, 2^-25 underflows.
  CHECK(stitch::float_to_float16_bits(1.0f + std::ldexp(1.0f, -11)) == 0x3c00);
  CHECK(stitch::float_to_float16_bits(1.0f + 3 * std::ldexp(1.0f, -11)) == 0x3c02);
  CHECK(stitch::float_to_float16_bits(65519.0f) == 0x7bff);
  CHECK(stitch::float_to_float16_bits(65520.0f) == 0x7c00);
  CHECK(stitch::float_to_float16_bits(std::ldexp(1.0f, -25)) == 0x0000);
  CHECK(stitch::float_to_float16_bits(std::nextafter(std::ldexp(1.0f, -25), 1.0f)) == 0x0001);
  CHECK(stitch::float_to_float16_bits(-0.0f) == 0x8000);
}

TEST_CASE("float to bfloat16 rounds to nearest even exactly as CUDA does", "[half]") {
  const auto convert = [](float f) { return stitch::float_to_bfloat16_bits(f); };
  const auto reference = [](float f) { return stitch::test::cuda_float_to_bfloat16(f); };
  require_same_bits(deciding_floats(stitch::test::cuda_bfloat16_to_float), convert, reference,
                    "bfloat16 rounding boundary");
  require_same_bits(spread_floats(), convert, reference, "bfloat16 spread");
  CHECK(stitch::float_to_bfloat16_bits(1.0f + std::ldexp(1.0f, -8)) == 0x3f80);
  CHECK(stitch::float_to_bfloat16_bits(1.0f + 3 * std::ldexp(1.0f, -8)) == 0x3f82);
  CHECK(stitch::float_to_bfloat16_bits(std::numeric_limits<float>::max()) == 0x7f80);
}

TEST_CASE("the storage types convert implicitly and round once", "[half]") {
  const stitch::float16 h = 0.1f;
  const float back = h;
  CHECK(h.bits == 0x2e66);
  CHECK(back == stitch::round_to_float16(0.1f));
  const stitch::bfloat16 b = 0.1f;
  CHECK(b.bits == 0x3dcd);
  CHECK(static_cast<float>(b) == stitch::round_to_bfloat16(0.1f));
  CHECK(stitch::round_to_float16(stitch::round_to_float16(0.3f)) == stitch::round_to_float16(0.3f));
}

TEST_CASE("a float64 value rounds to float16 and bfloat16 once, through float rounded to odd",
          "[half]") {
  // Doubles just off each midpoint between neighbouring 2-byte values, where rounding to float
  // to nearest even first would land on the midpoint, and random doubles of every magnitude.
  std::vector<double> inputs;
  for (uint32_t h = 0; h < 0x7c00u; ++h) {
    for (auto widen : {stitch::test::cuda_float16_to_float, stitch::test::cuda_bfloat16_to_float}) {
      const double v = widen(static_cast<uint16_t>(h)), next = widen(static_cast<uint16_t>(h + 1));
      if (!std::isfinite(next)) continue;
      const double mid = v + (next - v) / 2;
      for (double offset : {-1e-12, -1e-30, 1e-30, 1e-12})
        for (double sign : {1.0, -1.0})
          inputs.push_back(sign * (mid + offset * mid));
    }
  }
  uint64_t state = 12345;
  for (int i = 0; i < 1 << 20; ++i) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    double d;
    std::memcpy(&d, &state, sizeof d);
    if (std::isfinite(d)) inputs.push_back(d);
  }
  size_t half_mismatches = 0, bfloat_mismatches = 0;
  for (double d : inputs) {
    const float odd = stitch::float_round_to_odd(d);
    half_mismatches +=
        stitch::float_to_float16_bits(odd) != stitch::test::cuda_double_to_float16(d);
    bfloat_mismatches +=
        stitch::float_to_bfloat16_bits(odd) != stitch::test::cuda_double_to_bfloat16(d);
  }
  CHECK(half_mismatches == 0);
  CHECK(bfloat_mismatches == 0);
  // Independent of CUDA: 1 + 2^-11 + 2^-40 is just above float16's midpoint after 1, and rounds
  // up; through float to nearest even it would be the midpoint, rounded down to even.
  const double above = 1.0 + std::ldexp(1.0, -11) + std::ldexp(1.0, -40);
  CHECK(stitch::float_to_float16_bits(static_cast<float>(above)) == 0x3c00);
  CHECK(stitch::float_to_float16_bits(stitch::float_round_to_odd(above)) == 0x3c01);
}
