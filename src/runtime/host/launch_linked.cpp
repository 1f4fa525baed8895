// The host target's launch machinery, the scheduler's entry points of the device intrinsics and
// the runtime calls' tables (allocations, kernel attributes), compiled once into
// libstitch_runtime_host.a: the sources stitchc generates are compiled with
// -DSTITCH_HOST_LINKED_LAUNCH and call these.
#include "device_intrinsics.h"
#include "fiber_scheduler.h"
#include "launch_run.h"
#include "runtime_api.h"

namespace stitch::host {

cudaError_t run_launch_linked(const LaunchRequest& request, KernelInvoker kernel) {
  return run_launch(request, kernel);
}

std::uint64_t linked_warp_collective(EmulatedThread& thread, const WarpCall& call,
                                     const SourceSite& site) {
  return thread.scheduler->warp_collective(thread, call, site);
}

void linked_block_barrier(EmulatedThread& thread, const SourceSite& site, int predicate) {
  thread.scheduler->block_barrier(thread, site, predicate);
}

void linked_grid_barrier(EmulatedThread& thread, const SourceSite& site) {
  thread.scheduler->grid_barrier(thread, site);
}

void linked_yield(EmulatedThread& thread) { thread.scheduler->yield(thread); }

void linked_add_allocation(void* pointer, std::size_t bytes) {
  DeviceAllocations::instance().add(pointer, bytes);
}

bool linked_remove_allocation(void* pointer) {
  return DeviceAllocations::instance().remove(pointer);
}

void linked_set_max_dynamic_shared(const void* kernel, std::size_t bytes) {
  KernelAttributes::instance().set_max_dynamic_shared(kernel, bytes);
}

} // namespace stitch::host
