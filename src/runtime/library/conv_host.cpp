// conv_host.cpp: stitch_library_conv_on and stitch_library_conv_transpose_on for the host
// target, both as matrix multiplies on host_matmul.h's kernel, per image and group, in three
// spatial dims (descriptor_checks.h right-aligns 1-D and 2-D convs into 3-D):
//
//   forward     Y_g[oc][o] = W_g[oc][(c, tap)] @ cols[(c, tap)][o], where cols is the im2col
//               matrix of X_g, built a panel at a time inside the kernel (never whole); a
//               pointwise conv (1x1, stride 1, no pad) uses X_g as the matrix itself.
//   transposed  T[(oc, tap)][i] = W_g^T @ X_g, each finished sum scattered at once into
//               Y[oc][i * stride - pad + tap * dilation] (col2im), Y having been zeroed.
//
// Bias is added last to each output, one rounding, as cuDNN's cudnnAddTensor does after the
// convolution; a forward convolution's epilogue then adds the residual Z and applies Relu, each
// rounded as the separate ops round it. Sums keep host_matmul.h's fixed order and the scatter
// visits tiles in a fixed order, so both are bitwise repeatable.
#include "descriptor_checks.h"
#include "host_matmul.h"

#include <algorithm>
#include <array>

namespace stitch::library::host {
namespace {

// Whether 0 <= index < size, in one comparison.
bool inside(int64_t index, int64_t size) {
  return static_cast<uint64_t>(index) < static_cast<uint64_t>(size);
}

// Packs the im2col panel of one image and group: row (c, kz, ky, kx), column o (an output
// position) holds X[c][o * stride - pad + k * dilation], or 0 in the padding.
class Im2colPanel {
public:
  Im2colPanel(const ConvGeometry& g, const float* x_group, int64_t channels)
      : g_(g), x_group_(x_group), channels_(channels) {}

