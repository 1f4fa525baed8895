// model_runtime.h: the internals of the runtime that implements the public C API
// (include/stitch/stitch.h) on top of the code stitchc generates for one model
// (stitch_model_abi.h). Linked, as a static library, into every compiled model library.
//
// How it fits together:
//   model_runtime.cpp           the C API entry points: handle lookup, argument checks, errors
//   model_runtime_registry.*    the process-wide table of live models and contexts
//   model_runtime_checks.*      the generated model's tables and the caller's tensors, checked
//   model_runtime_device.cpp    device memory and CUDA error checks (same source on both targets)
//   model_runtime_cuda.cpp      CUDA target: current device, CUDA Graph capture and replay
//   model_runtime_host.cpp      host target: enqueue runs synchronously, no graph
//
// Errors inside the runtime are thrown as ApiError (a status and a message) and turned into a
// stitch_status and the thread's last-error message at the API boundary; no exception crosses
// the C API.
//
// Two builds of the same sources: stitch_runtime_host (-DSTITCH_HOST_TARGET, the CUDA emulation
// of host/) and stitch_runtime_cuda (the host compiler against the CUDA headers). The latter
// cannot include stitch_cuda.h, which wants nvcc or STITCH_HOST_TARGET, so its build puts a copy
// of stitch_model_abi.h first on the include path, next to a stitch_cuda.h that only includes
// <cuda_runtime_api.h>; hence the angle brackets below (see src/runtime/CMakeLists.txt).
#pragma once

#include <stitch_model_abi.h>

#include "library/stitch_library.h"
#include "stitch/stitch.h"

#include <algorithm>
#include <cstdint>
#include <exception>
#include <memory>
#include <string>
#include <utility>
#include <vector>

// The runtime's reference to the generated launcher is hidden: it binds to the definition in
// the same model library, never to another model library's copy loaded into the process.
extern "C" __attribute__((visibility("hidden"))) const stitch_abi_model*
stitch_generated_model(void);

namespace stitch::runtime {

// "cuda" or "host": the target this copy of the runtime was built for.
extern const char* const kRuntimeTarget;

// A failed call on its way to the API boundary. The message does not name the API function;
// the boundary adds it.
class ApiError : public std::exception {
public:
  ApiError(stitch_status status, std::string message)
      : status_(status), message_(std::move(message)) {}
  stitch_status status() const { return status_; }
  const char* what() const noexcept override { return message_.c_str(); }

private:
  stitch_status status_;
  std::string message_;
};

[[noreturn]] void fail(stitch_status status, std::string message);

// Throws STITCH_ERROR_CUDA (STITCH_ERROR_OUT_OF_MEMORY for cudaErrorMemoryAllocation) with
// "<what> failed: <error name> (<error string>)" unless `result` is cudaSuccess.
void check_cuda(cudaError_t result, const std::string& what);

// "<what> failed: <error name> (<error string>)".
std::string describe_cuda_failure(cudaError_t result, const std::string& what);

// One cudaMalloc allocation, or a part of caller-provided memory (borrow), which it never frees.
// release() frees it and reports a failing cudaFree; the destructor frees what is left without
// reporting (it runs on error paths).
class DeviceBuffer {
public:
  DeviceBuffer() = default;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  ~DeviceBuffer();

