// TensorProto -> HostTensor, and the extension dispatch between .pb and .npy. Every count
// and size in the proto is checked against the dims before a byte is copied.
#include "driver/run/tensor_file.h"

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>
#include <onnx/onnx_pb.h>
#include <sys/stat.h>

#include <climits>
#include <cstring>
#include <fstream>

#include "driver/run/npy.h"
#include "driver/run/run_error.h"

namespace stitch::run {

namespace {

constexpr uint64_t kProtobufLimit = INT32_MAX; // protobuf's 2 GiB message limit

bool ends_with(const std::string& text, const std::string& suffix) {
  return text.size() >= suffix.size() &&
         text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

template <typename T> void store(uint8_t* out, uint64_t index, T value) {
  std::memcpy(out + index * sizeof(T), &value, sizeof(T));
}

// Writes typed-field values as little-endian elements of `dtype`.
template <typename Field>
void copy_typed_field(const Field& field, stitch_dtype dtype, uint8_t* out) {
  for (int i = 0; i < field.size(); ++i) {
    auto value = field.Get(i);
    uint64_t index = static_cast<uint64_t>(i);
    switch (dtype) {
    case STITCH_FLOAT32:
      store(out, index, static_cast<float>(value));
      break;
    case STITCH_FLOAT64:
      store(out, index, static_cast<double>(value));
      break;
    case STITCH_INT64:
      store(out, index, static_cast<int64_t>(value));
      break;
    case STITCH_UINT64:
      store(out, index, static_cast<uint64_t>(value));
      break;
    case STITCH_INT32:
      store(out, index, static_cast<int32_t>(value));
      break;
    case STITCH_UINT32:
      store(out, index, static_cast<uint32_t>(value));
      break;
    // int32_data holds 16-bit floats as their bit patterns and small integers widened.
    case STITCH_INT16:
    case STITCH_UINT16:
    case STITCH_FLOAT16:
    case STITCH_BFLOAT16:
      store(out, index, static_cast<uint16_t>(value));
      break;
    case STITCH_INT8:
    case STITCH_UINT8:
      out[index] = static_cast<uint8_t>(value);
      break;
    case STITCH_BOOL:
      out[index] = value != 0 ? 1 : 0;
      break;
    }
  }
}

// The typed field ONNX assigns to `dtype`, by name, and its element count.
const char* typed_field_name(stitch_dtype dtype) {
  switch (dtype) {
  case STITCH_FLOAT32:
    return "float_data";
  case STITCH_FLOAT64:
    return "double_data";
  case STITCH_INT64:
    return "int64_data";
  case STITCH_UINT32:
  case STITCH_UINT64:
    return "uint64_data";
  default:
    return "int32_data";
  }
}

int typed_field_size(const onnx::TensorProto& proto, stitch_dtype dtype) {
  switch (dtype) {
  case STITCH_FLOAT32:
    return proto.float_data_size();
  case STITCH_FLOAT64:
    return proto.double_data_size();
  case STITCH_INT64:
    return proto.int64_data_size();
  case STITCH_UINT32:
  case STITCH_UINT64:
    return proto.uint64_data_size();
  default:
    return proto.int32_data_size();
  }
}

int all_typed_values(const onnx::TensorProto& proto) {
  return proto.float_data_size() + proto.double_data_size() + proto.int64_data_size() +
         proto.uint64_data_size() + proto.int32_data_size() + proto.string_data_size();
}

void copy_values(const onnx::TensorProto& proto, stitch_dtype dtype, uint8_t* out) {
  switch (dtype) {
  case STITCH_FLOAT32:
    copy_typed_field(proto.float_data(), dtype, out);
    return;
  case STITCH_FLOAT64:
    copy_typed_field(proto.double_data(), dtype, out);
    return;
  case STITCH_INT64:
    copy_typed_field(proto.int64_data(), dtype, out);
    return;
  case STITCH_UINT32:
  case STITCH_UINT64:
    copy_typed_field(proto.uint64_data(), dtype, out);
    return;
  default:
    copy_typed_field(proto.int32_data(), dtype, out);
    return;
  }
}

// float16 and bfloat16 in int32_data are bit patterns, 0 to 65535 (what onnx.helper.make_tensor
// writes); a value outside that range is no 16-bit pattern, so it is refused, not cut.
void check_16_bit_patterns(const onnx::TensorProto& proto, const std::string& label) {
  stitch_dtype dtype = static_cast<stitch_dtype>(proto.data_type());
  if (dtype != STITCH_FLOAT16 && dtype != STITCH_BFLOAT16) return;
  for (int i = 0; i < proto.int32_data_size(); ++i) {
    int32_t value = proto.int32_data(i);
    if (value < 0 || value > 0xffff)
      run_fail("{}: int32_data[{}] is {}, not a {} bit pattern (0 to 65535)", label, i, value,
               dtype_name(dtype));
  }
}

std::string tensor_label(const onnx::TensorProto& proto, const std::string& source) {
  if (proto.name().empty()) return source;
  return fmt::format("{} (tensor '{}')", source, proto.name());
}

} // namespace

std::string read_whole_file(const std::string& path, uint64_t max_bytes) {
  struct stat st {};
  if (stat(path.c_str(), &st) != 0) run_fail("{}: cannot open: {}", path, std::strerror(errno));
  if (!S_ISREG(st.st_mode)) run_fail("{}: not a regular file", path);
  if (static_cast<uint64_t>(st.st_size) > max_bytes)
    run_fail("{}: the file is {} bytes, over the limit of {}", path,
             static_cast<long long>(st.st_size), max_bytes);
  std::ifstream in(path, std::ios::binary);
  if (!in) run_fail("{}: cannot open: {}", path, std::strerror(errno));
  std::string bytes(static_cast<size_t>(st.st_size), '\0');
  if (!in.read(bytes.data(), st.st_size)) run_fail("{}: reading failed", path);
  return bytes;
}

NamedTensor parse_tensor_proto(std::string_view file_bytes, const std::string& source) {
  if (file_bytes.size() > kProtobufLimit)
    run_fail("{}: the file is over protobuf's 2 GiB limit", source);
  onnx::TensorProto proto;
  google::protobuf::io::ArrayInputStream raw(file_bytes.data(),
                                             static_cast<int>(file_bytes.size()));
  google::protobuf::io::CodedInputStream coded(&raw);
  coded.SetTotalBytesLimit(static_cast<int>(kProtobufLimit));
  coded.SetRecursionLimit(16);
  if (!proto.ParseFromCodedStream(&coded) || !coded.ConsumedEntireMessage())
    run_fail("{}: not a serialized ONNX TensorProto (truncated or another format)", source);

  std::string label = tensor_label(proto, source);
  if (proto.data_location() == onnx::TensorProto::EXTERNAL || proto.external_data_size() > 0)
    run_fail("{}: the tensor keeps its values in external data, which stitch-run does not read",
             label);
  if (proto.has_segment()) run_fail("{}: segmented tensors are not supported", label);
  if (proto.data_type() == onnx::TensorProto::STRING)
    run_fail("{}: string tensors are not supported", label);
  if (!is_known_dtype(proto.data_type()))
    run_fail("{}: ONNX data type {} is not supported", label, proto.data_type());

  NamedTensor named;
  named.name = proto.name();
  HostTensor& tensor = named.tensor;
  tensor.dtype = static_cast<stitch_dtype>(proto.data_type());
  if (proto.dims_size() > STITCH_MAX_RANK)
    run_fail("{}: rank {} is over stitch's limit of {}", label, proto.dims_size(), STITCH_MAX_RANK);
  tensor.dims.assign(proto.dims().begin(), proto.dims().end());
  uint64_t count = 0;
  size_t element_size = dtype_size(tensor.dtype);
  if (!checked_element_count(tensor.dims, element_size, &count))
    run_fail("{}: dims [{}] are negative or too large", label, fmt::join(tensor.dims, ","));
  uint64_t needed = count * element_size;

  if (proto.has_raw_data()) {
    if (all_typed_values(proto) > 0)
      run_fail("{}: the tensor has both raw_data and typed values", label);
    if (proto.raw_data().size() != needed)
      run_fail("{}: the {} tensor needs {} bytes of raw_data, but it holds {}", label,
               describe_tensor(tensor), needed, proto.raw_data().size());
    const auto* data = reinterpret_cast<const uint8_t*>(proto.raw_data().data());
    tensor.bytes.assign(data, data + needed);
    return named;
  }
  int field_size = typed_field_size(proto, tensor.dtype);
  if (static_cast<uint64_t>(field_size) != count || all_typed_values(proto) != field_size)
    run_fail(
        "{}: the {} tensor needs {} values in {}, but it holds {} there and {} in other fields",
        label, describe_tensor(tensor), count, typed_field_name(tensor.dtype), field_size,
        all_typed_values(proto) - field_size);
  check_16_bit_patterns(proto, label);
  tensor.bytes.assign(needed, 0);
  copy_values(proto, tensor.dtype, tensor.bytes.data());
  return named;
}

NamedTensor read_tensor_proto(const std::string& path) {
  return parse_tensor_proto(read_whole_file(path, kProtobufLimit), path);
}

HostTensor read_tensor_file(const std::string& path) {
  if (ends_with(path, ".npy")) return read_npy(path);
  if (ends_with(path, ".pb")) return read_tensor_proto(path).tensor;
  run_fail("{}: unknown tensor file type; use a .npy file or a .pb file (a serialized ONNX "
           "TensorProto)",
           path);
}

} // namespace stitch::run
