// Host conversions between stored constant bytes and int64/double values.
#include "graph/constant.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>

#include "graph/error.h"

namespace stitch {

float half_to_float(uint16_t h) {
  uint32_t sign = (h >> 15) & 1, exp = (h >> 10) & 0x1f, mant = h & 0x3ff;
  float v;
  if (exp == 0)
    v = std::ldexp(static_cast<float>(mant), -24);
  else if (exp == 31)
    v = mant ? NAN : INFINITY;
  else
    v = std::ldexp(static_cast<float>(mant | 0x400), static_cast<int>(exp) - 25);
  return sign ? -v : v;
}

uint16_t float_to_half(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  uint16_t sign = static_cast<uint16_t>((x >> 16) & 0x8000);
  if (std::isnan(f)) return sign | 0x7e00;
  float a = std::fabs(f);
  if (a >= 65520.0f) return sign | 0x7c00; // rounds to infinity
  if (a < std::ldexp(1.0f, -14)) {         // subnormal: multiple of 2^-24, round half even
    float q = std::nearbyint(a * 16777216.0f);
    return sign | static_cast<uint16_t>(q);
  }
  int e;
  float m = std::frexp(a, &e);                // a = m * 2^e, m in [0.5,1)
  float scaled = std::nearbyint(m * 2048.0f); // 11 significant bits
  if (scaled >= 2048.0f) {
    scaled /= 2;
    ++e;
  }
  uint16_t exp = static_cast<uint16_t>(e - 1 + 15);
  return sign | static_cast<uint16_t>(exp << 10) | (static_cast<uint16_t>(scaled) & 0x3ff);
}

float bfloat16_to_float(uint16_t b) {
  uint32_t x = static_cast<uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &x, 4);
  return f;
}

uint16_t float_to_bfloat16(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  if (std::isnan(f)) return static_cast<uint16_t>((x >> 16) | 0x40);
  uint32_t rounding = 0x7fff + ((x >> 16) & 1);
  return static_cast<uint16_t>((x + rounding) >> 16);
}

namespace {

template <typename T> T load(const char* p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  return v;
}

template <typename Out> std::vector<Out> convert_all(const Tensor& t) {
  STITCH_INTERNAL_CHECK(t.constant != nullptr, "tensor '{}' is not constant", t.name);
  int64_t n = t.elements();
  int size = dtype_size(t.dtype);
  STITCH_INTERNAL_CHECK(static_cast<int64_t>(t.constant->bytes.size()) == n * size,
                        "constant '{}' holds {} bytes, expected {}", t.name,
                        t.constant->bytes.size(), n * size);
  std::vector<Out> out(static_cast<size_t>(n));
  const char* p = t.constant->bytes.data();
  for (int64_t i = 0; i < n; ++i, p += size) {
    switch (t.dtype) {
    case DType::Float32:
      out[i] = static_cast<Out>(load<float>(p));
      break;
    case DType::Float64:
      out[i] = static_cast<Out>(load<double>(p));
      break;
    case DType::Float16:
      out[i] = static_cast<Out>(half_to_float(load<uint16_t>(p)));
      break;
    case DType::BFloat16:
      out[i] = static_cast<Out>(bfloat16_to_float(load<uint16_t>(p)));
      break;
    case DType::Int64:
      out[i] = static_cast<Out>(load<int64_t>(p));
      break;
    case DType::Int32:
      out[i] = static_cast<Out>(load<int32_t>(p));
      break;
    case DType::Int16:
      out[i] = static_cast<Out>(load<int16_t>(p));
      break;
    case DType::Int8:
      out[i] = static_cast<Out>(load<int8_t>(p));
      break;
    case DType::UInt64:
      out[i] = static_cast<Out>(load<uint64_t>(p));
      break;
    case DType::UInt32:
      out[i] = static_cast<Out>(load<uint32_t>(p));
      break;
    case DType::UInt16:
      out[i] = static_cast<Out>(load<uint16_t>(p));
      break;
    case DType::UInt8:
      out[i] = static_cast<Out>(load<uint8_t>(p));
      break;
    case DType::Bool:
      out[i] = static_cast<Out>(load<uint8_t>(p) != 0);
      break;
    }
  }
  return out;
}

// A C-style cast that saturates instead of invoking UB for out-of-range floats.
template <typename T> T cast_double(double v) {
  if constexpr (std::is_floating_point_v<T>) {
    return static_cast<T>(v);
  } else {
    if (std::isnan(v)) return T(0);
    if (v <= static_cast<double>(std::numeric_limits<T>::lowest()))
      return std::numeric_limits<T>::lowest();
    if (v >= static_cast<double>(std::numeric_limits<T>::max()))
      return std::numeric_limits<T>::max();
    return static_cast<T>(v);
  }
}

template <typename T> void store(std::string& out, size_t i, T v) {
  std::memcpy(out.data() + i * sizeof(T), &v, sizeof(T));
}

// Integer sources wrap like a C cast; floating sources saturate.
template <typename T, typename In> T convert_to(In v) {
  if constexpr (std::is_integral_v<In>)
    return static_cast<T>(v);
  else
    return cast_double<T>(static_cast<double>(v));
}

template <typename In>
std::shared_ptr<const ConstantData> build(DType dtype, const std::vector<In>& values) {
  auto data = std::make_shared<ConstantData>();
  data->bytes.resize(values.size() * dtype_size(dtype));
  std::string& b = data->bytes;
  for (size_t i = 0; i < values.size(); ++i) {
    In v = values[i];
    switch (dtype) {
    case DType::Float32:
      store(b, i, static_cast<float>(v));
      break;
    case DType::Float64:
      store(b, i, static_cast<double>(v));
      break;
    case DType::Float16:
      store(b, i, float_to_half(static_cast<float>(v)));
      break;
    case DType::BFloat16:
      store(b, i, float_to_bfloat16(static_cast<float>(v)));
      break;
    case DType::Int64:
      store(b, i, convert_to<int64_t>(v));
      break;
    case DType::Int32:
      store(b, i, convert_to<int32_t>(v));
      break;
    case DType::Int16:
      store(b, i, convert_to<int16_t>(v));
      break;
    case DType::Int8:
      store(b, i, convert_to<int8_t>(v));
      break;
    case DType::UInt64:
      store(b, i, convert_to<uint64_t>(v));
      break;
    case DType::UInt32:
      store(b, i, convert_to<uint32_t>(v));
      break;
    case DType::UInt16:
      store(b, i, convert_to<uint16_t>(v));
      break;
    case DType::UInt8:
      store(b, i, convert_to<uint8_t>(v));
      break;
    case DType::Bool:
      store(b, i, static_cast<uint8_t>(v != In(0)));
      break;
    }
  }
  return data;
}

} // namespace

