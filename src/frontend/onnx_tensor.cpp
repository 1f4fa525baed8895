// TensorProto -> constant Tensor: dtype and dims checks, then the bytes from raw_data, a
// typed field, or an external file beneath the model's folder.
#include "frontend/onnx_tensor.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <climits>
#include <cstdlib>
#include <cstring>

#include "graph/checked_math.h"
#include "graph/constant.h"
#include "graph/error.h"

namespace stitch {

namespace {

template <typename... Args>
[[noreturn]] void tensor_fail(const ErrorSite& site, const std::string& name,
                              fmt::format_string<Args...> f, Args&&... args) {
  throw UserError(
      site, fmt::format("tensor '{}': {}", name, fmt::format(f, std::forward<Args>(args)...)));
}

// Store typed-field values into little-endian bytes of `dtype`.
template <typename Field>
std::string bytes_from_field(const Field& field, DType dtype, int64_t count, const ErrorSite& site,
                             const std::string& name, const char* field_name) {
  if (static_cast<int64_t>(field.size()) != count)
    tensor_fail(site, name, "{} holds {} values, but its shape needs {}", field_name, field.size(),
                count);
  std::string bytes(static_cast<size_t>(count) * dtype_size(dtype), '\0');
  char* out = bytes.data();
  for (int64_t i = 0; i < count; ++i) {
    auto v = field.Get(static_cast<int>(i));
    switch (dtype) {
    case DType::Float32: {
      float f = static_cast<float>(v);
      std::memcpy(out + 4 * i, &f, 4);
      break;
    }
    case DType::Float64: {
      double d = static_cast<double>(v);
      std::memcpy(out + 8 * i, &d, 8);
      break;
    }
    case DType::Int64: {
      int64_t x = static_cast<int64_t>(v);
      std::memcpy(out + 8 * i, &x, 8);
      break;
    }
    case DType::UInt64: {
      uint64_t x = static_cast<uint64_t>(v);
      std::memcpy(out + 8 * i, &x, 8);
      break;
    }
    case DType::Int32: {
      int32_t x = static_cast<int32_t>(v);
      std::memcpy(out + 4 * i, &x, 4);
      break;
    }
    case DType::UInt32: {
      uint32_t x = static_cast<uint32_t>(v);
      std::memcpy(out + 4 * i, &x, 4);
      break;
    }
    // int32_data carries 16-bit types as their bit patterns and small ints widened.
    case DType::Int16:
    case DType::UInt16:
    case DType::Float16:
    case DType::BFloat16: {
      uint16_t x = static_cast<uint16_t>(v);
      std::memcpy(out + 2 * i, &x, 2);
      break;
    }
    case DType::Int8:
    case DType::UInt8: {
      uint8_t x = static_cast<uint8_t>(v);
      out[i] = static_cast<char>(x);
      break;
    }
    case DType::Bool:
      out[i] = v != 0 ? 1 : 0;
      break;
    }
  }
  return bytes;
}

bool is_decimal(const std::string& s) {
  if (s.empty() || s.size() > 18) return false;
  for (char c : s)
    if (c < '0' || c > '9') return false;
  return true;
}

// Reads `length` bytes at `offset` of the external file named by `location`, which must be
// a relative path resolving beneath `model_dir`.
std::string read_external(const std::string& location, const std::string& offset_str,
                          const std::string& length_str, int64_t expected_bytes,
                          const std::string& model_dir, const ErrorSite& site,
                          const std::string& name) {
  if (location.empty()) tensor_fail(site, name, "external data has no 'location'");
  if (location.find('\0') != std::string::npos)
    tensor_fail(site, name, "external data location contains a NUL byte");
  if (location.front() == '/')
    tensor_fail(site, name,
                "external data location '{}' is absolute; it must be relative to "
                "the model's folder",
                location);
  for (size_t start = 0; start <= location.size();) {
    size_t end = location.find('/', start);
    if (end == std::string::npos) end = location.size();
    if (location.compare(start, end - start, "..") == 0)
      tensor_fail(site, name, "external data location '{}' leaves the model's folder ('..')",
                  location);
    start = end + 1;
  }
  char dir_real[PATH_MAX];
  if (!realpath(model_dir.c_str(), dir_real))
    tensor_fail(site, name, "cannot resolve the model's folder '{}': {}", model_dir,
                std::strerror(errno));
  std::string joined = model_dir + "/" + location;
  char file_real[PATH_MAX];
  if (!realpath(joined.c_str(), file_real))
    tensor_fail(site, name, "external data file '{}' cannot be opened: {}", location,
                std::strerror(errno));
  if (std::string(file_real) == dir_real)
    tensor_fail(site, name, "external data '{}' is not a regular file", location);
  std::string root = std::string(dir_real) == "/" ? "/" : std::string(dir_real) + "/";
  if (std::string(file_real).rfind(root, 0) != 0)
    tensor_fail(site, name,
                "external data location '{}' resolves to '{}', outside the model's "
                "folder (through a symlink)",
                location, file_real);

  int fd = open(file_real, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0)
    tensor_fail(site, name, "external data file '{}' cannot be opened: {}", location,
                std::strerror(errno));
  struct FdCloser {
    int fd;
    ~FdCloser() { close(fd); }
  } closer{fd};
  struct stat st {};
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode))
    tensor_fail(site, name, "external data '{}' is not a regular file", location);
  if (st.st_nlink > 1)
    tensor_fail(site, name,
                "external data file '{}' has {} hard links; stitchc refuses "
                "hard-linked data, which may lead outside the model's folder",
                location, static_cast<long long>(st.st_nlink));

