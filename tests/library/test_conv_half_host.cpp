// test_conv_half_host.cpp: the host target's stitch_library_conv, _conv_transpose and
// _conv_epilogue on float16 and bfloat16 tensors against direct double loops over the same
// stored inputs (half_reference.h for the tolerance): 1-D, 2-D and 3-D, groups (depthwise
// included), strides, pads, dilations, a pointwise conv, output padding, bias, the fused
// residual-and-Relu epilogue, batch > 1; sizes multiples of nothing, inputs random and nonzero.
#include "half_reference.h"

#include <catch2/catch.hpp>

#include <limits>

using namespace stitch::library::testing;

namespace {

constexpr int32_t kHalfTypes[] = {STITCH_LIBRARY_FLOAT16, STITCH_LIBRARY_BFLOAT16};

struct Geometry {
  int64_t batch, in_channels, out_channels, groups;
  std::vector<int64_t> in, kernel, strides, dilations, pads;
  std::vector<int64_t> output_padding = {}; // transposed only
};

stitch_conv_desc describe(const Geometry& g, bool transposed, int32_t dtype) {
  stitch_conv_desc desc = {};
  desc.dtype = dtype;
  desc.spatial_rank = static_cast<int32_t>(g.in.size());
  desc.batch = g.batch;
  desc.in_channels = g.in_channels;
  desc.out_channels = g.out_channels;
  desc.groups = g.groups;
  for (int i = 0; i < desc.spatial_rank; ++i) {
    desc.in_spatial[i] = g.in[i];
    desc.kernel[i] = g.kernel[i];
    desc.strides[i] = g.strides[i];
    desc.dilations[i] = g.dilations[i];
    desc.pads_begin[i] = desc.pads_end[i] = g.pads[i];
    const int64_t span = g.dilations[i] * (g.kernel[i] - 1) + 1;
    desc.out_spatial[i] = transposed ? (g.in[i] - 1) * g.strides[i] - 2 * g.pads[i] + span +
                                           (g.output_padding.empty() ? 0 : g.output_padding[i])
                                     : (g.in[i] + 2 * g.pads[i] - span) / g.strides[i] + 1;
  }
  return desc;
}

int64_t product(const int64_t* values, int count) {
  int64_t result = 1;
  for (int i = 0; i < count; ++i)
    result *= values[i];
  return result;
}

// The products summed into one output: what compare_typed's accumulation term needs.
int64_t terms_per_output(const stitch_conv_desc& desc, bool transposed) {
  const int64_t kernel = product(desc.kernel, desc.spatial_rank);
  return (transposed ? desc.in_channels : desc.in_channels / desc.groups) * kernel;
}

enum class Call { Conv, Transpose, Epilogue };

// Runs one call on random tensors and checks Y. The epilogue's expected value is the
// reference convolution (bias included) plus Z, then Relu, in double.
void check_half_conv(const Geometry& geometry, Call call, bool with_bias, uint32_t seed,
                     int32_t dtype, bool with_residual = false, bool relu = false) {
  const bool transposed = call == Call::Transpose;
  const stitch_conv_desc desc = describe(geometry, transposed, dtype);
  const int rank = desc.spatial_rank;
  INFO(dtype_label(dtype) << (transposed ? " conv transpose" : " conv") << " rank " << rank
                          << " groups " << desc.groups << " seed " << seed);
  const int64_t w_rows = transposed ? desc.in_channels : desc.out_channels;
  const int64_t w_cols = (transposed ? desc.out_channels : desc.in_channels) / desc.groups;
  const int64_t y_size = desc.batch * desc.out_channels * product(desc.out_spatial, rank);
  const TypedTensor x =
      random_tensor(dtype, desc.batch * desc.in_channels * product(desc.in_spatial, rank), seed);
  const TypedTensor w =
      random_tensor(dtype, w_rows * w_cols * product(desc.kernel, rank), seed + 1);
  const TypedTensor bias = random_tensor(dtype, desc.out_channels, seed + 2);
  const TypedTensor z = random_tensor(dtype, y_size, seed + 3);
  TypedTensor y = filled_tensor(dtype, y_size, std::numeric_limits<float>::quiet_NaN());

  const float* bias_values = with_bias ? bias.values.data() : nullptr;
  Expected expected =
      transposed ? reference_conv_transpose(desc, x.values.data(), w.values.data(), bias_values)
                 : reference_conv(desc, x.values.data(), w.values.data(), bias_values);
  if (call == Call::Epilogue) {
    for (int64_t i = 0; i < y_size; ++i) {
      if (with_residual) {
        expected.value[i] += z.values[i];
        expected.magnitude[i] += std::fabs(z.values[i]);
      }
      if (relu && expected.value[i] < 0.0) expected.value[i] = 0.0;
    }
  }

  stitch_abi_buffers buffers = {};
  char error[512] = {};
  const void* bias_data = with_bias ? bias.data() : nullptr;
  int32_t status = 0;
  switch (call) {
  case Call::Conv:
    status = stitch_library_conv(&buffers, &desc, x.data(), w.data(), bias_data, y.data(), error,
                                 sizeof(error));
    break;
  case Call::Transpose:
    status = stitch_library_conv_transpose(&buffers, &desc, x.data(), w.data(), bias_data, y.data(),
                                           error, sizeof(error));
    break;
  case Call::Epilogue:
    status = stitch_library_conv_epilogue(&buffers, &desc, x.data(), w.data(), bias_data,
                                          with_residual ? z.data() : nullptr, relu ? 1 : 0,
                                          y.data(), error, sizeof(error));
    break;
  }
  INFO(error);
  REQUIRE(status == 0);
  const Comparison comparison = compare_typed(y, expected, terms_per_output(desc, transposed));
  CHECK(comparison.mismatch == "");
  CHECK(comparison.correctly_rounded >= comparison.compared * 95 / 100);
}

} // namespace

