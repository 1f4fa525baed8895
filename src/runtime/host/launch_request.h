// What a kernel launch asks for on the host target, and the per-kernel attributes
// (cudaFuncSetAttribute) its checks read.
#pragma once

#include "host_config.h"
#include "host_types.h"

#include <cstddef>
#include <mutex>
#include <unordered_map>

namespace stitch::host {

enum class LaunchKind { Ordinary, Cooperative };

struct LaunchRequest {
  LaunchKind kind;
  const char* kernel_name;
  const void* kernel; // identifies the kernel for its cudaFuncSetAttribute limits
  dim3 grid;
  dim3 block;
  std::size_t dynamic_shared_bytes;
};

// Per-kernel limits raised with cudaFuncSetAttribute(kernel, ..MaxDynamicSharedMemorySize, n).
class KernelAttributes {
public:
  static KernelAttributes& instance() {
    static KernelAttributes attributes;
    return attributes;
  }
  std::size_t max_dynamic_shared(const void* kernel, const HostDeviceConfig& config) {
    std::lock_guard<std::mutex> lock(mutex_);
    const auto found = max_dynamic_shared_.find(kernel);
    return found == max_dynamic_shared_.end() ? config.default_dynamic_shared_limit : found->second;
  }
  void set_max_dynamic_shared(const void* kernel, std::size_t bytes) {
    std::lock_guard<std::mutex> lock(mutex_);
    max_dynamic_shared_[kernel] = bytes;
  }

private:
  std::mutex mutex_;
  std::unordered_map<const void*, std::size_t> max_dynamic_shared_;
};

} // namespace stitch::host
