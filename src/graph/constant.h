// Reading and writing the values of constant tensors on the host: used by shape rules that
// need an input's value (Reshape's shape, Slice's starts) and by constant folding.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "graph/graph.h"

namespace stitch {

// Every element converted to int64 / double (bool as 0/1, floats truncated toward zero for
// int64). The tensor must be constant.
std::vector<int64_t> constant_as_int64(const Tensor& t);
std::vector<double> constant_as_double(const Tensor& t);

// Bytes for `values` stored as `dtype` (values are converted as by a C cast; float16 and
// bfloat16 round to nearest even).
std::shared_ptr<const ConstantData> make_constant_from_int64(DType dtype,
                                                             const std::vector<int64_t>& values);
std::shared_ptr<const ConstantData> make_constant_from_double(DType dtype,
                                                              const std::vector<double>& values);

// Makes `t` the constant int64 list of `shape` (a Reshape's or Expand's target, made by a
// pass): its values at the graph's planning binding and, where the shape depends on symbolic
// dims, their expressions (Tensor::sym_values), so that the target stays symbolic.
void set_shape_value(const Graph& graph, Tensor& t, const SymShape& shape);

// The bytes of a row-major tensor of `shape` (elements of `size` bytes) transposed by `perm`:
// axis j of the result is axis perm[j] of the source.
std::string transpose_bytes(const std::string& bytes, const Shape& shape,
                            const std::vector<int64_t>& perm, size_t size);

// `rows` rows of `row` bytes each, each followed by zero bytes up to `padded` (>= row) bytes.
std::string zero_padded_rows(const std::string& bytes, int64_t rows, size_t row, size_t padded);

float half_to_float(uint16_t h);
uint16_t float_to_half(float f);
float bfloat16_to_float(uint16_t b);
uint16_t float_to_bfloat16(float f);

} // namespace stitch
