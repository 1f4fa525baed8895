// The host target's launch machinery: launch checks, then ordinary launches (blocks spread
// over worker threads, one FiberScheduler each) and cooperative launches (the whole grid
// resident in one FiberScheduler). Included by launch.h in header-only builds; stitchc's host
// target compiles it once, into libstitch_runtime_host.a (launch_linked.cpp), and its
// generated sources call run_launch_linked instead (-DSTITCH_HOST_LINKED_LAUNCH), so a
// model's translation unit instantiates only its kernels.
#pragma once

#include "error_status.h"
#include "fiber_scheduler.h"
#include "host_config.h"
#include "host_types.h"
#include "launch_request.h"
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
#include <thread>

namespace stitch::host {

// OS threads an ordinary launch may use (the launching thread included).
inline unsigned launch_worker_count(const HostDeviceConfig& config) {
  if (config.worker_threads > 0) return config.worker_threads;
  const unsigned hardware = std::max(1u, std::thread::hardware_concurrency());
  return std::min(4u, hardware);
}

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
  if (request.kind == LaunchKind::Cluster) {
    const dim3 c = request.cluster;
    const std::uint64_t blocks = std::uint64_t{c.x} * c.y * c.z;
    if (!config.cluster_launch)
      return LaunchFailure{cudaErrorNotSupported,
                           "a cluster launch on a device without thread-block clusters (before "
                           "sm_90)"};
    const bool non_portable = KernelAttributes::instance().non_portable_clusters(request.kernel);
    const unsigned limit =
        non_portable ? config.max_cluster_blocks : config.max_portable_cluster_blocks;
    if (blocks == 0 || blocks > limit)
      return LaunchFailure{cudaErrorInvalidClusterSize,
                           "cluster " + dims(c) + " of " + std::to_string(blocks) +
                               " blocks: at most " + std::to_string(limit) +
                               (non_portable
                                    ? std::string(" (the non-portable limit)")
                                    : " without cudaFuncAttributeNonPortableClusterSizeAllowed (" +
                                          std::to_string(config.max_cluster_blocks) + " with it)")};
    if (g.x % c.x != 0 || g.y % c.y != 0 || g.z % c.z != 0)
      return LaunchFailure{cudaErrorInvalidClusterSize,
                           "grid " + dims(g) + " is not a whole number of clusters " + dims(c)};
    if (resident_blocks_per_multiprocessor(config, geometry.threads_per_block,
                                           geometry.dynamic_shared_bytes) < 1)
      return LaunchFailure{cudaErrorInvalidClusterSize,
                           "a block of the cluster " + dims(c) +
                               " does not fit on one multiprocessor (threads or shared memory)"};
    geometry.cluster_dim = c;
    geometry.cluster_blocks = static_cast<unsigned>(blocks);
  }
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

// Blocks (or, in a cluster launch, clusters) spread over worker threads; the failure of the
// lowest-numbered failing block (cluster) wins.
inline LaunchFailure run_ordinary(const LaunchGeometry& geometry, KernelInvoker kernel,
                                  const HostDeviceConfig& config) {
  const bool clusters = geometry.cluster_blocks > 1;
  const std::uint64_t units = geometry.block_count / geometry.cluster_blocks;
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
        const std::uint64_t unit = next_block.fetch_add(1);
        if (unit >= units) return;
        if (!(clusters ? scheduler.run_cluster(unit) : scheduler.run(unit, 1)))
          record(unit, scheduler.failure());
      }
    } catch (const std::exception& error) {
      record(UINT64_MAX - 1, LaunchFailure{cudaErrorMemoryAllocation, error.what()});
    }
  };
  const unsigned participants =
      static_cast<unsigned>(std::min<std::uint64_t>(launch_worker_count(config), units));
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

} // namespace stitch::host
