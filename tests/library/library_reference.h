// library_reference.h: naive references for the library routines' tests, written from the
// definitions in stitch_library.h and nothing else: a triple loop for GEMM, a direct
// gather loop for convolution and a direct scatter loop for the transposed convolution, all in
// double. Each element also gets its magnitude (the sum of the absolute values of its terms),
// which bounds fp32 rounding error, so tolerances scale with what a sum actually adds up.
#pragma once

#include "library/stitch_library.h"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

namespace stitch::library::testing {

// One expected output per element: its value and the magnitude of its terms.
struct Expected {
  std::vector<double> value;
  std::vector<double> magnitude;
};

// Uniform in [-1, -0.05] U [0.05, 1]: never zero, so every term counts.
inline std::vector<float> random_values(std::size_t count, uint32_t seed) {
  std::mt19937 engine(seed);
  std::uniform_real_distribution<float> magnitude(0.05f, 1.0f);
  std::bernoulli_distribution negative(0.5);
  std::vector<float> values(count);
  for (float& value : values)
    value = negative(engine) ? -magnitude(engine) : magnitude(engine);
  return values;
}

inline double gelu_tanh_reference(double x) {
  return 0.5 * x * (1.0 + std::tanh(std::sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x)));
}

// D as the descriptor lays it out (elements between the batches' m x n blocks untouched, and
// so left out of `expected` as NaN).
inline Expected reference_gemm(const stitch_gemm_desc& g, const float* a, const float* b,
                               const float* c, const float* bias, std::size_t d_size) {
  Expected expected{std::vector<double>(d_size, NAN), std::vector<double>(d_size, 0.0)};
  for (int64_t batch = 0; batch < g.batch_count; ++batch) {
    for (int64_t i = 0; i < g.m; ++i) {
      for (int64_t j = 0; j < g.n; ++j) {
        double sum = 0.0, magnitude = 0.0;
        for (int64_t p = 0; p < g.k; ++p) {
          const double a_ip = g.trans_a ? a[batch * g.stride_a + p * g.lda + i]
                                        : a[batch * g.stride_a + i * g.lda + p];
          const double b_pj = g.trans_b ? b[batch * g.stride_b + j * g.ldb + p]
                                        : b[batch * g.stride_b + p * g.ldb + j];
          sum += a_ip * b_pj;
          magnitude += std::fabs(a_ip * b_pj);
        }
        double value = g.alpha * sum;
        magnitude *= std::fabs(g.alpha);
        if (g.beta != 0.0f) {
          const double c_ij = c[batch * g.stride_c + i * g.ldc + j];
          value += g.beta * c_ij;
          magnitude += std::fabs(g.beta * c_ij);
        }
        if (bias != nullptr) {
          value += bias[j];
          magnitude += std::fabs(bias[j]);
        }
        if (g.epilogue == STITCH_GEMM_EPILOGUE_RELU) value = value > 0.0 ? value : 0.0;
        if (g.epilogue == STITCH_GEMM_EPILOGUE_GELU_TANH) value = gelu_tanh_reference(value);
        const std::size_t index = static_cast<std::size_t>(batch * g.stride_d + i * g.ldd + j);
        expected.value[index] = value;
        expected.magnitude[index] = magnitude;
      }
    }
  }
  return expected;
}

// A convolution's sizes with the spatial dims right-aligned in three (missing dims size 1).
struct Dims3 {
  int64_t in[3] = {1, 1, 1}, out[3] = {1, 1, 1}, kernel[3] = {1, 1, 1};
  int64_t stride[3] = {1, 1, 1}, dilation[3] = {1, 1, 1}, pad[3] = {0, 0, 0};
};

inline Dims3 dims3(const stitch_conv_desc& c) {
  Dims3 d;
  for (int i = 0; i < c.spatial_rank; ++i) {
    const int at = 3 - c.spatial_rank + i;
    d.in[at] = c.in_spatial[i];
    d.out[at] = c.out_spatial[i];
    d.kernel[at] = c.kernel[i];
    d.stride[at] = c.strides[i];
    d.dilation[at] = c.dilations[i];
    d.pad[at] = c.pads_begin[i];
  }
  return d;
}

