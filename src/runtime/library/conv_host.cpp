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
//
// Channels-last descriptors (channels_last = 1) run the same computation on channels-first
// copies: X, W and Z are copied to [.., channels, positions], the result computed there and
// copied back to Y's channels-last storage (a copy moves element bytes, so values and the
// order of sums are exactly the channels-first call's).
//
// Element types (host_elements.h): X and W are read as fp32 (float16 and bfloat16 exactly,
// float32 with allow_tf32 rounded to TF32), the bias and Z as fp32, and every output is
// computed in fp32 and rounded once to Y's dtype when it is written; the transposed
// convolution scatters into an fp32 image that is rounded when it is complete.
#include "descriptor_checks.h"
#include "host_elements.h"
#include "host_matmul.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <vector>

namespace stitch::library::host {
namespace {

// Whether 0 <= index < size, in one comparison.
bool inside(int64_t index, int64_t size) {
  return static_cast<uint64_t>(index) < static_cast<uint64_t>(size);
}

// Packs the im2col panel of one image and group: row (c, kz, ky, kx), column o (an output
// position) holds X[c][o * stride - pad + k * dilation], or 0 in the padding. The group's X
// starts at element `x_group` of `x`.
class Im2colPanel {
public:
  Im2colPanel(const ConvGeometry& g, const void* x, int64_t x_group, ElementLoad load,
              int64_t channels)
      : g_(g), x_(x), x_group_(x_group), load_(load), channels_(channels) {}

  void operator()(int64_t col0, int64_t cols, float* panel) const {
    with_reader(load_, [&](auto reader) { pack(reader, col0, cols, panel); });
  }

private:
  template <typename Reader>
  void pack(Reader reader, int64_t col0, int64_t cols, float* panel) const {
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
      const int64_t channel = x_group_ + c * in_positions;
      for (int64_t kz = 0; kz < g_.kernel[0]; ++kz) {
        for (int64_t ky = 0; ky < g_.kernel[1]; ++ky) {
          for (int64_t kx = 0; kx < g_.kernel[2]; ++kx, row += cols) {
            const int64_t dz = kz * g_.dilation[0], dy = ky * g_.dilation[1],
                          dx = kx * g_.dilation[2];
            for (int64_t j = 0; j < cols; ++j) {
              const int64_t iz = origin_z[j] + dz, iy = origin_y[j] + dy, ix = origin_x[j] + dx;
              row[j] = inside(iz, g_.in[0]) && inside(iy, g_.in[1]) && inside(ix, g_.in[2])
                           ? reader.read(x_, channel + (iz * g_.in[1] + iy) * g_.in[2] + ix)
                           : 0.0f;
            }
          }
        }
      }
    }
  }