std::vector<int64_t> constant_as_int64(const Tensor& t) {
  if (dtype_is_float(t.dtype)) {
    std::vector<double> d = convert_all<double>(t);
    std::vector<int64_t> out(d.size());
    for (size_t i = 0; i < d.size(); ++i)
      out[i] = cast_double<int64_t>(d[i]);
    return out;
  }
  return convert_all<int64_t>(t);
}

std::vector<double> constant_as_double(const Tensor& t) { return convert_all<double>(t); }

std::shared_ptr<const ConstantData> make_constant_from_int64(DType dtype,
                                                             const std::vector<int64_t>& values) {
  return build(dtype, values);
}

std::shared_ptr<const ConstantData> make_constant_from_double(DType dtype,
                                                              const std::vector<double>& values) {
  return build(dtype, values);
}

void set_shape_value(const Graph& graph, Tensor& t, const SymShape& shape) {
  const std::vector<int64_t> values = graph.planning_shape(shape);
  t.dtype = DType::Int64;
  t.shape = {static_cast<int64_t>(shape.size())};
  t.dims.clear();
  t.typed = true;
  t.constant = make_constant_from_int64(DType::Int64, values);
  t.sym_values = is_static(shape) ? std::vector<DimExpr>{} : shape;
}

// The bytes of a row-major tensor of `shape` (elements of `size` bytes) transposed by `perm`
// (axis j of the result is axis perm[j] of the source).
std::string transpose_bytes(const std::string& bytes, const Shape& shape,
                            const std::vector<int64_t>& perm, size_t size) {
  const Shape source_strides = row_major_strides(shape);
  Shape out_shape;
  for (int64_t axis : perm)
    out_shape.push_back(shape[static_cast<size_t>(axis)]);
  const int64_t elements = shape_elements(shape);
  std::string out(bytes.size(), '\0');
  std::vector<int64_t> index(out_shape.size(), 0);
  for (int64_t e = 0; e < elements; ++e) {
    int64_t from = 0;
    for (size_t j = 0; j < index.size(); ++j)
      from += index[j] * source_strides[static_cast<size_t>(perm[j])];
    out.replace(static_cast<size_t>(e) * size, size, bytes, static_cast<size_t>(from) * size, size);
    for (size_t j = index.size(); j-- > 0;) {
      if (++index[j] < out_shape[j]) break;
      index[j] = 0;
    }
  }
  return out;
}

std::string zero_padded_rows(const std::string& bytes, int64_t rows, size_t row, size_t padded) {
  std::string out(static_cast<size_t>(rows) * padded, '\0');
  for (int64_t r = 0; r < rows; ++r)
    out.replace(static_cast<size_t>(r) * padded, row, bytes, static_cast<size_t>(r) * row, row);
  return out;
}

} // namespace stitch
