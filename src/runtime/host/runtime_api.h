// Host stand-ins for the CUDA runtime calls a stitchc launcher makes, with their CUDA names and
// signatures in the global namespace (defined only under STITCH_HOST_TARGET, so a launcher is
// the same source on both targets):
//
//   memory   cudaMalloc, cudaFree, cudaMallocHost, cudaFreeHost, cudaMemcpy(Async),
//            cudaMemset(Async), cudaMemcpyToSymbol, cudaMemcpyFromSymbol
//   streams  cudaStreamCreate(WithFlags), cudaStreamDestroy, cudaStreamSynchronize,
//            cudaDeviceSynchronize
//   errors   cudaGetLastError, cudaPeekAtLastError, cudaGetErrorString, cudaGetErrorName
//   device   cudaGetDeviceCount, cudaGetDevice, cudaSetDevice, cudaDeviceGetAttribute,
//            cudaFuncSetAttribute, cudaOccupancyMaxActiveBlocksPerMultiprocessor,
//            cudaOccupancyMaxActiveClusters (with cudaLaunchConfig_t and its cluster attribute)
//
// "Device" memory is ordinary host memory (256-byte aligned, filled with 0xFF when
// host_config().poison_allocations is set, so an output a kernel forgot to write reads as NaN).
// Every call completes before it returns, so streams and synchronization are trivially
// satisfied. Device attributes answer from host_config().
#pragma once

#include "error_status.h"
#include "host_config.h"
#include "launch.h"

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>

#if !defined(STITCH_HOST_LINKED_LAUNCH)
#include <mutex>
#include <unordered_map>
#endif

enum cudaMemcpyKind {
  cudaMemcpyHostToHost = 0,
  cudaMemcpyHostToDevice = 1,
  cudaMemcpyDeviceToHost = 2,
  cudaMemcpyDeviceToDevice = 3,
  cudaMemcpyDefault = 4,
};

enum cudaFuncAttribute {
  cudaFuncAttributeMaxDynamicSharedMemorySize = 8,
  cudaFuncAttributeNonPortableClusterSizeAllowed = 14,
};

// What cudaOccupancyMaxActiveClusters reads of a launch configuration (CUDA's names and values).
enum cudaLaunchAttributeID {
  cudaLaunchAttributeCooperative = 2,
  cudaLaunchAttributeClusterDimension = 4,
};
union cudaLaunchAttributeValue {
  int cooperative;
  struct {
    unsigned int x, y, z;
  } clusterDim;
};
struct cudaLaunchAttribute {
  cudaLaunchAttributeID id;
  cudaLaunchAttributeValue val;
};
struct cudaLaunchConfig_t {
  dim3 gridDim;
  dim3 blockDim;
  std::size_t dynamicSmemBytes;
  cudaStream_t stream;
  cudaLaunchAttribute* attrs;
  unsigned int numAttrs;
};

enum cudaDeviceAttr {
  cudaDevAttrMaxThreadsPerBlock = 1,
  cudaDevAttrWarpSize = 10,
  cudaDevAttrMultiProcessorCount = 16,
  cudaDevAttrMaxThreadsPerMultiProcessor = 39,
  cudaDevAttrMaxSharedMemoryPerMultiprocessor = 81,
  cudaDevAttrCooperativeLaunch = 95,
  cudaDevAttrMaxSharedMemoryPerBlockOptin = 97,
  cudaDevAttrMaxBlocksPerMultiprocessor = 106,
  cudaDevAttrClusterLaunch = 120,
};

#define cudaStreamDefault 0x00
#define cudaStreamNonBlocking 0x01

namespace stitch::host {

#if !defined(STITCH_HOST_LINKED_LAUNCH)
// The live cudaMalloc allocations, so that a bad or double cudaFree is an error, not a crash.
class DeviceAllocations {
public:
  static DeviceAllocations& instance() {
    static DeviceAllocations allocations;
    return allocations;
  }
  void add(void* pointer, std::size_t bytes) {
    std::lock_guard<std::mutex> lock(mutex_);
    sizes_[pointer] = bytes;
  }
  bool remove(void* pointer) {
    std::lock_guard<std::mutex> lock(mutex_);
    return sizes_.erase(pointer) == 1;
  }

private:
  std::mutex mutex_;
  std::unordered_map<void*, std::size_t> sizes_;
};
#endif

// The allocation table as compiled into libstitch_runtime_host.a (launch_linked.cpp), which
// stitchc's generated sources (-DSTITCH_HOST_LINKED_LAUNCH) use instead of the class.
void linked_add_allocation(void* pointer, std::size_t bytes);
bool linked_remove_allocation(void* pointer);

namespace detail {

inline void add_allocation(void* pointer, std::size_t bytes) {
#if defined(STITCH_HOST_LINKED_LAUNCH)
  linked_add_allocation(pointer, bytes);
#else
  DeviceAllocations::instance().add(pointer, bytes);
#endif
}

inline bool remove_allocation(void* pointer) {
#if defined(STITCH_HOST_LINKED_LAUNCH)
  return linked_remove_allocation(pointer);
#else
  return DeviceAllocations::instance().remove(pointer);
#endif
}

} // namespace detail

inline cudaError_t copy_bytes(const char* call, void* destination, const void* source,
                              std::size_t bytes) {
  if (bytes == 0) return cudaSuccess;
  if (destination == nullptr || source == nullptr)
    return report_error(cudaErrorInvalidValue, std::string(call) + ": null pointer");
  std::memmove(destination, source, bytes);
  return cudaSuccess;
}

inline cudaError_t fill_bytes(const char* call, void* destination, int value, std::size_t bytes) {
  if (bytes == 0) return cudaSuccess;
  if (destination == nullptr)
    return report_error(cudaErrorInvalidValue, std::string(call) + ": null pointer");
  std::memset(destination, value, bytes);
  return cudaSuccess;
}

} // namespace stitch::host

