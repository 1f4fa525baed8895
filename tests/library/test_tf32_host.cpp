// test_tf32_host.cpp: allow_tf32 on the host target. A float32 GEMM or convolution with
// allow_tf32 computes with A and B (X and W) rounded to TF32, which
//   - differs from the strict fp32 result on the same inputs,
//   - stays within TF32's error of the exact result: each product of two operands rounded to
//     10 mantissa bits (relative error u = 2^-11 each) is off by at most (2u + u^2) |a b|,
//   - and is, within fp32 accumulation error, the exact result of the TF32-rounded inputs, so
//     the rounding is TF32's (nearest even; half_reference.h rounds independently of the
//     library), not truncation or fp16.
#include "half_reference.h"

#include <catch2/catch.hpp>

#include <limits>

using namespace stitch::library::testing;

namespace {

constexpr double kTf32ProductError = 2.0 / 2048.0 + 1.0 / (2048.0 * 2048.0);

struct Tf32Results {
  TypedTensor strict, tf32;
  Expected exact, of_rounded_inputs;
  int64_t k = 0;
};

Tf32Results run_gemm(uint32_t seed) {
  stitch_gemm_desc desc = stitch_gemm_desc_packed(9, 23, 57);
  desc.trans_b = 1;
  desc.ldb = desc.k;
  desc.alpha = 0.5f;
  const std::vector<float> a = random_values(desc.m * desc.k, seed);
  const std::vector<float> b = random_values(desc.n * desc.k, seed + 1);
  const std::vector<float> bias = random_values(desc.n, seed + 2);
  Tf32Results results;
  results.k = desc.k;
  results.exact = reference_gemm(desc, a.data(), b.data(), nullptr, bias.data(), desc.m * desc.n);
  const std::vector<float> a_tf32 = tf32_values(a), b_tf32 = tf32_values(b);
  results.of_rounded_inputs =
      reference_gemm(desc, a_tf32.data(), b_tf32.data(), nullptr, bias.data(), desc.m * desc.n);
  stitch_abi_buffers buffers = {};
  char error[512] = {};
  for (int32_t allow_tf32 : {0, 1}) {
    desc.allow_tf32 = allow_tf32;
    TypedTensor& d = allow_tf32 ? results.tf32 : results.strict;
    d = filled_tensor(STITCH_LIBRARY_FLOAT32, desc.m * desc.n,
                      std::numeric_limits<float>::quiet_NaN());
    const int32_t status = stitch_library_gemm(&buffers, &desc, a.data(), b.data(), nullptr,
                                               bias.data(), d.data(), error, sizeof(error));
    INFO(error);
    REQUIRE(status == 0);
  }
  return results;
}

Tf32Results run_conv(uint32_t seed) {
  stitch_conv_desc desc = {};
  desc.spatial_rank = 2;
  desc.batch = 2;
  desc.in_channels = 6;
  desc.out_channels = 4;
  desc.groups = 2;
  const int64_t in[2] = {9, 7}, kernel[2] = {3, 2};
  for (int i = 0; i < 2; ++i) {
    desc.in_spatial[i] = in[i];
    desc.kernel[i] = kernel[i];
    desc.strides[i] = 1;
    desc.dilations[i] = 1;
    desc.pads_begin[i] = desc.pads_end[i] = 1;
    desc.out_spatial[i] = in[i] + 2 - kernel[i] + 1;
  }
  const int64_t y_size = 2 * 4 * desc.out_spatial[0] * desc.out_spatial[1];
  const std::vector<float> x = random_values(2 * 6 * 9 * 7, seed);
  const std::vector<float> w = random_values(4 * 3 * 3 * 2, seed + 1);
  const std::vector<float> bias = random_values(4, seed + 2);
  Tf32Results results;
  results.k = 3 * 3 * 2;
  results.exact = reference_conv(desc, x.data(), w.data(), bias.data());
  const std::vector<float> x_tf32 = tf32_values(x), w_tf32 = tf32_values(w);
  results.of_rounded_inputs = reference_conv(desc, x_tf32.data(), w_tf32.data(), bias.data());
  stitch_abi_buffers buffers = {};
  char error[512] = {};
  for (int32_t allow_tf32 : {0, 1}) {
    desc.allow_tf32 = allow_tf32;
    TypedTensor& y = allow_tf32 ? results.tf32 : results.strict;
    y = filled_tensor(STITCH_LIBRARY_FLOAT32, y_size, std::numeric_limits<float>::quiet_NaN());
    const int32_t status = stitch_library_conv(&buffers, &desc, x.data(), w.data(), bias.data(),
                                               y.data(), error, sizeof(error));
    INFO(error);
    REQUIRE(status == 0);
  }
  return results;
}

void check_tf32(const Tf32Results& results) {
  // Strict fp32 meets the fp32 tolerance; TF32 differs from it somewhere.
  CHECK(compare_typed(results.strict, results.exact, results.k).mismatch == "");
  CHECK(results.strict.bytes != results.tf32.bytes);
  // TF32 meets TF32's tolerance of the exact result, and fp32's of the rounded inputs' result.
  CHECK(compare_typed(results.tf32, results.exact, results.k, kTf32ProductError).mismatch == "");
  CHECK(compare_typed(results.tf32, results.of_rounded_inputs, results.k).mismatch == "");
  // ... and not fp32's of the exact result everywhere: the error is TF32's, visibly.
  CHECK(compare_typed(results.tf32, results.exact, results.k).mismatch != "");
}

} // namespace

TEST_CASE("TF32 GEMM: differs from strict fp32, within TF32 error", "[library][tf32]") {
  check_tf32(run_gemm(1));
}

TEST_CASE("TF32 conv: differs from strict fp32, within TF32 error", "[library][tf32]") {
  check_tf32(run_conv(11));
}

TEST_CASE("TF32 rounding is to nearest even on the 13 dropped bits", "[library][tf32]") {
  // Exactly between two TF32 values: to the even one. Above or below the tie: to the nearest.
  const auto bits = [](uint32_t b) { return stitch::bits_to_float(b); };
  TypedTensor a = typed_tensor(STITCH_LIBRARY_FLOAT32, {bits(0x3f801000u), bits(0x3f803000u),
                                                        bits(0x3f801001u), bits(0x3f800fffu)});
  TypedTensor one = typed_tensor(STITCH_LIBRARY_FLOAT32, {1.0f});
  TypedTensor d = filled_tensor(STITCH_LIBRARY_FLOAT32, 4, 0.0f);
  stitch_gemm_desc desc = stitch_gemm_desc_packed(4, 1, 1); // D = A @ [1]
  desc.allow_tf32 = 1;
  stitch_abi_buffers buffers = {};
  REQUIRE(stitch_library_gemm(&buffers, &desc, a.data(), one.data(), nullptr, nullptr, d.data(),
                              nullptr, 0) == 0);
  CHECK(stitch::float_bits(d.at(0)) == 0x3f800000u); // tie, down to even
  CHECK(stitch::float_bits(d.at(1)) == 0x3f804000u); // tie, up to even
  CHECK(stitch::float_bits(d.at(2)) == 0x3f802000u); // above the tie
  CHECK(stitch::float_bits(d.at(3)) == 0x3f800000u); // below the tie
  for (std::size_t i = 0; i < 4; ++i)
    CHECK(d.at(i) == reference_tf32(a.values[i]));
}
