// Kernel launches on the host target: what STITCH_LAUNCH and STITCH_LAUNCH_COOPERATIVE expand to.
//
// A launch is checked the way the CUDA runtime checks it (block and grid dimensions, dynamic
// shared memory against the kernel's cudaFuncSetAttribute limit, cooperative residency), then
// runs to completion before the call returns. The stream is accepted and ignored: every
// operation is synchronous, so all of them are already in stream order. An ordinary launch
// spreads its blocks over launch_worker_count() OS threads, one FiberScheduler each; a
// cooperative launch makes the whole grid resident in one FiberScheduler so that
// stitch_grid_sync can wait for every block. Any failure comes back as a cudaError_t and becomes
// this host thread's last error with a detailed message; nothing aborts.
#pragma once

#include "error_status.h"
#include "fiber_scheduler.h"
#include "host_config.h"
#include "host_types.h"
#include "worker_pool.h"

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <tuple>
#include <type_traits>
#include <unordered_map>
#include <utility>

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

// The launch's geometry, or the error CUDA would return for it.
inline std::optional<LaunchFailure> check_launch(const LaunchRequest& request,
                                                 const HostDeviceConfig& config,
                                                 LaunchGeometry& geometry) {
  const dim3 b = request.block, g = request.grid;
  const std::uint64_t threads = std::uint64_t{b.x} * b.y * b.z;
  const auto dims = [](const dim3& d) {
    return "(" + std::to_string(d.x) + "," + std::to_string(d.y) + "," + std::to_string(d.z) + ")";
  };
  if (threads == 0 || b.x > 1024 || b.y > 1024 || b.z > 64 ||
      threads > config.max_threads_per_block)
    return LaunchFailure{cudaErrorInvalidConfiguration,
                         "block " + dims(b) +
                             " is empty or exceeds 1024 threads (x, y <= 1024, "
                             "z <= 64)"};
  if (g.x == 0 || g.y == 0 || g.z == 0 || g.x > 0x7fffffffu || g.y > 65535 || g.z > 65535)
    return LaunchFailure{cudaErrorInvalidConfiguration,
                         "grid " + dims(g) + " is empty or too large (x < 2^31, y, z <= 65535)"};
  const std::size_t dynamic_limit =
      KernelAttributes::instance().max_dynamic_shared(request.kernel, config);
  if (request.dynamic_shared_bytes > dynamic_limit)
    return LaunchFailure{cudaErrorInvalidValue,
                         std::to_string(request.dynamic_shared_bytes) +
                             " bytes of dynamic shared memory exceed the kernel's limit of " +
                             std::to_string(dynamic_limit) +
                             " (raise it with cudaFuncSetAttribute("
                             "cudaFuncAttributeMaxDynamicSharedMemorySize), at most " +
                             std::to_string(config.max_shared_bytes_per_block_optin) + ")"};
  geometry.kernel_name = request.kernel_name;
  geometry.grid_dim = g;
  geometry.block_dim = b;
  geometry.threads_per_block = static_cast<unsigned>(threads);
  geometry.warps_per_block = static_cast<unsigned>((threads + 31) / 32);
  geometry.block_count = std::uint64_t{g.x} * g.y * g.z;
  geometry.dynamic_shared_bytes = request.dynamic_shared_bytes;
  geometry.cooperative = request.kind == LaunchKind::Cooperative;
  if (!geometry.cooperative) return std::nullopt;

  const int per_multiprocessor = resident_blocks_per_multiprocessor(
      config, geometry.threads_per_block, geometry.dynamic_shared_bytes);
  const std::uint64_t resident =
      std::uint64_t(per_multiprocessor) * std::uint64_t(std::max(config.multiprocessor_count, 0));
  if (geometry.block_count > resident)
    return LaunchFailure{cudaErrorCooperativeLaunchTooLarge,
                         "cooperative grid of " + std::to_string(geometry.block_count) +
                             " blocks exceeds the " + std::to_string(resident) +
                             " that can be resident at once (" +
                             std::to_string(config.multiprocessor_count) + " multiprocessors x " +
                             std::to_string(per_multiprocessor) + " blocks of " +
                             std::to_string(threads) + " threads)"};
  return std::nullopt;
}

