// test_conv_host.cpp: the host target's stitch_library_conv and stitch_library_conv_transpose
// against direct loops (library_reference.h) on random nonzero data: 1-D, 2-D and 3-D, groups
// (depthwise included), strides, dilations, pads, output padding, bias; and determinism.
#include "library_reference.h"

#include <catch2/catch.hpp>

#include <limits>
#include <string>

using namespace stitch::library::testing;

namespace {

struct ConvSpec {
  int64_t batch, in_channels, out_channels, groups;
  std::vector<int64_t> in, kernel, strides, dilations, pads;
  std::vector<int64_t> output_padding = {}; // transposed only; empty means 0
};

stitch_conv_desc describe(const ConvSpec& spec, bool transposed) {
  stitch_conv_desc desc = {};
  desc.spatial_rank = static_cast<int32_t>(spec.in.size());
  desc.batch = spec.batch;
  desc.in_channels = spec.in_channels;
  desc.out_channels = spec.out_channels;
  desc.groups = spec.groups;
  for (int i = 0; i < desc.spatial_rank; ++i) {
    desc.in_spatial[i] = spec.in[i];
    desc.kernel[i] = spec.kernel[i];
    desc.strides[i] = spec.strides[i];
    desc.dilations[i] = spec.dilations[i];
    desc.pads_begin[i] = desc.pads_end[i] = spec.pads[i];
    const int64_t span = spec.dilations[i] * (spec.kernel[i] - 1) + 1;
    if (!transposed) {
      desc.out_spatial[i] = (spec.in[i] + 2 * spec.pads[i] - span) / spec.strides[i] + 1;
    } else {
      const int64_t output_padding = spec.output_padding.empty() ? 0 : spec.output_padding[i];
      desc.out_spatial[i] =
          (spec.in[i] - 1) * spec.strides[i] - 2 * spec.pads[i] + span + output_padding;
    }
  }
  return desc;
}

int64_t product(const int64_t* values, int count) {
  int64_t result = 1;
  for (int i = 0; i < count; ++i)
    result *= values[i];
  return result;
}

struct ConvRun {
  std::vector<float> x, w, bias, y;
};

// Random X, W and bias for `desc`, Y prefilled with NaN, and the call made as generated code
// makes it.
ConvRun run_conv(const stitch_conv_desc& desc, bool transposed, bool with_bias, uint32_t seed) {
  const int rank = desc.spatial_rank;
  const int64_t w_rows = transposed ? desc.in_channels : desc.out_channels;
  const int64_t w_cols = (transposed ? desc.out_channels : desc.in_channels) / desc.groups;
  ConvRun run;
  run.x = random_values(desc.batch * desc.in_channels * product(desc.in_spatial, rank), seed);
  run.w = random_values(w_rows * w_cols * product(desc.kernel, rank), seed + 1);
  run.bias = random_values(desc.out_channels, seed + 2);
  run.y.assign(desc.batch * desc.out_channels * product(desc.out_spatial, rank),
               std::numeric_limits<float>::quiet_NaN());
  stitch_abi_buffers buffers = {};
  char error[512] = {};
  const float* bias = with_bias ? run.bias.data() : nullptr;
  const int32_t status =
      transposed ? stitch_library_conv_transpose(&buffers, &desc, run.x.data(), run.w.data(), bias,
                                                 run.y.data(), error, sizeof(error))
                 : stitch_library_conv(&buffers, &desc, run.x.data(), run.w.data(), bias,
                                       run.y.data(), error, sizeof(error));
  INFO(error);
  REQUIRE(status == 0);
  return run;
}

void check_conv(const ConvSpec& spec, bool with_bias, uint32_t seed) {
  const stitch_conv_desc desc = describe(spec, false);
  const ConvRun run = run_conv(desc, false, with_bias, seed);
  const Expected expected =
      reference_conv(desc, run.x.data(), run.w.data(), with_bias ? run.bias.data() : nullptr);
  CHECK(first_mismatch(run.y, expected) == "");
}

void check_conv_transpose(const ConvSpec& spec, bool with_bias, uint32_t seed) {
  const stitch_conv_desc desc = describe(spec, true);
  const ConvRun run = run_conv(desc, true, with_bias, seed);
  const Expected expected = reference_conv_transpose(desc, run.x.data(), run.w.data(),
                                                     with_bias ? run.bias.data() : nullptr);
  CHECK(first_mismatch(run.y, expected) == "");
}

} // namespace