  const ConvGeometry& g_;
  const void* x_;
  int64_t x_group_;
  ElementLoad load_;
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
  const void* z = nullptr;
  bool relu = false;
};

// How one call reads and writes its elements.
struct Elements {
  int32_t dtype = STITCH_LIBRARY_FLOAT32;      // of every operand
  ElementLoad operands = ElementLoad::Float32; // X and W
  ElementLoad values = ElementLoad::Float32;   // bias and Z
};

void conv_forward(const ConvGeometry& g, const Elements& e, const void* x, const void* w,
                  const void* bias, const Epilogue& epilogue, void* y) {
  const int64_t group_in = g.in_channels / g.groups, group_out = g.out_channels / g.groups;
  const int64_t inner = group_in * g.kernel_positions();
  const int64_t in_positions = g.in_positions(), out_positions = g.out_positions();
  for (int64_t image = 0; image < g.batch; ++image) {
    for (int64_t group = 0; group < g.groups; ++group) {
      const int64_t x_group = (image * g.in_channels + group * group_in) * in_positions;
      const MatrixView w_group{element_at(w, group * group_out * inner, e.dtype), inner, false,
                               e.operands};
      const int64_t group_offset = (image * g.out_channels + group * group_out) * out_positions;
      auto store = [&](int64_t row, int64_t col0, const float* sums, int64_t cols) {
        float results[kPanelColumns];
        const int64_t at = group_offset + row * out_positions + col0;
        if (bias == nullptr) {
          std::copy(sums, sums + cols, results);
        } else {
          const float channel_bias = read_element(e.values, bias, group * group_out + row);
          for (int64_t j = 0; j < cols; ++j)
            results[j] = sums[j] + channel_bias;
        }
        if (epilogue.z != nullptr)
          for (int64_t j = 0; j < cols; ++j)
            results[j] += read_element(e.values, epilogue.z, at + j);
        if (epilogue.relu)
          for (int64_t j = 0; j < cols; ++j)
            results[j] = results[j] < 0.0f ? 0.0f : results[j];
        write_elements(e.dtype, y, at, results, cols);
      };
      if (is_pointwise(g)) {
        multiply(group_out, out_positions, inner, w_group,
                 MatrixView{element_at(x, x_group, e.dtype), in_positions, false, e.operands},
                 store);
        continue;
      }
      multiply_packed(
          group_out, out_positions, inner,
          [&](int64_t row0, int64_t rows, float* block) {
            pack_row_block(w_group, inner, row0, rows, block);
          },
          Im2colPanel(g, x, x_group, e.operands, group_in), store);
    }
  }
}

void conv_transpose(const ConvGeometry& g, const Elements& e, const void* x, const void* w,
                    const void* bias, void* y) {
  const int64_t group_in = g.in_channels / g.groups, group_out = g.out_channels / g.groups;
  const int64_t taps = g.kernel_positions();
  const int64_t in_positions = g.in_positions(), out_positions = g.out_positions();
  // One image's output, accumulated in fp32 and rounded to Y's dtype when complete.
  std::vector<float> image_out(static_cast<std::size_t>(g.out_channels * out_positions));
  for (int64_t image = 0; image < g.batch; ++image) {
    std::fill(image_out.begin(), image_out.end(), 0.0f);
    for (int64_t group = 0; group < g.groups; ++group) {
      const MatrixView x_group{
          element_at(x, (image * g.in_channels + group * group_in) * in_positions, e.dtype),
          in_positions, false, e.operands};
      // W_g is [group_in][group_out * taps]; the multiply reads it transposed.
      const MatrixView w_group_t{element_at(w, group * group_in * group_out * taps, e.dtype),
                                 group_out * taps, true, e.operands};
      float* y_group = image_out.data() + group * group_out * out_positions;
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
    if (bias != nullptr) {
      for (int64_t channel = 0; channel < g.out_channels; ++channel) {
        const float channel_bias = read_element(e.values, bias, channel);
        float* y_channel = image_out.data() + channel * out_positions;
        for (int64_t o = 0; o < out_positions; ++o)
          y_channel[o] += channel_bias;
      }
    }
    write_elements(e.dtype, y, image * g.out_channels * out_positions, image_out.data(),
                   g.out_channels * out_positions);
  }
}

// Copies `outer` blocks of `channels` x `positions` elements of `bytes` each between the
// channels-last order [outer][positions][channels] and the channels-first order
// [outer][channels][positions], in the direction `to_first` says.
void relayout(const void* from, void* to, int64_t outer, int64_t channels, int64_t positions,
              std::size_t bytes, bool to_first) {
  const auto* source = static_cast<const unsigned char*>(from);
  auto* target = static_cast<unsigned char*>(to);
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t c = 0; c < channels; ++c)
      for (int64_t p = 0; p < positions; ++p) {
        const int64_t last = (o * positions + p) * channels + c;
        const int64_t first = (o * channels + c) * positions + p;
        std::memcpy(target + (to_first ? first : last) * bytes,
                    source + (to_first ? last : first) * bytes, bytes);
      }
}

// A channels-last call as a channels-first one on copies (see the top of the file).
void conv_channels_last(ConvDirection direction, const ConvGeometry& g, const Elements& e,
                        const void* x, const void* w, const void* bias, Epilogue epilogue,
                        void* y) {
  const std::size_t bytes = dtype_bytes(e.dtype);
  auto buffer = [&](int64_t elements) {
    return std::vector<unsigned char>(static_cast<std::size_t>(elements) * bytes);
  };
  const bool forward = direction == ConvDirection::Forward;
  // W is [rows][columns][taps] channels-first: forward [out][in / groups], transposed
  // [in][out / groups].
  const int64_t w_rows = forward ? g.out_channels : g.in_channels;
  const int64_t w_columns = (forward ? g.in_channels : g.out_channels) / g.groups;
  std::vector<unsigned char> x_first = buffer(g.batch * g.in_channels * g.in_positions());
  std::vector<unsigned char> w_first = buffer(w_rows * w_columns * g.kernel_positions());
  std::vector<unsigned char> y_first = buffer(g.batch * g.out_channels * g.out_positions());
  relayout(x, x_first.data(), g.batch, g.in_channels, g.in_positions(), bytes, true);
  relayout(w, w_first.data(), w_rows, w_columns, g.kernel_positions(), bytes, true);
  std::vector<unsigned char> z_first;
  if (epilogue.z != nullptr) {
    z_first = buffer(g.batch * g.out_channels * g.out_positions());
    relayout(epilogue.z, z_first.data(), g.batch, g.out_channels, g.out_positions(), bytes, true);
    epilogue.z = z_first.data();
  }
  if (forward)
    conv_forward(g, e, x_first.data(), w_first.data(), bias, epilogue, y_first.data());
  else
    conv_transpose(g, e, x_first.data(), w_first.data(), bias, y_first.data());
  relayout(y_first.data(), y, g.batch, g.out_channels, g.out_positions(), bytes, false);
}

int32_t run_conv(const char* routine, ConvDirection direction, const stitch_library_call* call,
                 const stitch_conv_desc* desc, const void* x, const void* w, const void* bias,
                 const Epilogue& epilogue, void* y, char* error, size_t error_size) {
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
    const Elements elements{desc->dtype, operand_load(desc->dtype, desc->allow_tf32),
                            value_load(desc->dtype)};
    if (desc->channels_last != 0)
      conv_channels_last(direction, geometry, elements, x, w, bias, epilogue, y);
    else if (direction == ConvDirection::Forward)
      conv_forward(geometry, elements, x, w, bias, epilogue, y);
    else
      conv_transpose(geometry, elements, x, w, bias, y);
    return STITCH_OK;
  });
}

} // namespace
} // namespace stitch::library::host