// Blocks spread over worker threads; the failure of the lowest-numbered failing block wins.
inline LaunchFailure run_ordinary(const LaunchGeometry& geometry, KernelInvoker kernel,
                                  const HostDeviceConfig& config) {
  std::atomic<std::uint64_t> next_block{0};
  std::atomic<bool> stop{false};
  std::mutex failure_mutex;
  std::uint64_t failed_block = UINT64_MAX;
  LaunchFailure failure;
  const auto record = [&](std::uint64_t block, LaunchFailure problem) {
    std::lock_guard<std::mutex> lock(failure_mutex);
    stop = true;
    if (block >= failed_block) return;
    failed_block = block;
    failure = std::move(problem);
  };
  const std::function<void()> work = [&] {
    try {
      FiberScheduler scheduler(geometry, kernel, config);
      while (!stop.load(std::memory_order_relaxed)) {
        const std::uint64_t block = next_block.fetch_add(1);
        if (block >= geometry.block_count) return;
        if (!scheduler.run(block, 1)) record(block, scheduler.failure());
      }
    } catch (const std::exception& error) {
      record(UINT64_MAX - 1, LaunchFailure{cudaErrorMemoryAllocation, error.what()});
    }
  };
  const unsigned participants = static_cast<unsigned>(
      std::min<std::uint64_t>(launch_worker_count(config), geometry.block_count));
  if (participants <= 1)
    work();
  else
    BlockWorkerPool::instance().run(participants, work);
  return failure;
}

inline LaunchFailure run_cooperative(const LaunchGeometry& geometry, KernelInvoker kernel,
                                     const HostDeviceConfig& config) {
  // Enough for the default residency limit, so that repeated persistent kernels reuse their
  // stacks; each cached stack costs two memory mappings (stack and guard page).
  constexpr std::size_t kStacksKeptAfterLaunch = 8192;
  LaunchFailure failure;
  try {
    FiberScheduler scheduler(geometry, kernel, config);
    if (!scheduler.run(0, static_cast<unsigned>(geometry.block_count)))
      failure = scheduler.failure();
  } catch (const std::exception& error) {
    failure = LaunchFailure{cudaErrorMemoryAllocation, error.what()};
  }
  this_thread_stack_cache().trim(kStacksKeptAfterLaunch);
  return failure;
}

inline cudaError_t run_launch(const LaunchRequest& request, KernelInvoker kernel) {
  if (detail::current_emulated_thread != nullptr)
    return report_error(cudaErrorNotSupported,
                        std::string("kernel '") + request.kernel_name +
                            "' launched from device code (dynamic parallelism is not emulated)");
  const HostDeviceConfig& config = host_config();
  LaunchGeometry geometry;
  if (std::optional<LaunchFailure> problem = check_launch(request, config, geometry))
    return report_error(problem->code,
                        std::string("kernel '") + request.kernel_name + "': " + problem->message);
  const LaunchFailure failure = geometry.cooperative ? run_cooperative(geometry, kernel, config)
                                                     : run_ordinary(geometry, kernel, config);
  if (failure)
    return report_error(failure.code,
                        std::string("kernel '") + request.kernel_name + "': " + failure.message);
  return cudaSuccess;
}

// Binds the arguments (converted to the kernel's parameter types, as a CUDA launch does) and
// runs the launch. Every emulated thread receives its own copy of each argument.
template <typename... Params, typename... Args>
inline cudaError_t
launch_kernel(LaunchKind kind, const char* kernel_name, void (*kernel)(Params...), dim3 grid,
              dim3 block, std::size_t shared_bytes, cudaStream_t /*stream*/, Args&&... args) {
  static_assert(sizeof...(Params) == sizeof...(Args),
                "kernel launched with the wrong number of arguments");
  struct BoundKernel {
    void (*kernel)(Params...);
    std::tuple<std::decay_t<Params>...> arguments;
  };
  const BoundKernel bound{kernel, std::tuple<std::decay_t<Params>...>(std::forward<Args>(args)...)};
  const KernelInvoker invoker{[](const void* pointer) {
                                const BoundKernel& target =
                                    *static_cast<const BoundKernel*>(pointer);
                                std::apply(target.kernel, target.arguments);
                              },
                              &bound};
  const LaunchRequest request{kind, kernel_name, reinterpret_cast<const void*>(kernel),
                              grid, block,       shared_bytes};
  return run_launch(request, invoker);
}

} // namespace stitch::host