TEST_CASE("1-D conv with groups, stride, dilation, pad and bias", "[library]") {
  check_conv({2, 4, 6, 2, {17}, {3}, {2}, {2}, {2}}, true, 1);
  check_conv({1, 3, 5, 1, {65}, {1}, {1}, {1}, {0}}, false, 2); // pointwise
}

TEST_CASE("2-D conv: 3x3 same-size, strided, dilated with non-square kernel", "[library]") {
  check_conv({2, 3, 5, 1, {8, 8}, {3, 3}, {1, 1}, {1, 1}, {1, 1}}, true, 11);
  check_conv({1, 6, 4, 2, {13, 11}, {3, 2}, {2, 1}, {1, 2}, {0, 1}}, true, 12);
  // 400 output positions and 9 output channels: several column panels and row blocks.
  check_conv({1, 16, 9, 1, {20, 20}, {3, 3}, {1, 1}, {1, 1}, {1, 1}}, false, 13);
}

TEST_CASE("2-D depthwise conv (groups == channels), strided and padded", "[library]") {
  check_conv({2, 8, 8, 8, {9, 10}, {3, 3}, {2, 2}, {1, 1}, {1, 1}}, true, 21);
  // Channel multiplier 2: each input channel feeds two outputs.
  check_conv({1, 4, 8, 4, {7, 7}, {5, 5}, {1, 1}, {1, 1}, {2, 2}}, true, 22);
}

TEST_CASE("2-D pointwise conv with groups reads X directly", "[library]") {
  check_conv({2, 6, 9, 3, {5, 7}, {1, 1}, {1, 1}, {1, 1}, {0, 0}}, true, 31);
}

TEST_CASE("3-D conv with groups, per-dim strides, dilations and pads", "[library]") {
  check_conv({1, 4, 4, 2, {5, 6, 7}, {2, 3, 3}, {1, 2, 1}, {2, 1, 1}, {1, 1, 0}}, true, 41);
  check_conv({2, 3, 2, 1, {4, 4, 4}, {3, 3, 3}, {2, 2, 2}, {1, 1, 1}, {1, 1, 1}}, false, 42);
}

TEST_CASE("1-D conv transpose with stride, pad, output padding and groups", "[library]") {
  check_conv_transpose({2, 4, 6, 2, {9}, {3}, {2}, {1}, {1}, {1}}, true, 51);
  check_conv_transpose({1, 3, 2, 1, {17}, {4}, {3}, {2}, {0}, {2}}, false, 52);
}

TEST_CASE("2-D conv transpose: strided, padded, dilated, output padding", "[library]") {
  check_conv_transpose({2, 3, 5, 1, {6, 5}, {3, 3}, {2, 3}, {1, 2}, {1, 0}, {1, 2}}, true, 61);
  check_conv_transpose({1, 8, 4, 1, {4, 4}, {4, 4}, {2, 2}, {1, 1}, {1, 1}}, true, 62);
  // 144 input positions: more than one column panel of the kernel.
  check_conv_transpose({1, 5, 3, 1, {12, 12}, {3, 3}, {1, 1}, {1, 1}, {1, 1}}, false, 63);
}

TEST_CASE("2-D conv transpose with groups, depthwise included", "[library]") {
  check_conv_transpose({1, 4, 4, 4, {5, 6}, {3, 3}, {2, 2}, {1, 1}, {1, 1}, {1, 0}}, true, 71);
  check_conv_transpose({2, 6, 4, 2, {5, 5}, {2, 3}, {2, 1}, {1, 1}, {0, 1}}, true, 72);
}

TEST_CASE("3-D conv transpose with stride, pad and output padding", "[library]") {
  check_conv_transpose(
      {1, 4, 2, 2, {3, 4, 3}, {3, 3, 2}, {2, 2, 1}, {1, 1, 2}, {1, 1, 0}, {1, 0, 0}}, true, 81);
}

TEST_CASE("conv and conv transpose give bitwise the same Y twice", "[library]") {
  const ConvSpec spec{2, 6, 8, 2, {11, 13}, {3, 3}, {2, 1}, {1, 2}, {1, 1}, {1, 0}};
  for (bool transposed : {false, true}) {
    const stitch_conv_desc desc = describe(spec, transposed);
    const ConvRun first = run_conv(desc, transposed, true, 91);
    const ConvRun second = run_conv(desc, transposed, true, 91);
    INFO((transposed ? "conv transpose" : "conv"));
    CHECK(bitwise_equal(first.y, second.y));
  }
}