// ---- Memory ----

inline cudaError_t cudaMalloc(void** pointer, std::size_t bytes) {
  if (pointer == nullptr)
    return stitch::host::report_error(cudaErrorInvalidValue, "cudaMalloc: null result pointer");
  *pointer = nullptr;
  if (bytes == 0) return cudaSuccess;
  const std::size_t rounded = (bytes + 255) / 256 * 256;
  void* memory = std::aligned_alloc(256, rounded);
  if (memory == nullptr)
    return stitch::host::report_error(cudaErrorMemoryAllocation,
                                      "cudaMalloc of " + std::to_string(bytes) + " bytes");
  if (stitch::host::host_config().poison_allocations) std::memset(memory, 0xFF, rounded);
  stitch::host::detail::add_allocation(memory, rounded);
  *pointer = memory;
  return cudaSuccess;
}
template <typename T> inline cudaError_t cudaMalloc(T** pointer, std::size_t bytes) {
  return cudaMalloc(reinterpret_cast<void**>(pointer), bytes);
}

inline cudaError_t cudaFree(void* pointer) {
  if (pointer == nullptr) return cudaSuccess;
  if (!stitch::host::detail::remove_allocation(pointer))
    return stitch::host::report_error(
        cudaErrorInvalidValue, "cudaFree: pointer is not from cudaMalloc or was already freed");
  std::free(pointer);
  return cudaSuccess;
}

inline cudaError_t cudaMallocHost(void** pointer, std::size_t bytes) {
  return cudaMalloc(pointer, bytes);
}
template <typename T> inline cudaError_t cudaMallocHost(T** pointer, std::size_t bytes) {
  return cudaMalloc(reinterpret_cast<void**>(pointer), bytes);
}
inline cudaError_t cudaFreeHost(void* pointer) { return cudaFree(pointer); }

inline cudaError_t cudaMemcpy(void* destination, const void* source, std::size_t bytes,
                              cudaMemcpyKind /*kind*/) {
  return stitch::host::copy_bytes("cudaMemcpy", destination, source, bytes);
}
inline cudaError_t cudaMemcpyAsync(void* destination, const void* source, std::size_t bytes,
                                   cudaMemcpyKind /*kind*/, cudaStream_t /*stream*/ = nullptr) {
  return stitch::host::copy_bytes("cudaMemcpyAsync", destination, source, bytes);
}
inline cudaError_t cudaMemset(void* destination, int value, std::size_t bytes) {
  return stitch::host::fill_bytes("cudaMemset", destination, value, bytes);
}
inline cudaError_t cudaMemsetAsync(void* destination, int value, std::size_t bytes,
                                   cudaStream_t /*stream*/ = nullptr) {
  return stitch::host::fill_bytes("cudaMemsetAsync", destination, value, bytes);
}

// __device__ / __constant__ variables are plain globals on the host target.
template <typename T>
inline cudaError_t cudaMemcpyToSymbol(const T& symbol, const void* source, std::size_t bytes,
                                      std::size_t offset = 0,
                                      cudaMemcpyKind /*kind*/ = cudaMemcpyHostToDevice) {
  if (offset + bytes > sizeof(T))
    return stitch::host::report_error(cudaErrorInvalidValue, "cudaMemcpyToSymbol: out of range");
  auto* bytes_of_symbol = reinterpret_cast<unsigned char*>(const_cast<T*>(&symbol));
  return stitch::host::copy_bytes("cudaMemcpyToSymbol", bytes_of_symbol + offset, source, bytes);
}
template <typename T>
inline cudaError_t cudaMemcpyFromSymbol(void* destination, const T& symbol, std::size_t bytes,
                                        std::size_t offset = 0,
                                        cudaMemcpyKind /*kind*/ = cudaMemcpyDeviceToHost) {
  if (offset + bytes > sizeof(T))
    return stitch::host::report_error(cudaErrorInvalidValue, "cudaMemcpyFromSymbol: out of range");
  const auto* bytes_of_symbol = reinterpret_cast<const unsigned char*>(&symbol);
  return stitch::host::copy_bytes("cudaMemcpyFromSymbol", destination, bytes_of_symbol + offset,
                                  bytes);
}