  void operator()(int64_t col0, int64_t cols, float* panel) const {
    std::array<int64_t, kPanelColumns> origin_z, origin_y, origin_x;
    for (int64_t j = 0; j < cols; ++j) {
      const int64_t position = col0 + j;
      const int64_t ox = position % g_.out[2];
      const int64_t oy = position / g_.out[2] % g_.out[1];
      const int64_t oz = position / (g_.out[2] * g_.out[1]);
      origin_z[j] = oz * g_.stride[0] - g_.pad[0];
      origin_y[j] = oy * g_.stride[1] - g_.pad[1];
      origin_x[j] = ox * g_.stride[2] - g_.pad[2];
    }
    const int64_t in_positions = g_.in_positions();
    float* row = panel;
    for (int64_t c = 0; c < channels_; ++c) {
      const float* channel = x_group_ + c * in_positions;
      for (int64_t kz = 0; kz < g_.kernel[0]; ++kz) {
        for (int64_t ky = 0; ky < g_.kernel[1]; ++ky) {
          for (int64_t kx = 0; kx < g_.kernel[2]; ++kx, row += cols) {
            const int64_t dz = kz * g_.dilation[0], dy = ky * g_.dilation[1],
                          dx = kx * g_.dilation[2];
            for (int64_t j = 0; j < cols; ++j) {
              const int64_t iz = origin_z[j] + dz, iy = origin_y[j] + dy, ix = origin_x[j] + dx;
              row[j] = inside(iz, g_.in[0]) && inside(iy, g_.in[1]) && inside(ix, g_.in[2])
                           ? channel[(iz * g_.in[1] + iy) * g_.in[2] + ix]
                           : 0.0f;
            }
          }
        }
      }
    }
  }

private:
  const ConvGeometry& g_;
  const float* x_group_;
  int64_t channels_;
};

bool is_pointwise(const ConvGeometry& g) {
  for (int i = 0; i < kSpatial; ++i)
    if (g.kernel[i] != 1 || g.stride[i] != 1 || g.pad[i] != 0) return false;
  return true;
}

// The forward convolution's epilogue after the bias: + Z, then Relu (as stitch_ops.cuh's relu).
struct Epilogue {
  bool active = false; // stitch_library_conv_epilogue_on
  const float* z = nullptr;
  bool relu = false;
};

void conv_forward(const ConvGeometry& g, const float* x, const float* w, const float* bias,
                  const Epilogue& epilogue, float* y) {
  const int64_t group_in = g.in_channels / g.groups, group_out = g.out_channels / g.groups;
  const int64_t inner = group_in * g.kernel_positions();
  const int64_t in_positions = g.in_positions(), out_positions = g.out_positions();
  for (int64_t image = 0; image < g.batch; ++image) {
    for (int64_t group = 0; group < g.groups; ++group) {
      const float* x_group = x + (image * g.in_channels + group * group_in) * in_positions;
      const MatrixView w_group{w + group * group_out * inner, inner, false};
      const int64_t group_offset = (image * g.out_channels + group * group_out) * out_positions;
      float* y_group = y + group_offset;
      const float* z_group = epilogue.z != nullptr ? epilogue.z + group_offset : nullptr;
      const float* bias_group = bias != nullptr ? bias + group * group_out : nullptr;
      auto store = [&](int64_t row, int64_t col0, const float* sums, int64_t cols) {
        float* destination = y_group + row * out_positions + col0;
        if (bias_group == nullptr)
          std::copy(sums, sums + cols, destination);
        else
          for (int64_t j = 0; j < cols; ++j)
            destination[j] = sums[j] + bias_group[row];
        if (z_group != nullptr) {
          const float* residual = z_group + row * out_positions + col0;
          for (int64_t j = 0; j < cols; ++j)
            destination[j] += residual[j];
        }
        if (epilogue.relu)
          for (int64_t j = 0; j < cols; ++j)
            destination[j] = destination[j] < 0.0f ? 0.0f : destination[j];
      };
      if (is_pointwise(g)) {
        multiply(group_out, out_positions, inner, w_group, MatrixView{x_group, in_positions, false},
                 store);
        continue;
      }
      multiply_packed(
          group_out, out_positions, inner,
          [&](int64_t row0, int64_t rows, float* block) {
            pack_row_block(w_group, inner, row0, rows, block);
          },
          Im2colPanel(g, x_group, group_in), store);
    }
  }
}

void conv_transpose(const ConvGeometry& g, const float* x, const float* w, const float* bias,
                    float* y) {
  const int64_t group_in = g.in_channels / g.groups, group_out = g.out_channels / g.groups;
  const int64_t taps = g.kernel_positions();
  const int64_t in_positions = g.in_positions(), out_positions = g.out_positions();
  std::fill(y, y + g.batch * g.out_channels * out_positions, 0.0f);
  for (int64_t image = 0; image < g.batch; ++image) {
    for (int64_t group = 0; group < g.groups; ++group) {
      const MatrixView x_group{x + (image * g.in_channels + group * group_in) * in_positions,
                               in_positions, false};
      // W_g is [group_in][group_out * taps]; the multiply reads it transposed.
      const MatrixView w_group_t{w + group * group_in * group_out * taps, group_out * taps, true};
      float* y_group = y + (image * g.out_channels + group * group_out) * out_positions;
      auto scatter = [&](int64_t row, int64_t col0, const float* sums, int64_t cols) {
        const int64_t channel = row / taps, tap = row % taps;
        const int64_t kx = tap % g.kernel[2], ky = tap / g.kernel[2] % g.kernel[1],
                      kz = tap / (g.kernel[2] * g.kernel[1]);
        float* y_channel = y_group + channel * out_positions;
        int64_t ix = col0 % g.in[2], iy = col0 / g.in[2] % g.in[1], iz = col0 / (g.in[2] * g.in[1]);
        for (int64_t j = 0; j < cols; ++j) {
          const int64_t oz = iz * g.stride[0] - g.pad[0] + kz * g.dilation[0];
          const int64_t oy = iy * g.stride[1] - g.pad[1] + ky * g.dilation[1];
          const int64_t ox = ix * g.stride[2] - g.pad[2] + kx * g.dilation[2];
          if (inside(oz, g.out[0]) && inside(oy, g.out[1]) && inside(ox, g.out[2]))
            y_channel[(oz * g.out[1] + oy) * g.out[2] + ox] += sums[j];
          if (++ix == g.in[2]) {
            ix = 0;
            if (++iy == g.in[1]) {
              iy = 0;
              ++iz;
            }
          }
        }
      };
      multiply(group_out * taps, in_positions, group_in, w_group_t, x_group, scatter);
    }
  }
  if (bias == nullptr) return;
  for (int64_t image = 0; image < g.batch; ++image) {
    for (int64_t channel = 0; channel < g.out_channels; ++channel) {
      float* y_channel = y + (image * g.out_channels + channel) * out_positions;
      for (int64_t o = 0; o < out_positions; ++o)
        y_channel[o] += bias[channel];
    }
  }
}

int32_t run_conv(const char* routine, ConvDirection direction, const stitch_library_call* call,
                 const stitch_conv_desc* desc, const float* x, const float* w, const float* bias,
                 const Epilogue& epilogue, float* y, char* error, size_t error_size) {
  const ErrorSink sink(routine, error, error_size);
  return run_guarded(sink, [&]() -> int32_t {
    if (call == nullptr) return sink.fail(STITCH_ERROR_INTERNAL, "null call");
    if (const std::string problem = check_conv(direction, desc, x, w, y); !problem.empty())
      return sink.fail(STITCH_ERROR_INTERNAL, problem);
    if (epilogue.active)
      if (const std::string problem = check_conv_epilogue(*desc, bias, epilogue.z, y);
          !problem.empty())
        return sink.fail(STITCH_ERROR_INTERNAL, problem);
    const ConvGeometry geometry = conv_geometry(*desc);
    if (geometry.batch == 0) return STITCH_OK;
    if (direction == ConvDirection::Forward)
      conv_forward(geometry, x, w, bias, epilogue, y);
    else
      conv_transpose(geometry, x, w, bias, y);
    return STITCH_OK;
  });
}

} // namespace
} // namespace stitch::library::host

extern "C" int32_t stitch_library_conv_on(const stitch_library_call* call,
                                          const stitch_conv_desc* desc, const float* x,
                                          const float* w, const float* bias, float* y, char* error,
                                          size_t error_size) {
  return stitch::library::host::run_conv("stitch_library_conv",
                                         stitch::library::ConvDirection::Forward, call, desc, x, w,
                                         bias, {}, y, error, error_size);
}

extern "C" int32_t stitch_library_conv_epilogue_on(const stitch_library_call* call,
                                                   const stitch_conv_desc* desc, const float* x,
                                                   const float* w, const float* bias,
                                                   const float* z, int32_t relu, float* y,
                                                   char* error, size_t error_size) {
  return stitch::library::host::run_conv("stitch_library_conv_epilogue",
                                         stitch::library::ConvDirection::Forward, call, desc, x, w,
                                         bias, {true, z, relu != 0}, y, error, error_size);
}

extern "C" int32_t stitch_library_conv_transpose_on(const stitch_library_call* call,
                                                    const stitch_conv_desc* desc, const float* x,
                                                    const float* w, const float* bias, float* y,
                                                    char* error, size_t error_size) {
  return stitch::library::host::run_conv("stitch_library_conv_transpose",
                                         stitch::library::ConvDirection::Transposed, call, desc, x,
                                         w, bias, {}, y, error, error_size);
}