TEST_CASE("a conv with batch 0 succeeds without touching Y", "[library]") {
  stitch_conv_desc desc = describe({0, 2, 2, 1, {4}, {3}, {1}, {1}, {1}}, false);
  float y[1] = {std::numeric_limits<float>::quiet_NaN()};
  stitch_abi_buffers buffers = {};
  CHECK(stitch_library_conv(&buffers, &desc, nullptr, nullptr, nullptr, y, nullptr, 0) == 0);
  CHECK(std::isnan(y[0]));
}

TEST_CASE("conv epilogue: bias, residual and Relu as the separate ops compute them", "[library]") {
  // Proves: stitch_library_conv_epilogue's Y = relu(conv + bias + Z) is, bitwise, the plain
  // convolution (with bias) followed by the residual add and Relu, each rounded once (the
  // unfused plan's order); without Relu it is the identity; the residual is optional.
  const stitch_conv_desc desc =
      describe({2, 6, 8, 2, {9, 7}, {3, 3}, {1, 2}, {1, 1}, {1, 1}}, false);
  const ConvRun plain = run_conv(desc, false, true, 41);
  const std::vector<float> z = random_values(plain.y.size(), 44);
  for (bool residual : {false, true}) {
    for (int32_t relu : {0, 1}) {
      INFO("residual " << residual << " relu " << relu);
      std::vector<float> y(plain.y.size(), std::numeric_limits<float>::quiet_NaN());
      stitch_abi_buffers buffers = {};
      char error[512] = {};
      REQUIRE(stitch_library_conv_epilogue(&buffers, &desc, plain.x.data(), plain.w.data(),
                                           plain.bias.data(), residual ? z.data() : nullptr, relu,
                                           y.data(), error, sizeof(error)) == 0);
      size_t differ = 0, negative = 0;
      for (size_t i = 0; i < y.size(); ++i) {
        float expected = plain.y[i];
        if (residual) expected += z[i];
        if (relu != 0 && expected < 0.0f) expected = 0.0f;
        differ += y[i] != expected;
        negative += y[i] < 0.0f;
      }
      CHECK(differ == 0);
      CHECK((relu != 0) == (negative == 0)); // random data: the identity keeps negatives
    }
  }
}

TEST_CASE("conv epilogue refuses a missing bias and a residual overlapping Y", "[library]") {
  const stitch_conv_desc desc =
      describe({1, 2, 2, 1, {4, 4}, {3, 3}, {1, 1}, {1, 1}, {1, 1}}, false);
  std::vector<float> x(32, 1.0f), w(36, 1.0f), bias(2, 1.0f), y(32, 0.0f);
  stitch_abi_buffers buffers = {};
  char error[512] = {};
  CHECK(stitch_library_conv_epilogue(&buffers, &desc, x.data(), w.data(), nullptr, nullptr, 1,
                                     y.data(), error, sizeof(error)) != 0);
  CHECK(std::string(error).find("needs its bias") != std::string::npos);
  CHECK(stitch_library_conv_epilogue(&buffers, &desc, x.data(), w.data(), bias.data(), y.data() + 1,
                                     0, y.data(), error, sizeof(error)) != 0);
  CHECK(std::string(error).find("overlaps Y") != std::string::npos);
}

namespace {

// [outer][channels][positions] <-> [outer][positions][channels].
std::vector<float> channels_last(const std::vector<float>& first, int64_t outer, int64_t channels,
                                 int64_t positions) {
  std::vector<float> last(first.size());
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t c = 0; c < channels; ++c)
      for (int64_t p = 0; p < positions; ++p)
        last[(o * positions + p) * channels + c] = first[(o * channels + c) * positions + p];
  return last;
}

