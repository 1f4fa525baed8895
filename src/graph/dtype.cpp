// The dtype table's accessors.
#include "graph/dtype.h"

#include <fmt/format.h>

namespace stitch {

namespace {
struct DTypeInfo {
  std::string_view name;
  int bytes;
  int onnx_code;
  bool is_float;
  bool is_signed_int;
};

constexpr DTypeInfo kInfo[] = {
#define STITCH_DTYPE_INFO(e, name, bytes, code, f, s) {name, bytes, code, f, s},
    STITCH_FOR_EACH_DTYPE(STITCH_DTYPE_INFO)
#undef STITCH_DTYPE_INFO
};

const DTypeInfo& info(DType t) { return kInfo[static_cast<int>(t)]; }
} // namespace

int dtype_size(DType t) { return info(t).bytes; }
std::string_view dtype_name(DType t) { return info(t).name; }
int dtype_onnx_code(DType t) { return info(t).onnx_code; }
bool dtype_is_float(DType t) { return info(t).is_float; }
bool dtype_is_signed_int(DType t) { return info(t).is_signed_int; }
bool dtype_is_integer(DType t) {
  return info(t).is_signed_int || t == DType::UInt8 || t == DType::UInt16 || t == DType::UInt32 ||
         t == DType::UInt64;
}

std::optional<DType> dtype_from_onnx(int code) {
  for (size_t i = 0; i < std::size(kInfo); ++i)
    if (kInfo[i].onnx_code == code) return static_cast<DType>(i);
  return std::nullopt;
}

std::optional<DType> dtype_from_name(std::string_view name) {
  for (size_t i = 0; i < std::size(kInfo); ++i)
    if (kInfo[i].name == name) return static_cast<DType>(i);
  return std::nullopt;
}

std::string onnx_dtype_code_name(int code) {
  static constexpr std::string_view kNames[] = {
      "UNDEFINED",      "FLOAT",    "UINT8",        "INT8",           "UINT16",
      "INT16",          "INT32",    "INT64",        "STRING",         "BOOL",
      "FLOAT16",        "DOUBLE",   "UINT32",       "UINT64",         "COMPLEX64",
      "COMPLEX128",     "BFLOAT16", "FLOAT8E4M3FN", "FLOAT8E4M3FNUZ", "FLOAT8E5M2",
      "FLOAT8E5M2FNUZ", "UINT4",    "INT4",         "FLOAT4E2M1",     "FLOAT8E8M0",
      "UINT2",          "INT2"};
  if (code >= 0 && code < static_cast<int>(std::size(kNames))) return std::string(kNames[code]);
  return fmt::format("data type {}", code);
}

DType accumulator_dtype(DType t) {
  switch (t) {
  case DType::Float32:
  case DType::Float16:
  case DType::BFloat16:
    return DType::Float32;
  case DType::Float64:
    return DType::Float64;
  case DType::UInt8:
  case DType::UInt16:
  case DType::UInt32:
  case DType::UInt64:
    return DType::UInt64;
  default:
    return DType::Int64;
  }
}

} // namespace stitch
