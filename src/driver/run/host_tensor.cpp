// Element types and host tensors: one table of dtype facts, index formatting, value
// summaries and the 16-bit float conversions (written out here so the tool needs no CUDA
// headers).
#include "driver/run/host_tensor.h"

#include <fmt/format.h>

#include <cmath>
#include <cstring>
#include <limits>

namespace stitch::run {

namespace {

constexpr uint64_t kMaxCount = uint64_t{1} << 62;

// One row per element type of stitch.h.
struct DtypeFacts {
  stitch_dtype dtype;
  const char* name;
  size_t size;
  bool floating;
};

constexpr DtypeFacts kDtypes[] = {
    {STITCH_FLOAT32, "float32", 4, true},   {STITCH_UINT8, "uint8", 1, false},
    {STITCH_INT8, "int8", 1, false},        {STITCH_UINT16, "uint16", 2, false},
    {STITCH_INT16, "int16", 2, false},      {STITCH_INT32, "int32", 4, false},
    {STITCH_INT64, "int64", 8, false},      {STITCH_BOOL, "bool", 1, false},
    {STITCH_FLOAT16, "float16", 2, true},   {STITCH_FLOAT64, "float64", 8, true},
    {STITCH_UINT32, "uint32", 4, false},    {STITCH_UINT64, "uint64", 8, false},
    {STITCH_BFLOAT16, "bfloat16", 2, true},
};

const DtypeFacts* find_dtype(int dtype) {
  for (const DtypeFacts& facts : kDtypes) {
    if (facts.dtype == dtype) return &facts;
  }
  return nullptr;
}

template <typename T> T load(const uint8_t* data, uint64_t index) {
  T value;
  std::memcpy(&value, data + index * sizeof(T), sizeof(T));
  return value;
}

uint32_t float_bits(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, 4);
  return bits;
}

float bits_float(uint32_t bits) {
  float value;
  std::memcpy(&value, &bits, 4);
  return value;
}

} // namespace

uint64_t HostTensor::element_count() const {
  uint64_t count = 1;
  for (int64_t dim : dims)
    count *= static_cast<uint64_t>(dim);
  return count;
}

bool is_known_dtype(int dtype) { return find_dtype(dtype) != nullptr; }

size_t dtype_size(stitch_dtype dtype) {
  const DtypeFacts* facts = find_dtype(dtype);
  return facts != nullptr ? facts->size : 0;
}

std::string dtype_name(stitch_dtype dtype) {
  const DtypeFacts* facts = find_dtype(dtype);
  if (facts == nullptr) return fmt::format("dtype {}", static_cast<int>(dtype));
  return facts->name;
}

bool is_floating_dtype(stitch_dtype dtype) {
  const DtypeFacts* facts = find_dtype(dtype);
  return facts != nullptr && facts->floating;
}

bool checked_element_count(const std::vector<int64_t>& dims, size_t element_size,
                           uint64_t* out_count) {
  uint64_t count = 1;
  for (int64_t dim : dims) {
    if (dim < 0) return false;
    if (dim != 0 && count > kMaxCount / static_cast<uint64_t>(dim)) return false;
    count *= static_cast<uint64_t>(dim);
  }
  if (element_size != 0 && count > kMaxCount / element_size) return false;
  *out_count = count;
  return true;
}

std::string describe_type(stitch_dtype dtype, const std::vector<int64_t>& dims) {
  return fmt::format("{}[{}]", dtype_name(dtype), fmt::join(dims, ","));
}

std::string describe_tensor(const HostTensor& tensor) {
  return describe_type(tensor.dtype, tensor.dims);
}

std::string format_index(const std::vector<int64_t>& dims, uint64_t flat_index) {
  std::vector<uint64_t> index(dims.size(), 0);
  for (size_t axis = dims.size(); axis-- > 0;) {
    uint64_t extent = static_cast<uint64_t>(dims[axis]);
    if (extent == 0) break;
    index[axis] = flat_index % extent;
    flat_index /= extent;
  }
  return fmt::format("[{}]", fmt::join(index, ","));
}

