// The host target's launch machinery, the scheduler's entry points of the device intrinsics and
// the runtime calls' tables (allocations, kernel attributes), compiled once into
// libstitch_runtime_host.a: the sources stitchc generates are compiled with
// -DSTITCH_HOST_LINKED_LAUNCH and call these.
#if defined(STITCH_HOST_LINKED_LAUNCH)
#error                                                                                             \
    "launch_linked.cpp is the header-only path compiled once; build it without STITCH_HOST_LINKED_LAUNCH"
#endif

#include "device_intrinsics.h"
#include "launch_run.h"
#include "runtime_api.h"

namespace stitch::host {

cudaError_t run_launch_linked(const LaunchRequest& request, KernelInvoker kernel) {
  return run_launch(request, kernel);
}

// This library is compiled without STITCH_HOST_LINKED_LAUNCH: each linked_* entry point is the
// header-only path, compiled once.
std::uint64_t linked_warp_collective(EmulatedThread& thread, const WarpCall& call,
                                     const SourceSite& site) {
  return detail::scheduler_warp_collective(thread, call, site);
}

void linked_block_barrier(EmulatedThread& thread, const SourceSite& site, int predicate) {
  detail::scheduler_block_barrier(thread, site, predicate);
}

void linked_grid_barrier(EmulatedThread& thread, const SourceSite& site) {
  detail::scheduler_grid_barrier(thread, site);
}

void linked_cluster_barrier(EmulatedThread& thread, const SourceSite& site) {
  detail::scheduler_cluster_barrier(thread, site);
}

void linked_yield(EmulatedThread& thread) { detail::scheduler_yield(thread); }

void linked_add_allocation(void* pointer, std::size_t bytes) {
  detail::add_allocation(pointer, bytes);
}

bool linked_remove_allocation(void* pointer) { return detail::remove_allocation(pointer); }

void linked_set_max_dynamic_shared(const void* kernel, std::size_t bytes) {
  detail::set_max_dynamic_shared(kernel, bytes);
}

void linked_set_non_portable_clusters(const void* kernel, bool allowed) {
  detail::set_non_portable_clusters(kernel, allowed);
}

bool linked_non_portable_clusters(const void* kernel) {
  return detail::non_portable_clusters(kernel);
}

} // namespace stitch::host
