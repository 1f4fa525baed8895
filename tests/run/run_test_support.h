// Helpers shared by stitch-run's tests: building HostTensors from values, byte strings from
// literals with embedded NULs, and a temporary folder removed at the end of a test.
#pragma once

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "driver/run/host_tensor.h"

namespace stitch::run::testing {

// A std::string holding every byte of a literal, embedded NULs included.
template <size_t N> std::string literal_bytes(const char (&text)[N]) {
  return std::string(text, N - 1);
}

template <typename T>
HostTensor make_tensor(stitch_dtype dtype, std::vector<int64_t> dims,
                       const std::vector<T>& values) {
  HostTensor tensor;
  tensor.dtype = dtype;
  tensor.dims = std::move(dims);
  tensor.bytes.resize(values.size() * sizeof(T));
  if (!values.empty()) std::memcpy(tensor.bytes.data(), values.data(), tensor.bytes.size());
  return tensor;
}

template <typename T> std::vector<T> values_of(const HostTensor& tensor) {
  std::vector<T> values(tensor.bytes.size() / sizeof(T));
  if (!values.empty()) std::memcpy(values.data(), tensor.bytes.data(), tensor.bytes.size());
  return values;
}

// A fresh folder under the system's temporary folder, removed with everything in it.
class TempDir {
public:
  TempDir() {
    std::string pattern =
        (std::filesystem::temp_directory_path() / "stitch_run_test_XXXXXX").string();
    if (mkdtemp(pattern.data()) == nullptr) std::abort();
    path_ = pattern;
  }
  ~TempDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  std::string file(const std::string& name) const { return (path_ / name).string(); }
  const std::filesystem::path& path() const { return path_; }

private:
  std::filesystem::path path_;
};

} // namespace stitch::run::testing
