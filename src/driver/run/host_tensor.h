// HostTensor: a tensor in host memory as stitch-run reads it from a file, makes it at random,
// or copies it back from a model — an element type, dims, and little-endian bytes in C order.
// Also the facts about stitch_dtype the tool needs: element sizes, names, which types are
// floating point, and the float16 / bfloat16 conversions.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "stitch/stitch.h"

namespace stitch::run {

struct HostTensor {
  stitch_dtype dtype = STITCH_FLOAT32;
  std::vector<int64_t> dims;
  std::vector<uint8_t> bytes; // element_count(dims) * dtype_size(dtype) bytes

  uint64_t element_count() const;
};

// True for the element types stitch.h names.
bool is_known_dtype(int dtype);
// Bytes per element; 0 for an unknown type.
size_t dtype_size(stitch_dtype dtype);
// "float32", "int64", "bool", ...; "dtype N" for an unknown type.
std::string dtype_name(stitch_dtype dtype);
bool is_floating_dtype(stitch_dtype dtype);

// The number of elements of `dims`, or nothing if a dim is negative or the count (or the
// count times `element_size`) overflows 2^62.
bool checked_element_count(const std::vector<int64_t>& dims, size_t element_size,
                           uint64_t* out_count);

// "float32[2,3]"; a scalar is "float32[]".
std::string describe_type(stitch_dtype dtype, const std::vector<int64_t>& dims);
std::string describe_tensor(const HostTensor& tensor);
// "[1,2]": the multi-dimensional index of element `flat_index` of a C-order tensor.
std::string format_index(const std::vector<int64_t>& dims, uint64_t flat_index);

// A one-line look at the values: min, max and mean (floats also count NaN and inf and say
// where the first of each is), or the number of true elements of a bool tensor.
std::string summarize_values(const HostTensor& tensor);

float half_to_float(uint16_t bits);
uint16_t float_to_half(float value); // round to nearest even; NaN stays NaN
float bfloat16_to_float(uint16_t bits);
uint16_t float_to_bfloat16(float value); // round to nearest even; NaN stays NaN

// Element `index` of `tensor` as a double (bool as 0/1). Integers beyond 2^53 lose precision;
// use only for reporting and float comparison.
double element_as_double(const HostTensor& tensor, uint64_t index);

} // namespace stitch::run