  if (!offset_str.empty() && !is_decimal(offset_str))
    tensor_fail(site, name, "external data offset '{}' is not a decimal number", offset_str);
  if (!length_str.empty() && !is_decimal(length_str))
    tensor_fail(site, name, "external data length '{}' is not a decimal number", length_str);
  int64_t offset = offset_str.empty() ? 0 : std::stoll(offset_str);
  int64_t file_size = st.st_size;
  if (offset > file_size)
    tensor_fail(site, name, "external data offset {} is past the end of '{}' ({} bytes)", offset,
                location, file_size);
  int64_t length = length_str.empty() ? file_size - offset : std::stoll(length_str);
  if (checked_add(offset, length, "external data offset + length") > file_size)
    tensor_fail(site, name,
                "external data offset {} + length {} runs past the end of '{}' ({} "
                "bytes)",
                offset, length, location, file_size);
  if (length != expected_bytes)
    tensor_fail(site, name, "external data length {} does not match the tensor's {} bytes", length,
                expected_bytes);

  std::string bytes(static_cast<size_t>(length), '\0');
  int64_t done = 0;
  while (done < length) {
    ssize_t got = pread(fd, bytes.data() + done, static_cast<size_t>(length - done), offset + done);
    if (got <= 0)
      tensor_fail(site, name, "reading external data '{}' failed: {}", location,
                  got == 0 ? "unexpected end of file" : std::strerror(errno));
    done += got;
  }
  return bytes;
}

} // namespace

Tensor tensor_from_onnx(onnx::TensorProto& proto, const std::string& model_dir,
                        const ErrorSite& site, ConstantBudget& budget) {
  Tensor t;
  t.name = proto.name();
  std::optional<DType> dtype = dtype_from_onnx(proto.data_type());
  if (!dtype)
    tensor_fail(site, t.name, "unsupported data type {}", onnx_dtype_code_name(proto.data_type()));
  t.dtype = *dtype;
  if (proto.has_segment()) tensor_fail(site, t.name, "segmented tensors are not supported");
  for (int64_t d : proto.dims()) {
    if (d < 0) tensor_fail(site, t.name, "negative dimension {}", d);
    t.shape.push_back(d);
  }
  int64_t count = 0, bytes = 0;
  try {
    count = shape_elements(t.shape);
    bytes = checked_mul(count, dtype_size(t.dtype), "tensor byte size");
  } catch (const UserError& e) {
    tensor_fail(site, t.name, "shape {} is too large: {}", shape_to_string(t.shape), e.reason());
  }
  if (count > budget.limits.max_tensor_elements)
    tensor_fail(site, t.name,
                "shape {} has {} elements, more than the limit of {} "
                "(--max-tensor-elements)",
                shape_to_string(t.shape), count, budget.limits.max_tensor_elements);
  budget.bytes = checked_add(budget.bytes, bytes, "the model's constant bytes");
  if (budget.bytes > budget.limits.max_weight_bytes)
    tensor_fail(site, t.name,
                "its {} bytes bring the model's constants to {} bytes, more than "
                "the limit of {} (--max-weight-bytes)",
                bytes, budget.bytes, budget.limits.max_weight_bytes);
  t.typed = true;

  auto data = std::make_shared<ConstantData>();
  if (proto.data_location() == onnx::TensorProto::EXTERNAL) {
    std::string location, offset, length;
    for (const auto& kv : proto.external_data()) {
      if (kv.key() == "location")
        location = kv.value();
      else if (kv.key() == "offset")
        offset = kv.value();
      else if (kv.key() == "length")
        length = kv.value();
    }
    data->bytes = read_external(location, offset, length, bytes, model_dir, site, t.name);
  } else if (proto.has_raw_data()) {
    if (static_cast<int64_t>(proto.raw_data().size()) != bytes)
      tensor_fail(site, t.name, "raw_data holds {} bytes, but shape {} of {} needs {}",
                  proto.raw_data().size(), shape_to_string(t.shape), dtype_name(t.dtype), bytes);
    proto.mutable_raw_data()->swap(data->bytes);
  } else {
    switch (t.dtype) {
    case DType::Float32:
      data->bytes =
          bytes_from_field(proto.float_data(), t.dtype, count, site, t.name, "float_data");
      break;
    case DType::Float64:
      data->bytes =
          bytes_from_field(proto.double_data(), t.dtype, count, site, t.name, "double_data");
      break;
    case DType::Int64:
      data->bytes =
          bytes_from_field(proto.int64_data(), t.dtype, count, site, t.name, "int64_data");
      break;
    case DType::UInt64:
    case DType::UInt32:
      data->bytes =
          bytes_from_field(proto.uint64_data(), t.dtype, count, site, t.name, "uint64_data");
      break;
    default:
      data->bytes =
          bytes_from_field(proto.int32_data(), t.dtype, count, site, t.name, "int32_data");
      break;
    }
  }
  t.constant = std::move(data);
  return t;
}

} // namespace stitch