TEST_CASE("float16 and bfloat16 conv: 1-D with groups, stride, dilation, pad; pointwise",
          "[library][half]") {
  for (int32_t dtype : kHalfTypes) {
    check_half_conv({2, 4, 6, 2, {17}, {3}, {2}, {2}, {2}}, Call::Conv, true, 10, dtype);
    check_half_conv({1, 3, 5, 1, {67}, {1}, {1}, {1}, {0}}, Call::Conv, false, 11, dtype);
  }
}

TEST_CASE("float16 and bfloat16 conv: 2-D strided, dilated, padded, grouped, depthwise",
          "[library][half]") {
  for (int32_t dtype : kHalfTypes) {
    check_half_conv({1, 6, 4, 2, {13, 11}, {3, 2}, {2, 1}, {1, 2}, {1, 1}}, Call::Conv, true, 20,
                    dtype);
    check_half_conv({2, 5, 5, 5, {9, 10}, {3, 3}, {2, 2}, {1, 1}, {1, 1}}, Call::Conv, true, 21,
                    dtype);
    // 399 output positions and 7 output channels: several column panels and row blocks.
    check_half_conv({1, 11, 7, 1, {19, 21}, {3, 3}, {1, 1}, {1, 1}, {1, 1}}, Call::Conv, false, 22,
                    dtype);
  }
}

TEST_CASE("float16 and bfloat16 conv: 3-D with per-dim strides, dilations and pads",
          "[library][half]") {
  for (int32_t dtype : kHalfTypes)
    check_half_conv({1, 4, 6, 2, {5, 6, 7}, {2, 3, 3}, {1, 2, 1}, {2, 1, 1}, {1, 1, 0}}, Call::Conv,
                    true, 30, dtype);
}

TEST_CASE("float16 and bfloat16 conv transpose: groups, strides, pads, output padding",
          "[library][half]") {
  for (int32_t dtype : kHalfTypes) {
    check_half_conv({2, 4, 6, 2, {9}, {3}, {2}, {1}, {1}, {1}}, Call::Transpose, true, 40, dtype);
    check_half_conv({2, 3, 5, 1, {6, 5}, {3, 3}, {2, 3}, {1, 2}, {1, 0}, {1, 2}}, Call::Transpose,
                    true, 41, dtype);
    check_half_conv({1, 4, 4, 4, {5, 6}, {3, 3}, {2, 2}, {1, 1}, {1, 1}, {1, 0}}, Call::Transpose,
                    false, 42, dtype);
  }
}

TEST_CASE("float16 and bfloat16 conv epilogue: bias, residual, Relu rounded once",
          "[library][half]") {
  for (int32_t dtype : kHalfTypes) {
    const Geometry geometry{2, 6, 9, 3, {7, 8}, {3, 3}, {1, 2}, {1, 1}, {1, 1}};
    check_half_conv(geometry, Call::Epilogue, true, 50, dtype, true, true);
    check_half_conv(geometry, Call::Epilogue, true, 51, dtype, true, false);
    check_half_conv(geometry, Call::Epilogue, true, 52, dtype, false, true);
  }
}

TEST_CASE("a half conv with allow_tf32 is refused", "[library][half]") {
  Geometry geometry{1, 2, 2, 1, {4, 4}, {3, 3}, {1, 1}, {1, 1}, {1, 1}};
  stitch_conv_desc desc = describe(geometry, false, STITCH_LIBRARY_BFLOAT16);
  desc.allow_tf32 = 1;
  TypedTensor x = random_tensor(desc.dtype, 32, 1), w = random_tensor(desc.dtype, 36, 2);
  TypedTensor y = filled_tensor(desc.dtype, 32, 0.0f);
  stitch_abi_buffers buffers = {};
  char error[512] = {};
  CHECK(stitch_library_conv(&buffers, &desc, x.data(), w.data(), nullptr, y.data(), error,
                            sizeof(error)) == STITCH_ERROR_INTERNAL);
  CHECK(std::string(error).rfind(
            "stitch_library_conv: allow_tf32 is for float32 operands, not bfloat16 in conv "
            "(bfloat16, 2-D",
            0) == 0);
}