std::string summarize_values(const HostTensor& tensor) {
  uint64_t count = tensor.element_count();
  if (count == 0) return "empty";
  if (tensor.dtype == STITCH_BOOL) {
    uint64_t true_count = 0;
    for (uint64_t i = 0; i < count; ++i)
      true_count += tensor.bytes[i] != 0 ? 1 : 0;
    return fmt::format("{} of {} true", true_count, count);
  }
  double low = std::numeric_limits<double>::infinity();
  double high = -low;
  double sum = 0.0;
  uint64_t finite = 0, nan = 0, inf = 0, first_nan = 0, first_inf = 0;
  for (uint64_t i = 0; i < count; ++i) {
    double value = element_as_double(tensor, i);
    if (std::isnan(value)) {
      if (nan++ == 0) first_nan = i;
      continue;
    }
    if (std::isinf(value)) {
      if (inf++ == 0) first_inf = i;
      continue;
    }
    low = std::min(low, value);
    high = std::max(high, value);
    sum += value;
    ++finite;
  }
  std::string summary = finite == 0 ? "no finite values"
                                    : fmt::format("min {:.6g} max {:.6g} mean {:.6g}", low, high,
                                                  sum / static_cast<double>(finite));
  if (nan > 0)
    summary += fmt::format(", {} NaN (first at {})", nan, format_index(tensor.dims, first_nan));
  if (inf > 0)
    summary += fmt::format(", {} inf (first at {})", inf, format_index(tensor.dims, first_inf));
  return summary;
}

float half_to_float(uint16_t bits) {
  uint32_t sign = static_cast<uint32_t>(bits & 0x8000u) << 16;
  uint32_t exponent = (bits >> 10) & 0x1fu;
  uint32_t mantissa = bits & 0x3ffu;
  if (exponent == 0x1f) return bits_float(sign | 0x7f800000u | (mantissa << 13));
  if (exponent != 0) return bits_float(sign | ((exponent + 112) << 23) | (mantissa << 13));
  // Zero or subnormal: mantissa * 2^-24.
  float magnitude = static_cast<float>(mantissa) * 5.9604644775390625e-8f;
  return sign != 0 ? -magnitude : magnitude;
}

uint16_t float_to_half(float value) {
  uint32_t bits = float_bits(value);
  uint16_t sign = static_cast<uint16_t>((bits >> 16) & 0x8000u);
  uint32_t magnitude = bits & 0x7fffffffu;
  if (magnitude > 0x7f800000u) return static_cast<uint16_t>(sign | 0x7e00u);  // NaN
  if (magnitude >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u); // rounds to inf
  if (magnitude < 0x38800000u) {
    // A half subnormal (or zero): round magnitude / 2^-24 to nearest even.
    float scaled = bits_float(magnitude) * 16777216.0f; // exact: a power of two
    uint32_t whole = static_cast<uint32_t>(scaled);
    float rest = scaled - static_cast<float>(whole);
    if (rest > 0.5f || (rest == 0.5f && (whole & 1u) != 0)) ++whole;
    return static_cast<uint16_t>(sign | whole);
  }
  uint32_t rounded = magnitude + 0xfffu + ((magnitude >> 13) & 1u);
  return static_cast<uint16_t>(sign | ((rounded - 0x38000000u) >> 13));
}

float bfloat16_to_float(uint16_t bits) { return bits_float(static_cast<uint32_t>(bits) << 16); }

uint16_t float_to_bfloat16(float value) {
  uint32_t bits = float_bits(value);
  if ((bits & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((bits >> 16) | 0x40u);
  uint32_t rounded = bits + 0x7fffu + ((bits >> 16) & 1u);
  return static_cast<uint16_t>(rounded >> 16);
}

double element_as_double(const HostTensor& tensor, uint64_t index) {
  const uint8_t* data = tensor.bytes.data();
  switch (tensor.dtype) {
  case STITCH_FLOAT32:
    return load<float>(data, index);
  case STITCH_FLOAT64:
    return load<double>(data, index);
  case STITCH_FLOAT16:
    return half_to_float(load<uint16_t>(data, index));
  case STITCH_BFLOAT16:
    return bfloat16_to_float(load<uint16_t>(data, index));
  case STITCH_UINT8:
    return load<uint8_t>(data, index);
  case STITCH_INT8:
    return load<int8_t>(data, index);
  case STITCH_UINT16:
    return load<uint16_t>(data, index);
  case STITCH_INT16:
    return load<int16_t>(data, index);
  case STITCH_INT32:
    return load<int32_t>(data, index);
  case STITCH_UINT32:
    return load<uint32_t>(data, index);
  case STITCH_INT64:
    return static_cast<double>(load<int64_t>(data, index));
  case STITCH_UINT64:
    return static_cast<double>(load<uint64_t>(data, index));
  case STITCH_BOOL:
    return data[index] != 0 ? 1.0 : 0.0;
  }
  return 0.0;
}

} // namespace stitch::run
