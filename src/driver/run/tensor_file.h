// Tensor files stitch-run reads: serialized ONNX TensorProto (.pb, as in the ONNX test-data
// folders input_N.pb / output_N.pb) and .npy. A TensorProto may hold its values in raw_data
// or in the typed field ONNX assigns to its data type (float_data, int32_data, int64_data,
// double_data, uint64_data; float16 and bfloat16 as 16-bit patterns in int32_data, 0 to
// 65535); strings, external data and segments are refused.
#pragma once

#include <string>
#include <string_view>

#include "driver/run/host_tensor.h"

namespace stitch::run {

struct NamedTensor {
  std::string name; // the TensorProto's name; "" for .npy files and unnamed protos
  HostTensor tensor;
};

// Parses a serialized TensorProto; `source` names it in error messages.
NamedTensor parse_tensor_proto(std::string_view file_bytes, const std::string& source);
NamedTensor read_tensor_proto(const std::string& path);

// Reads a .npy or .pb file, chosen by the file's extension.
HostTensor read_tensor_file(const std::string& path);

// The whole file at `path`, refusing non-regular files and files over `max_bytes`.
std::string read_whole_file(const std::string& path, uint64_t max_bytes);

} // namespace stitch::run