extern "C" int32_t stitch_library_conv_on(const stitch_library_call* call,
                                          const stitch_conv_desc* desc, const void* x,
                                          const void* w, const void* bias, void* y, char* error,
                                          size_t error_size) {
  return stitch::library::host::run_conv("stitch_library_conv",
                                         stitch::library::ConvDirection::Forward, call, desc, x, w,
                                         bias, {}, y, error, error_size);
}

extern "C" int32_t stitch_library_conv_epilogue_on(const stitch_library_call* call,
                                                   const stitch_conv_desc* desc, const void* x,
                                                   const void* w, const void* bias, const void* z,
                                                   int32_t relu, void* y, char* error,
                                                   size_t error_size) {
  return stitch::library::host::run_conv("stitch_library_conv_epilogue",
                                         stitch::library::ConvDirection::Forward, call, desc, x, w,
                                         bias, {true, z, relu != 0}, y, error, error_size);
}

extern "C" int32_t stitch_library_conv_transpose_on(const stitch_library_call* call,
                                                    const stitch_conv_desc* desc, const void* x,
                                                    const void* w, const void* bias, void* y,
                                                    char* error, size_t error_size) {
  return stitch::library::host::run_conv("stitch_library_conv_transpose",
                                         stitch::library::ConvDirection::Transposed, call, desc, x,
                                         w, bias, {}, y, error, error_size);
}
