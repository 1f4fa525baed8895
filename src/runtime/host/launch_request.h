// What a kernel launch asks for on the host target (the request, the kernel with its arguments
// bound), how it failed, and the per-kernel attributes (cudaFuncSetAttribute) its checks read.
#pragma once

#include "error_status.h"
#include "host_config.h"
#include "host_types.h"

#include <cstddef>
#include <string>

#if !defined(STITCH_HOST_LINKED_LAUNCH)
#include <mutex>
#include <unordered_map>
#endif

namespace stitch::host {

enum class LaunchKind { Ordinary, Cooperative, Cluster };

struct LaunchRequest {
  LaunchKind kind;
  const char* kernel_name;
  const void* kernel; // identifies the kernel for its cudaFuncSetAttribute limits
  dim3 grid;
  dim3 block;
  std::size_t dynamic_shared_bytes;
  dim3 cluster = dim3(1, 1, 1); // blocks per cluster (LaunchKind::Cluster)
};

// The kernel with its arguments bound, callable by every emulated thread.
struct KernelInvoker {
  void (*call)(const void* bound);
  const void* bound;
};

struct LaunchFailure {
  cudaError_t code = cudaSuccess;
  std::string message;
  explicit operator bool() const { return code != cudaSuccess; }
};

#if !defined(STITCH_HOST_LINKED_LAUNCH)
// Per-kernel attributes set with cudaFuncSetAttribute: the dynamic shared memory limit
// (cudaFuncAttributeMaxDynamicSharedMemorySize) and whether clusters may be larger than the
// portable size (cudaFuncAttributeNonPortableClusterSizeAllowed).
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
  bool non_portable_clusters(const void* kernel) {
    std::lock_guard<std::mutex> lock(mutex_);
    const auto found = non_portable_clusters_.find(kernel);
    return found != non_portable_clusters_.end() && found->second;
  }
  void set_non_portable_clusters(const void* kernel, bool allowed) {
    std::lock_guard<std::mutex> lock(mutex_);
    non_portable_clusters_[kernel] = allowed;
  }

private:
  std::mutex mutex_;
  std::unordered_map<const void*, std::size_t> max_dynamic_shared_;
  std::unordered_map<const void*, bool> non_portable_clusters_;
};
#endif

// KernelAttributes' setters as compiled into libstitch_runtime_host.a (launch_linked.cpp), which
// stitchc's generated sources (-DSTITCH_HOST_LINKED_LAUNCH) call instead of the class.
void linked_set_max_dynamic_shared(const void* kernel, std::size_t bytes);
void linked_set_non_portable_clusters(const void* kernel, bool allowed);
bool linked_non_portable_clusters(const void* kernel);

namespace detail {

inline void set_max_dynamic_shared(const void* kernel, std::size_t bytes) {
#if defined(STITCH_HOST_LINKED_LAUNCH)
  linked_set_max_dynamic_shared(kernel, bytes);
#else
  KernelAttributes::instance().set_max_dynamic_shared(kernel, bytes);
#endif
}

inline void set_non_portable_clusters(const void* kernel, bool allowed) {
#if defined(STITCH_HOST_LINKED_LAUNCH)
  linked_set_non_portable_clusters(kernel, allowed);
#else
  KernelAttributes::instance().set_non_portable_clusters(kernel, allowed);
#endif
}

inline bool non_portable_clusters(const void* kernel) {
#if defined(STITCH_HOST_LINKED_LAUNCH)
  return linked_non_portable_clusters(kernel);
#else
  return KernelAttributes::instance().non_portable_clusters(kernel);
#endif
}

} // namespace detail

} // namespace stitch::host
