// The host target's launch machinery, compiled once into libstitch_runtime_host.a: the
// sources stitchc generates are compiled with -DSTITCH_HOST_LINKED_LAUNCH and call this.
#include "launch_run.h"

namespace stitch::host {

cudaError_t run_launch_linked(const LaunchRequest& request, KernelInvoker kernel) {
  return run_launch(request, kernel);
}

} // namespace stitch::host