// ONNX Conv: Y[n][oc][o] = bias[oc] + sum over the group's input channels and kernel taps of
// X[n][ic][o * stride - pad + k * dilation] * W[oc][ic - group start][k], out of range reading 0.
inline Expected reference_conv(const stitch_conv_desc& c, const float* x, const float* w,
                               const float* bias) {
  const Dims3 d = dims3(c);
  const int64_t group_in = c.in_channels / c.groups, group_out = c.out_channels / c.groups;
  const int64_t out_size = c.batch * c.out_channels * d.out[0] * d.out[1] * d.out[2];
  Expected expected{std::vector<double>(out_size), std::vector<double>(out_size)};
  std::size_t index = 0;
  for (int64_t n = 0; n < c.batch; ++n)
    for (int64_t oc = 0; oc < c.out_channels; ++oc)
      for (int64_t oz = 0; oz < d.out[0]; ++oz)
        for (int64_t oy = 0; oy < d.out[1]; ++oy)
          for (int64_t ox = 0; ox < d.out[2]; ++ox, ++index) {
            double sum = bias != nullptr ? bias[oc] : 0.0;
            double magnitude = std::fabs(sum);
            const int64_t group = oc / group_out;
            for (int64_t icg = 0; icg < group_in; ++icg)
              for (int64_t kz = 0; kz < d.kernel[0]; ++kz)
                for (int64_t ky = 0; ky < d.kernel[1]; ++ky)
                  for (int64_t kx = 0; kx < d.kernel[2]; ++kx) {
                    const int64_t iz = oz * d.stride[0] - d.pad[0] + kz * d.dilation[0];
                    const int64_t iy = oy * d.stride[1] - d.pad[1] + ky * d.dilation[1];
                    const int64_t ix = ox * d.stride[2] - d.pad[2] + kx * d.dilation[2];
                    if (iz < 0 || iz >= d.in[0] || iy < 0 || iy >= d.in[1] || ix < 0 ||
                        ix >= d.in[2])
                      continue;
                    const int64_t ic = group * group_in + icg;
                    const double xv =
                        x[(((n * c.in_channels + ic) * d.in[0] + iz) * d.in[1] + iy) * d.in[2] +
                          ix];
                    const double wv =
                        w[(((oc * group_in + icg) * d.kernel[0] + kz) * d.kernel[1] + ky) *
                              d.kernel[2] +
                          kx];
                    sum += xv * wv;
                    magnitude += std::fabs(xv * wv);
                  }
            expected.value[index] = sum;
            expected.magnitude[index] = magnitude;
          }
  return expected;
}

// ONNX ConvTranspose: every input element X[n][ic][i] adds X * W[ic][oc - group start][k] to
// Y[n][oc][i * stride - pad + k * dilation] for the group's output channels, where that lies
// inside Y; then bias[oc] is added.
inline Expected reference_conv_transpose(const stitch_conv_desc& c, const float* x, const float* w,
                                         const float* bias) {
  const Dims3 d = dims3(c);
  const int64_t group_in = c.in_channels / c.groups, group_out = c.out_channels / c.groups;
  const int64_t out_positions = d.out[0] * d.out[1] * d.out[2];
  const int64_t out_size = c.batch * c.out_channels * out_positions;
  Expected expected{std::vector<double>(out_size, 0.0), std::vector<double>(out_size, 0.0)};
  for (int64_t n = 0; n < c.batch; ++n)
    for (int64_t ic = 0; ic < c.in_channels; ++ic)
      for (int64_t iz = 0; iz < d.in[0]; ++iz)
        for (int64_t iy = 0; iy < d.in[1]; ++iy)
          for (int64_t ix = 0; ix < d.in[2]; ++ix) {
            const double xv =
                x[(((n * c.in_channels + ic) * d.in[0] + iz) * d.in[1] + iy) * d.in[2] + ix];
            const int64_t group = ic / group_in;
            for (int64_t ocg = 0; ocg < group_out; ++ocg)
              for (int64_t kz = 0; kz < d.kernel[0]; ++kz)
                for (int64_t ky = 0; ky < d.kernel[1]; ++ky)
                  for (int64_t kx = 0; kx < d.kernel[2]; ++kx) {
                    const int64_t oz = iz * d.stride[0] - d.pad[0] + kz * d.dilation[0];
                    const int64_t oy = iy * d.stride[1] - d.pad[1] + ky * d.dilation[1];
                    const int64_t ox = ix * d.stride[2] - d.pad[2] + kx * d.dilation[2];
                    if (oz < 0 || oz >= d.out[0] || oy < 0 || oy >= d.out[1] || ox < 0 ||
                        ox >= d.out[2])
                      continue;
                    const int64_t oc = group * group_out + ocg;
                    const double wv =
                        w[(((ic * group_out + ocg) * d.kernel[0] + kz) * d.kernel[1] + ky) *
                              d.kernel[2] +
                          kx];
                    const std::size_t at =
                        ((n * c.out_channels + oc) * d.out[0] + oz) * d.out[1] * d.out[2] +
                        oy * d.out[2] + ox;
                    expected.value[at] += xv * wv;
                    expected.magnitude[at] += std::fabs(xv * wv);
                  }
          }
  if (bias != nullptr) {
    for (int64_t n = 0; n < c.batch; ++n)
      for (int64_t oc = 0; oc < c.out_channels; ++oc)
        for (int64_t o = 0; o < out_positions; ++o) {
          const std::size_t at = (n * c.out_channels + oc) * out_positions + o;
          expected.value[at] += bias[oc];
          expected.magnitude[at] += std::fabs(bias[oc]);
        }
  }
  return expected;
}

// Empty when every element the reference defines (non-NaN) is within
// relative * magnitude + absolute of it; otherwise the first element that is not.
inline std::string first_mismatch(const std::vector<float>& actual, const Expected& expected,
                                  double relative = 2e-5, double absolute = 1e-6) {
  if (actual.size() != expected.value.size())
    return "size " + std::to_string(actual.size()) + " != " + std::to_string(expected.value.size());
  for (std::size_t i = 0; i < actual.size(); ++i) {
    if (std::isnan(expected.value[i])) continue;
    const double error = std::fabs(actual[i] - expected.value[i]);
    if (!(error <= relative * expected.magnitude[i] + absolute))
      return "element " + std::to_string(i) + ": got " + std::to_string(actual[i]) + ", expected " +
             std::to_string(expected.value[i]) + " (magnitude " +
             std::to_string(expected.magnitude[i]) + ")";
  }
  return {};
}

inline bool bitwise_equal(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

} // namespace stitch::library::testing
