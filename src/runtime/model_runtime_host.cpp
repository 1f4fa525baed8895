// model_runtime_host.cpp: the host target's launcher. The emulation completes every operation
// before its call returns, so a run is one synchronous call of the generated enqueue: there is
// nothing to capture, replay or wait for, and the caller's stream argument is ignored (the
// generated code receives a null stream). One device, 0.
#include "model_runtime.h"

#include "host/fiber_stacks.h"
#include "host/worker_pool.h"

#if !defined(STITCH_HOST_TARGET)
#error "model_runtime_host.cpp is the host target's launcher; build it with -DSTITCH_HOST_TARGET"
#endif

namespace stitch::runtime {

const char* const kRuntimeTarget = "host";

int current_device() { return 0; }

DeviceScope::DeviceScope(int /*device*/) {}
DeviceScope::~DeviceScope() = default;

struct Launcher::State {};

Launcher::Launcher(const Model& /*model*/) {}
Launcher::~Launcher() = default;

void Launcher::run(const Model& model, stitch_abi_buffers buffers, void* /*stream*/,
                   bool /*direct*/) {
  buffers.stream = nullptr;
  enqueue_model(*model.abi, buffers);
}

void Launcher::wait_idle() {}

void Launcher::release() {}

void release_idle_resources() {
  host::BlockWorkerPool::instance().release();
  host::this_thread_stack_cache().trim(0);
}

} // namespace stitch::runtime
