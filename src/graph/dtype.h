// Element types of stitchc tensors, with their sizes, names and ONNX codes.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace stitch {

// X(enumerator, name, bytes, onnx TensorProto.DataType code, is_float, is_signed_int)
#define STITCH_FOR_EACH_DTYPE(X)                                                                   \
  X(Float32, "float32", 4, 1, true, false)                                                         \
  X(Float16, "float16", 2, 10, true, false)                                                        \
  X(BFloat16, "bfloat16", 2, 16, true, false)                                                      \
  X(Float64, "float64", 8, 11, true, false)                                                        \
  X(Int64, "int64", 8, 7, false, true)                                                             \
  X(Int32, "int32", 4, 6, false, true)                                                             \
  X(Int16, "int16", 2, 5, false, true)                                                             \
  X(Int8, "int8", 1, 3, false, true)                                                               \
  X(UInt64, "uint64", 8, 13, false, false)                                                         \
  X(UInt32, "uint32", 4, 12, false, false)                                                         \
  X(UInt16, "uint16", 2, 4, false, false)                                                          \
  X(UInt8, "uint8", 1, 2, false, false)                                                            \
  X(Bool, "bool", 1, 9, false, false)

enum class DType : uint8_t {
#define STITCH_DTYPE_ENUM(e, name, bytes, code, f, s) e,
  STITCH_FOR_EACH_DTYPE(STITCH_DTYPE_ENUM)
#undef STITCH_DTYPE_ENUM
};

int dtype_size(DType t);
std::string_view dtype_name(DType t);
int dtype_onnx_code(DType t);
bool dtype_is_float(DType t);
bool dtype_is_signed_int(DType t);
bool dtype_is_integer(DType t); // signed or unsigned integer, not bool
// The type a reduction or a sum over elements of `t` accumulates in: float32 for float32,
// float16 and bfloat16; float64 for float64; uint64 for unsigned integers; int64 otherwise.
DType accumulator_dtype(DType t);

// The dtype for an ONNX TensorProto.DataType code, or nullopt when stitchc has none.
std::optional<DType> dtype_from_onnx(int code);
// The ONNX spelling of any data type code ("FLOAT8E4M3FN", "STRING", ...) for messages.
std::string onnx_dtype_code_name(int code);
std::optional<DType> dtype_from_name(std::string_view name);

} // namespace stitch