// ---- Streams and synchronization (every operation has already completed) ----

inline cudaError_t cudaStreamCreateWithFlags(cudaStream_t* stream, unsigned int /*flags*/) {
  if (stream == nullptr)
    return stitch::host::report_error(cudaErrorInvalidValue, "cudaStreamCreate: null stream");
  static std::atomic<unsigned> next_id{1};
  *stream = new CUstream_st{next_id++};
  return cudaSuccess;
}
inline cudaError_t cudaStreamCreate(cudaStream_t* stream) {
  return cudaStreamCreateWithFlags(stream, cudaStreamDefault);
}
inline cudaError_t cudaStreamDestroy(cudaStream_t stream) {
  delete stream;
  return cudaSuccess;
}
inline cudaError_t cudaStreamSynchronize(cudaStream_t /*stream*/) { return cudaSuccess; }
inline cudaError_t cudaDeviceSynchronize() { return cudaSuccess; }

// ---- Errors ----

inline cudaError_t cudaGetLastError() {
  stitch::host::ErrorState& state = stitch::host::this_thread_errors();
  const cudaError_t last = state.last;
  state.last = cudaSuccess;
  return last;
}
inline cudaError_t cudaPeekAtLastError() { return stitch::host::this_thread_errors().last; }

// The detailed message of this thread's latest failure if it had this code, else CUDA's text.
inline const char* cudaGetErrorString(cudaError_t error) {
  const stitch::host::ErrorState& state = stitch::host::this_thread_errors();
  if (error != cudaSuccess && error == state.detailed_code && !state.detail.empty())
    return state.detail.c_str();
  return stitch::host::error_text(error).description;
}
inline const char* cudaGetErrorName(cudaError_t error) {
  return stitch::host::error_text(error).name;
}

// ---- The emulated device ----

inline cudaError_t cudaGetDeviceCount(int* count) {
  if (count == nullptr) return stitch::host::report_error(cudaErrorInvalidValue, "null count");
  *count = 1;
  return cudaSuccess;
}
inline cudaError_t cudaGetDevice(int* device) {
  if (device == nullptr) return stitch::host::report_error(cudaErrorInvalidValue, "null device");
  *device = 0;
  return cudaSuccess;
}
inline cudaError_t cudaSetDevice(int device) {
  if (device != 0)
    return stitch::host::report_error(cudaErrorInvalidDevice, "the host target has one device, 0");
  return cudaSuccess;
}

inline cudaError_t cudaDeviceGetAttribute(int* value, cudaDeviceAttr attribute, int device) {
  if (value == nullptr || device != 0)
    return stitch::host::report_error(cudaErrorInvalidValue,
                                      "cudaDeviceGetAttribute: bad value pointer or device");
  const stitch::host::HostDeviceConfig& config = stitch::host::host_config();
  switch (attribute) {
  case cudaDevAttrMaxThreadsPerBlock:
    *value = static_cast<int>(config.max_threads_per_block);
    break;
  case cudaDevAttrWarpSize:
    *value = 32;
    break;
  case cudaDevAttrMultiProcessorCount:
    *value = config.multiprocessor_count;
    break;
  case cudaDevAttrMaxThreadsPerMultiProcessor:
    *value = config.max_threads_per_multiprocessor;
    break;
  case cudaDevAttrMaxSharedMemoryPerMultiprocessor:
    *value = static_cast<int>(config.shared_bytes_per_multiprocessor);
    break;
  case cudaDevAttrCooperativeLaunch:
    *value = 1;
    break;
  case cudaDevAttrMaxSharedMemoryPerBlockOptin:
    *value = static_cast<int>(config.max_shared_bytes_per_block_optin);
    break;
  case cudaDevAttrMaxBlocksPerMultiprocessor:
    *value = config.max_blocks_per_multiprocessor;
    break;
  case cudaDevAttrClusterLaunch:
    *value = config.cluster_launch ? 1 : 0;
    break;
  default:
    return stitch::host::report_error(cudaErrorInvalidValue,
                                      "cudaDeviceGetAttribute: attribute not emulated");
  }
  return cudaSuccess;
}