  // `bytes` of 0 allocates nothing and leaves get() null. `purpose` names it in messages.
  void allocate(uint64_t bytes, const char* purpose);
  // Uses `data` (null for an empty part) without owning it.
  void borrow(void* data, const char* purpose);
  void release();
  void* get() const { return data_; }

private:
  void* data_ = nullptr;
  bool owned_ = false;
  const char* purpose_ = "";
};

// Where a context's device memory goes, as offsets into one block (stitch_model_context_memory,
// stitch_context_create_in_memory): the arena, the library workspace, the unfused GEMM chains'
// intermediates (only where the device runs a chain unfused), then each debug tap, each part
// 256-byte aligned. A model with symbolic dims reaches its intermediates through arena slots:
// laid out at the symbols' maxima by stitchc, or, for a context serving smaller maxima
// (stitch_context_create_for), by the runtime for those.
struct ContextLayout {
  static constexpr uint64_t kAlignment = 256;
  uint64_t arena_bytes = 0, workspace_bytes = 0, fallback_bytes = 0;
  uint64_t workspace_offset = 0, fallback_offset = 0;
  std::vector<uint64_t> tap_offsets;
  uint64_t total_bytes = 0;
  // A model with symbolic dims: the most each symbol may be in a run of the context, each slot's
  // offset, and (for smaller maxima than the model's) each slot's bytes at those maxima, which a
  // run must not exceed.
  std::vector<int64_t> max_symbols;
  std::vector<int64_t> arena_offsets;
  std::vector<uint64_t> slot_bytes;
};
struct Model;
// The layout of a context serving runs whose symbols are at most `max_symbols` (one per symbol,
// checked against the model's ranges), or (null) the model's maxima, where stitchc's layout
// serves.
ContextLayout context_layout(const Model& model, const int64_t* max_symbols = nullptr,
                             std::size_t num_symbols = 0);

// The CUDA device that is current while the object lives: the model's device, switched to for
// the duration of a call when the caller's thread has another one current (and switched
// back afterwards). No-op on the host target, which has one device.
class DeviceScope {
public:
  explicit DeviceScope(int device);
  DeviceScope(const DeviceScope&) = delete;
  DeviceScope& operator=(const DeviceScope&) = delete;
  ~DeviceScope();

private:
  int previous_ = -1; // the device to restore, or -1
};

// The device current on this thread (always 0 on the host target).
int current_device();

// A created model: the generated tables and the weights in device memory. Read-only once it
// is in the registry, so that many threads may use it at once.
struct Model {
  const stitch_abi_model* abi = nullptr;
  int device = 0; // where the weights live, and where contexts allocate and run
  DeviceBuffer weights;
  // Per GEMM chain (abi->num_chains), nonzero where this device cannot hold its clusters and
  // it runs unfused (abi->prepare, asked once at creation).
  std::vector<unsigned char> unfused_chains;
  // Per cooperative launch (abi->num_cooperative), its grid on this device
  // (abi->prepare, asked once at creation).
  std::vector<int32_t> cooperative_grids;
  bool runs_unfused_chains() const {
    return std::any_of(unfused_chains.begin(), unfused_chains.end(),
                       [](unsigned char unfused) { return unfused != 0; });
  }
};

struct Context;

// The shapes of one run of a model with symbolic dims (model_runtime_checks.h).
struct RunShapes {
  std::vector<int64_t> symbols;
  std::vector<stitch_abi_tensor> inputs, outputs;
  std::vector<std::size_t> binder;  // per symbol, the input that bound it
  std::vector<int64_t> output_dims; // what the generated output_dims wrote
};

// How a context's runs reach the device: on the CUDA target, the captured CUDA Graph and what
// it was captured for; on the host target, nothing. Defined once per target.
class Launcher {
public:
  explicit Launcher(const Model& model);
  Launcher(const Launcher&) = delete;
  Launcher& operator=(const Launcher&) = delete;
  ~Launcher();

  // Runs the model on `stream` with `buffers` (its stream member is set here): through the
  // context's CUDA Graph, or with `direct` its work enqueued on `stream` as it is (so that a
  // caller's capture of the stream takes it in).
  void run(const Model& model, stitch_abi_buffers buffers, void* stream, bool direct);
  // Blocks until every run started through this launcher has finished.
  void wait_idle();
  // Destroys the launcher's CUDA objects, reporting the first failure (after trying them all).
  void release();

private:
  struct State;
  std::unique_ptr<State> state_;
};

// When the library's last model is destroyed: on the host target, the emulation's worker
// threads stop and the calling thread's cached fiber stacks are unmapped (a process that loads
// many model libraries would otherwise keep each one's threads and stacks); nothing on the
// CUDA target. Defined once per target.
void release_idle_resources();

// What one thread's runs need: the arena, the library workspace and handles, the launcher, and
// the pointer arrays handed to enqueue (sized once, refilled by every run).
struct Context {
  Context() = default;
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;
  ~Context(); // destroys the library handles; the buffers free themselves

  const Model* model = nullptr;
  DeviceBuffer arena;
  DeviceBuffer workspace;
  DeviceBuffer fallback; // the unfused GEMM chains' intermediates (Model::unfused_chains)
  stitch_abi_libraries* libraries = nullptr;
  std::unique_ptr<Launcher> launcher;
  std::vector<void*> inputs;
  std::vector<void*> outputs;
  // Debug taps (a library built with --debug-taps): one buffer per tap, and their pointers
  // as enqueue receives them.
  std::vector<std::unique_ptr<DeviceBuffer>> tap_buffers;
  std::vector<void*> taps;
  bool has_run = false; // a run was enqueued, so the taps hold values
  // A model with symbolic dims: this run's symbol values and resolved tables, the most each
  // symbol may be in this context's runs, the arena's layout (each slot's offset) and, in a
  // context laid out for maxima below the model's, each slot's bytes there (and at this run).
  RunShapes shapes;
  std::vector<int64_t> max_symbols;
  std::vector<int64_t> arena_offsets;
  std::vector<uint64_t> slot_bytes, run_slot_bytes;
};

// Throws STITCH_ERROR_SHAPE_MISMATCH unless this run's symbols (context.shapes, bound) fit the
// context: each at most its maximum there, and, in a context laid out for smaller maxima than
// the model's, each arena slot within the bytes it has there.
void check_run_fits_context(Context& context);

// Runs the generated enqueue on `buffers` and turns a failure into ApiError with the generated
// code's message.
void enqueue_model(const stitch_abi_model& abi, const stitch_abi_buffers& buffers);

} // namespace stitch::runtime
