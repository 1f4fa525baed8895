// descriptor_checks.cpp: the rules of stitch_library.h's descriptors (see descriptor_checks.h).
// Each check returns the first rule a call breaks, in words a stitchc developer can act on.
#include "descriptor_checks.h"

#include <algorithm>
#include <cstring>

namespace stitch::library {

int32_t ErrorSink::fail(int32_t status, const std::string& message) const {
  if (buffer_ == nullptr || size_ == 0) return status;
  const std::string text =
      std::string(routine_) + ": " + message + (note_.empty() ? "" : " (" + note_ + ")");
  const std::size_t length = std::min(text.size(), size_ - 1);
  std::memcpy(buffer_, text.data(), length);
  buffer_[length] = '\0';
  return status;
}

namespace {

std::string str(int64_t value) { return std::to_string(value); }

std::string list(const int64_t* values, int count) {
  std::string text = "[";
  for (int i = 0; i < count; ++i)
    text += (i == 0 ? "" : ", ") + str(values[i]);
  return text + "]";
}

// a * b and a + b that report int64 overflow instead of wrapping.
bool multiply(int64_t a, int64_t b, int64_t* out) { return !__builtin_mul_overflow(a, b, out); }
bool add(int64_t a, int64_t b, int64_t* out) { return !__builtin_add_overflow(a, b, out); }

// Whether the elements a strided batch of row-major matrices touches, (rows - 1) * ld + cols +
// (batch - 1) * stride, fit in int64 (arguments already checked non-negative).
bool extent_fits(int64_t rows, int64_t cols, int64_t ld, int64_t batch, int64_t stride) {
  int64_t rows_part = 0, batch_part = 0, total = 0;
  return multiply(rows - 1, ld, &rows_part) && multiply(batch - 1, stride, &batch_part) &&
         add(rows_part, cols, &total) && add(total, batch_part, &total);
}

bool product_fits(std::initializer_list<int64_t> factors) {
  int64_t product = 1;
  for (int64_t factor : factors)
    if (!multiply(product, factor, &product)) return false;
  return true;
}

} // namespace

// ---- Element types ----

bool dtype_is_known(int32_t dtype) { return dtype_bytes(dtype) != 0; }

std::size_t dtype_bytes(int32_t dtype) {
  switch (dtype) {
  case STITCH_LIBRARY_FLOAT32:
    return 4;
  case STITCH_LIBRARY_FLOAT16:
  case STITCH_LIBRARY_BFLOAT16:
    return 2;
  default:
    return 0;
  }
}

std::string dtype_text(int32_t dtype) {
  switch (dtype) {
  case STITCH_LIBRARY_FLOAT32:
    return "float32";
  case STITCH_LIBRARY_FLOAT16:
    return "float16";
  case STITCH_LIBRARY_BFLOAT16:
    return "bfloat16";
  default:
    return "dtype " + str(dtype);
  }
}

namespace {

// The dtype rules both descriptors share: a known dtype, and TF32 for float32 alone.
std::string check_precision(int32_t dtype, int32_t allow_tf32) {
  if (!dtype_is_known(dtype))
    return "unknown " + dtype_text(dtype) + " (STITCH_LIBRARY_FLOAT32, _FLOAT16 or _BFLOAT16)";
  if (allow_tf32 != 0 && allow_tf32 != 1)
    return "allow_tf32 must be 0 or 1, not " + str(allow_tf32);
  if (allow_tf32 == 1 && dtype != STITCH_LIBRARY_FLOAT32)
    return "allow_tf32 is for float32 operands, not " + dtype_text(dtype);
  return {};
}

} // namespace

// ---- GEMM ----

bool gemm_is_empty(const stitch_gemm_desc& desc) {
  return desc.m == 0 || desc.n == 0 || desc.batch_count == 0;
}

bool gemm_reads_c(const stitch_gemm_desc& desc) { return desc.beta != 0.0f; }

std::string describe_gemm(const stitch_gemm_desc& desc) {
  return "m=" + str(desc.m) + " n=" + str(desc.n) + " k=" + str(desc.k) +
         " trans_a=" + str(desc.trans_a) + " trans_b=" + str(desc.trans_b) +
         " lda=" + str(desc.lda) + " ldb=" + str(desc.ldb) + " ldc=" + str(desc.ldc) +
         " ldd=" + str(desc.ldd) + " batch_count=" + str(desc.batch_count) +
         " strides=" + str(desc.stride_a) + "/" + str(desc.stride_b) + "/" + str(desc.stride_c) +
         "/" + str(desc.stride_d) + " epilogue=" + str(desc.epilogue) +
         " allow_tf32=" + str(desc.allow_tf32) + " " + dtype_text(desc.dtype);
}

std::string check_gemm(const stitch_gemm_desc* desc, const void* a, const void* b, const void* c,
                       const void* d) {
  if (desc == nullptr) return "null GEMM descriptor";
  const stitch_gemm_desc& g = *desc;
  if (g.trans_a != 0 && g.trans_a != 1) return "trans_a must be 0 or 1, not " + str(g.trans_a);
  if (g.trans_b != 0 && g.trans_b != 1) return "trans_b must be 0 or 1, not " + str(g.trans_b);
  if (std::string problem = check_precision(g.dtype, g.allow_tf32); !problem.empty())
    return problem;
  if (g.epilogue != STITCH_GEMM_EPILOGUE_NONE && g.epilogue != STITCH_GEMM_EPILOGUE_RELU &&
      g.epilogue != STITCH_GEMM_EPILOGUE_GELU_TANH)
    return "unknown epilogue " + str(g.epilogue);
  if (g.m < 0 || g.n < 0 || g.batch_count < 0)
    return "negative m, n or batch_count (" + describe_gemm(g) + ")";
  if (g.k < 0) return "negative k (" + describe_gemm(g) + ")";
  if (gemm_is_empty(g)) return {};

  // K = 0 (an empty sum: D = act(beta * C + bias)) reads neither A nor B.
  if ((g.k > 0 && (a == nullptr || b == nullptr)) || d == nullptr)
    return "A, B and D must not be null";
  const bool reads_c = gemm_reads_c(g);
  if (reads_c && c == nullptr) return "beta is nonzero but C is null";

  const int64_t a_rows = g.trans_a ? g.k : g.m, a_cols = g.trans_a ? g.m : g.k;
  const int64_t b_rows = g.trans_b ? g.n : g.k, b_cols = g.trans_b ? g.k : g.n;
  if (g.lda < a_cols)
    return "lda " + str(g.lda) + " is less than A's stored row length " + str(a_cols) + " (" +
           describe_gemm(g) + ")";
  if (g.ldb < b_cols)
    return "ldb " + str(g.ldb) + " is less than B's stored row length " + str(b_cols) + " (" +
           describe_gemm(g) + ")";
  if (g.ldd < g.n)
    return "ldd " + str(g.ldd) + " is less than n " + str(g.n) + " (" + describe_gemm(g) + ")";
  if (reads_c && g.ldc < g.n)
    return "ldc " + str(g.ldc) + " is less than n " + str(g.n) + " (" + describe_gemm(g) + ")";

  if (g.stride_a < 0 || g.stride_b < 0 || g.stride_c < 0 || g.stride_d < 0)
    return "negative batch stride (" + describe_gemm(g) + ")";
  if (!extent_fits(a_rows, a_cols, g.lda, g.batch_count, g.stride_a) ||
      !extent_fits(b_rows, b_cols, g.ldb, g.batch_count, g.stride_b) ||
      !extent_fits(g.m, g.n, g.ldd, g.batch_count, g.stride_d) ||
      (reads_c && !extent_fits(g.m, g.n, g.ldc, g.batch_count, g.stride_c)))
    return "operand extents overflow int64 (" + describe_gemm(g) + ")";
  // D's batches must not share an element: each batch after the whole previous one, or (as a
  // transposed result is written) the batches side by side within each row's ldd.
  const bool consecutive = g.stride_d >= (g.m - 1) * g.ldd + g.n;
  const bool side_by_side = g.stride_d >= g.n && (g.batch_count - 1) * g.stride_d + g.n <= g.ldd;
  if (g.batch_count > 1 && !consecutive && !side_by_side)
    return "stride_d " + str(g.stride_d) + " makes the batches of D overlap (" + describe_gemm(g) +
           ")";
  if (reads_c && c == d && (g.ldc != g.ldd || (g.batch_count > 1 && g.stride_c != g.stride_d)))
    return "C is D but ldc/stride_c differ from ldd/stride_d (" + describe_gemm(g) + ")";
  return {};
}

// ---- Convolution ----

ConvGeometry conv_geometry(const stitch_conv_desc& desc) {
  ConvGeometry geometry;
  geometry.batch = desc.batch;
  geometry.in_channels = desc.in_channels;
  geometry.out_channels = desc.out_channels;
  geometry.groups = desc.groups;
  const int offset = kSpatial - desc.spatial_rank;
  for (int i = 0; i < desc.spatial_rank; ++i) {
    geometry.in[offset + i] = desc.in_spatial[i];
    geometry.out[offset + i] = desc.out_spatial[i];
    geometry.kernel[offset + i] = desc.kernel[i];
    geometry.stride[offset + i] = desc.strides[i];
    geometry.dilation[offset + i] = desc.dilations[i];
    geometry.pad[offset + i] = desc.pads_begin[i];
  }
  return geometry;
}

std::string describe_conv(ConvDirection direction, const stitch_conv_desc& desc) {
  const int rank = std::clamp(desc.spatial_rank, 0, kSpatial);
  return std::string(direction == ConvDirection::Forward ? "conv" : "conv transpose") + " (" +
         dtype_text(desc.dtype) + ", " + str(desc.spatial_rank) + "-D, batch " + str(desc.batch) +
         ", channels " + str(desc.in_channels) + " -> " + str(desc.out_channels) + ", groups " +
         str(desc.groups) + ", in " + list(desc.in_spatial, rank) + ", out " +
         list(desc.out_spatial, rank) + ", kernel " + list(desc.kernel, rank) + ", strides " +
         list(desc.strides, rank) + ", dilations " + list(desc.dilations, rank) + ", pads " +
         list(desc.pads_begin, rank) + "/" + list(desc.pads_end, rank) +
         (desc.channels_last != 0 ? ", channels-last" : "") + ")";
}

std::string check_conv(ConvDirection direction, const stitch_conv_desc* desc, const void* x,
                       const void* w, const void* y) {
  if (desc == nullptr) return "null convolution descriptor";
  const stitch_conv_desc& c = *desc;
  if (c.spatial_rank < 1 || c.spatial_rank > kSpatial)
    return "spatial_rank must be 1, 2 or 3, not " + str(c.spatial_rank);
  const std::string where = " in " + describe_conv(direction, c);
  if (std::string problem = check_precision(c.dtype, c.allow_tf32); !problem.empty())
    return problem + where;
  if (c.batch < 0) return "negative batch" + where;
  if (c.in_channels < 1 || c.out_channels < 1 || c.groups < 1)
    return "channel counts and groups must be at least 1" + where;
  if (c.in_channels % c.groups != 0 || c.out_channels % c.groups != 0)
    return "groups must divide both channel counts" + where;
  if (c.channels_last != 0 && c.channels_last != 1)
    return "channels_last must be 0 or 1, not " + str(c.channels_last) + where;

  for (int i = 0; i < c.spatial_rank; ++i) {
    const std::string dim = " (spatial dim " + str(i) + ")";
    if (c.in_spatial[i] < 1 || c.out_spatial[i] < 1 || c.kernel[i] < 1)
      return "sizes must be at least 1" + dim + where;
    if (c.strides[i] < 1 || c.dilations[i] < 1)
      return "strides and dilations must be at least 1" + dim + where;
    if (c.pads_begin[i] < 0 || c.pads_end[i] < 0) return "negative pad" + dim + where;
    if (c.pads_begin[i] != c.pads_end[i])
      return "pads_begin must equal pads_end (callers handle asymmetric pads)" + dim + where;

    int64_t span = 0, padded = 0;
    if (!multiply(c.dilations[i], c.kernel[i] - 1, &span) || !add(span, 1, &span) ||
        !multiply(c.pads_begin[i], 2, &padded) || !add(padded, c.in_spatial[i], &padded))
      return "spatial sizes overflow int64" + dim + where;
    if (direction == ConvDirection::Forward) {
      if (padded < span)
        return "the dilated kernel (" + str(span) + ") is larger than the padded input (" +
               str(padded) + ")" + dim + where;
      const int64_t expected = (padded - span) / c.strides[i] + 1;
      if (c.out_spatial[i] != expected)
        return "out_spatial is " + str(c.out_spatial[i]) + " but the geometry gives " +
               str(expected) + dim + where;
    } else {
      int64_t base = 0;
      if (!multiply(c.in_spatial[i] - 1, c.strides[i], &base) || !add(base, span, &base))
        return "spatial sizes overflow int64" + dim + where;
      base -= 2 * c.pads_begin[i];
      const int64_t output_padding = c.out_spatial[i] - base;
      if (base < 1 || output_padding < 0 || output_padding >= c.strides[i])
        return "out_spatial " + str(c.out_spatial[i]) + " needs output padding " +
               str(output_padding) + ", which must be in [0, stride) with a positive base size " +
               str(base) + dim + where;
    }
  }

  if (c.batch == 0) return {};
  if (x == nullptr || w == nullptr || y == nullptr) return "X, W and Y must not be null" + where;
  const ConvGeometry g = conv_geometry(c);
  if (!product_fits({g.batch, g.in_channels, g.in[0], g.in[1], g.in[2]}) ||
      !product_fits({g.batch, g.out_channels, g.out[0], g.out[1], g.out[2]}) ||
      !product_fits({g.in_channels, g.out_channels, g.kernel[0], g.kernel[1], g.kernel[2]}))
    return "tensor sizes overflow int64" + where;
  return {};
}

std::string check_conv_epilogue(const stitch_conv_desc& desc, const void* bias, const void* z,
                                const void* y) {
  if (desc.batch == 0) return {};
  if (bias == nullptr)
    return "a convolution with an epilogue needs its bias in " +
           describe_conv(ConvDirection::Forward, desc);
  if (z == nullptr) return {};
  const ConvGeometry g = conv_geometry(desc);
  const int64_t elements = g.batch * g.out_channels * g.out_positions();
  const auto begin = [](const void* p) { return reinterpret_cast<uintptr_t>(p); };
  const uintptr_t bytes = static_cast<uintptr_t>(elements) * dtype_bytes(desc.dtype);
  if (begin(z) < begin(y) + bytes && begin(y) < begin(z) + bytes)
    return "the residual Z overlaps Y in " + describe_conv(ConvDirection::Forward, desc);
  return {};
}

} // namespace stitch::library