// The same convolution called channels-first and channels-last on the same values (forward
// with the epilogue: bias, residual, Relu; transposed with the bias): the results agree
// bitwise, element for element.
void check_channels_last(const ConvSpec& spec, bool transposed, uint32_t seed) {
  stitch_conv_desc first = describe(spec, transposed);
  const int rank = first.spatial_rank;
  const int64_t in_positions = product(first.in_spatial, rank);
  const int64_t out_positions = product(first.out_spatial, rank);
  const int64_t taps = product(first.kernel, rank);
  // W is [rows][columns][taps] channels-first.
  const int64_t w_rows = transposed ? first.in_channels : first.out_channels;
  const int64_t w_columns = (transposed ? first.out_channels : first.in_channels) / first.groups;
  const std::vector<float> x = random_values(first.batch * first.in_channels * in_positions, seed);
  const std::vector<float> w = random_values(w_rows * w_columns * taps, seed + 1);
  const std::vector<float> bias = random_values(first.out_channels, seed + 2);
  const std::vector<float> z =
      random_values(first.batch * first.out_channels * out_positions, seed + 3);
  stitch_conv_desc last = first;
  last.channels_last = 1;
  const std::vector<float> x_last = channels_last(x, first.batch, first.in_channels, in_positions);
  const std::vector<float> w_last = channels_last(w, w_rows, w_columns, taps);
  const std::vector<float> z_last =
      channels_last(z, first.batch, first.out_channels, out_positions);
  std::vector<float> y_first(z.size()), y_last(z.size(), std::numeric_limits<float>::quiet_NaN());
  stitch_abi_buffers buffers = {};
  char error[512] = {};
  auto call = [&](const stitch_conv_desc& desc, const std::vector<float>& xs,
                  const std::vector<float>& ws, const std::vector<float>& zs, float* y) {
    return transposed
               ? stitch_library_conv_transpose(&buffers, &desc, xs.data(), ws.data(), bias.data(),
                                               y, error, sizeof(error))
               : stitch_library_conv_epilogue(&buffers, &desc, xs.data(), ws.data(), bias.data(),
                                              zs.data(), 1, y, error, sizeof(error));
  };
  REQUIRE(call(first, x, w, z, y_first.data()) == 0);
  const int32_t status = call(last, x_last, w_last, z_last, y_last.data());
  INFO(error);
  REQUIRE(status == 0);
  const std::vector<float> expected =
      channels_last(y_first, first.batch, first.out_channels, out_positions);
  for (size_t i = 0; i < expected.size(); ++i) {
    INFO("element " << i);
    REQUIRE(y_last[i] == expected[i]);
  }
}

} // namespace

TEST_CASE("channels-last conv: the channels-first result in NWC, NHWC and NDHWC", "[library]") {
  check_channels_last({2, 6, 4, 2, {9}, {3}, {2}, {1}, {1}}, false, 700);
  check_channels_last({2, 5, 7, 1, {6, 5}, {3, 3}, {1, 1}, {1, 1}, {1, 1}}, false, 710);
  check_channels_last({1, 4, 4, 4, {7, 6}, {3, 2}, {2, 1}, {1, 2}, {1, 0}}, false, 720);
  check_channels_last({1, 8, 6, 2, {4, 4}, {1, 1}, {1, 1}, {1, 1}, {0, 0}}, false, 730);
  check_channels_last({1, 3, 4, 1, {3, 4, 5}, {2, 3, 2}, {1, 2, 1}, {1, 1, 2}, {1, 1, 0}}, false,
                      740);
}

TEST_CASE("channels-last conv transpose: the channels-first result", "[library]") {
  check_channels_last({2, 6, 4, 2, {5}, {3}, {2}, {1}, {1}, {1}}, true, 750);
  check_channels_last({1, 4, 6, 2, {4, 3}, {3, 2}, {2, 1}, {1, 2}, {1, 0}, {1, 0}}, true, 760);
  check_channels_last({1, 3, 2, 1, {2, 3, 2}, {2, 2, 3}, {2, 1, 1}, {1, 1, 1}, {0, 1, 0}}, true,
                      770);
}

TEST_CASE("channels-last conv: a flag other than 0 or 1 is refused", "[library]") {
  stitch_conv_desc desc = describe({1, 2, 2, 1, {4, 4}, {3, 3}, {1, 1}, {1, 1}, {1, 1}}, false);
  desc.channels_last = 2;
  std::vector<float> x(32), w(2 * 2 * 9), y(2 * 4 * 4);
  stitch_abi_buffers buffers = {};
  char error[512] = {};
  CHECK(stitch_library_conv(&buffers, &desc, x.data(), w.data(), nullptr, y.data(), error,
                            sizeof(error)) != 0);
  CHECK(std::string(error).find("channels_last must be 0 or 1") != std::string::npos);
}