template <typename Kernel>
inline cudaError_t cudaFuncSetAttribute(Kernel* kernel, cudaFuncAttribute attribute, int value) {
  const stitch::host::HostDeviceConfig& config = stitch::host::host_config();
  if (attribute == cudaFuncAttributeNonPortableClusterSizeAllowed) {
    if (value != 0 && value != 1)
      return stitch::host::report_error(
          cudaErrorInvalidValue,
          "cudaFuncSetAttribute: NonPortableClusterSizeAllowed takes 0 or 1, not " +
              std::to_string(value));
    stitch::host::detail::set_non_portable_clusters(reinterpret_cast<const void*>(kernel),
                                                    value == 1);
    return cudaSuccess;
  }
  if (attribute != cudaFuncAttributeMaxDynamicSharedMemorySize)
    return stitch::host::report_error(cudaErrorInvalidValue,
                                      "cudaFuncSetAttribute: attribute not emulated");
  if (value < 0 || static_cast<std::size_t>(value) > config.max_shared_bytes_per_block_optin)
    return stitch::host::report_error(
        cudaErrorInvalidValue, "cudaFuncSetAttribute: " + std::to_string(value) +
                                   " bytes of dynamic shared memory exceed the opt-in limit of " +
                                   std::to_string(config.max_shared_bytes_per_block_optin));
  stitch::host::detail::set_max_dynamic_shared(reinterpret_cast<const void*>(kernel),
                                               static_cast<std::size_t>(value));
  return cudaSuccess;
}

// Blocks per multiprocessor by threads, block-count and dynamic shared memory limits (static
// shared memory is not known before the kernel runs on the host target and is not counted).
template <typename Kernel>
inline cudaError_t cudaOccupancyMaxActiveBlocksPerMultiprocessor(int* blocks, Kernel* /*kernel*/,
                                                                 int block_size,
                                                                 std::size_t dynamic_shared) {
  if (blocks == nullptr || block_size <= 0)
    return stitch::host::report_error(
        cudaErrorInvalidValue, "cudaOccupancyMaxActiveBlocksPerMultiprocessor: bad argument");
  *blocks = stitch::host::resident_blocks_per_multiprocessor(
      stitch::host::host_config(), static_cast<unsigned>(block_size), dynamic_shared);
  return cudaSuccess;
}

// Clusters of the launch configuration's cluster dimension (its
// cudaLaunchAttributeClusterDimension) that the device holds at once: resident blocks over the
// cluster's size, as if any blocks of the device could form a cluster. Fails as the launch would
// for a cluster too large.
template <typename Kernel>
inline cudaError_t cudaOccupancyMaxActiveClusters(int* clusters, Kernel* kernel,
                                                  const cudaLaunchConfig_t* launch) {
  if (clusters == nullptr || launch == nullptr)
    return stitch::host::report_error(cudaErrorInvalidValue,
                                      "cudaOccupancyMaxActiveClusters: null argument");
  const stitch::host::HostDeviceConfig& config = stitch::host::host_config();
  if (!config.cluster_launch)
    return stitch::host::report_error(
        cudaErrorNotSupported,
        "cudaOccupancyMaxActiveClusters: the device has no thread-block clusters (before sm_90)");
  if (launch->numAttrs > 0 && launch->attrs == nullptr)
    return stitch::host::report_error(cudaErrorInvalidValue,
                                      "cudaOccupancyMaxActiveClusters: null attributes");
  std::uint64_t blocks = 0;
  bool found = false;
  for (unsigned i = 0; i < launch->numAttrs; ++i)
    if (launch->attrs[i].id == cudaLaunchAttributeClusterDimension) {
      const auto& c = launch->attrs[i].val.clusterDim;
      blocks = std::uint64_t{c.x} * c.y * c.z;
      found = true;
    }
  if (!found || blocks == 0)
    return stitch::host::report_error(
        cudaErrorInvalidClusterSize,
        found ? "cudaOccupancyMaxActiveClusters: a cluster dimension of 0 blocks"
              : "cudaOccupancyMaxActiveClusters: no cluster dimension in the launch configuration");
  const bool non_portable =
      stitch::host::detail::non_portable_clusters(reinterpret_cast<const void*>(kernel));
  const unsigned limit =
      non_portable ? config.max_cluster_blocks : config.max_portable_cluster_blocks;
  if (blocks > limit)
    return stitch::host::report_error(cudaErrorInvalidClusterSize,
                                      "cudaOccupancyMaxActiveClusters: a cluster of " +
                                          std::to_string(blocks) + " blocks, over " +
                                          std::to_string(limit));
  const dim3 block = launch->blockDim;
  const int per_multiprocessor = stitch::host::resident_blocks_per_multiprocessor(
      config, block.x * block.y * block.z, launch->dynamicSmemBytes);
  *clusters = static_cast<int>(std::uint64_t(std::max(per_multiprocessor, 0)) *
                               std::uint64_t(std::max(config.multiprocessor_count, 0)) / blocks);
  return cudaSuccess;
}
