// Kernel launches on the host target: what STITCH_LAUNCH, STITCH_LAUNCH_COOPERATIVE and
// STITCH_LAUNCH_CLUSTER expand to.
//
// A launch is checked the way the CUDA runtime checks it (block and grid dimensions, dynamic
// shared memory against the kernel's cudaFuncSetAttribute limit, cooperative residency), then
// runs to completion before the call returns. The stream is accepted and ignored: every
// operation is synchronous, so all of them are already in stream order. An ordinary launch
// spreads its blocks over launch_worker_count() OS threads, one FiberScheduler each; a
// cooperative launch makes the whole grid resident in one FiberScheduler so that
// stitch_grid_sync can wait for every block; a cluster launch runs each cluster's blocks together
// in one FiberScheduler (clusters spread over the OS threads) so that stitch::cluster::sync can
// wait for them and they can reach each other's shared memory. Any failure comes back as a
// cudaError_t and becomes this host thread's last error with a detailed message; nothing aborts.
#pragma once

#include "error_status.h"
#include "host_types.h"
#include "launch_request.h"

#include <cstddef>
#include <tuple>
#include <type_traits>
#include <utility>

#if defined(STITCH_HOST_LINKED_LAUNCH)
namespace stitch::host {
// run_launch, compiled once into libstitch_runtime_host.a (launch_linked.cpp).
cudaError_t run_launch_linked(const LaunchRequest& request, KernelInvoker kernel);
} // namespace stitch::host
#define STITCH_HOST_RUN_LAUNCH ::stitch::host::run_launch_linked
#else
#include "launch_run.h"
#define STITCH_HOST_RUN_LAUNCH ::stitch::host::run_launch
#endif

namespace stitch::host {

// Binds the arguments (converted to the kernel's parameter types, as a CUDA launch does) and
// runs the launch. Every emulated thread receives its own copy of each argument.
template <typename... Params, typename... Args>
inline cudaError_t launch_kernel(LaunchKind kind, const char* kernel_name, dim3 cluster,
                                 void (*kernel)(Params...), dim3 grid, dim3 block,
                                 std::size_t shared_bytes, cudaStream_t /*stream*/,
                                 Args&&... args) {
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
  const LaunchRequest request{
      kind, kernel_name, reinterpret_cast<const void*>(kernel), grid, block, shared_bytes, cluster};
  return STITCH_HOST_RUN_LAUNCH(request, invoker);
}

// STITCH_LAUNCH_CLUSTER's arguments in the macro's order (a kernel template's commas split the
// macro's first argument; the pieces must come out in the order they went in).
template <typename... Params, typename... Args>
inline cudaError_t launch_in_clusters(const char* kernel_name, void (*kernel)(Params...), dim3 grid,
                                      dim3 cluster, dim3 block, std::size_t shared_bytes,
                                      cudaStream_t stream, Args&&... args) {
  return launch_kernel(LaunchKind::Cluster, kernel_name, cluster, kernel, grid, block, shared_bytes,
                       stream, std::forward<Args>(args)...);
}

} // namespace stitch::host
