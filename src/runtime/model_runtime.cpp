// model_runtime.cpp: the entry points of include/stitch/stitch.h, for both targets.
//
// Every entry point runs its body inside `guarded`: the body throws ApiError (or anything
// else) on failure, and guarded turns it into the returned status and the calling thread's
// last-error message "<function>: <message>" (the function as the library exports it: NAME_run
// where it was built with --symbol-prefix NAME). Every handle is looked up in the registry first
// (model_runtime_registry.h), so a destroyed, never-created or foreign handle is an error
// status, never a dereference.
//
// Device memory. stitch_model_create copies the embedded weights to the device once;
// stitch_context_create allocates the context's arena (arena_bytes; for a model with symbolic
// dims, stitch_context_create_for lays it out for smaller maxima) and the workspace library
// calls share (at least stitch_library_workspace_bytes(), at least the model's workspace_bytes),
// creates the library handles and the launcher, and one buffer per debug tap (a library built
// with --debug-taps; the generated code copies each tapped tensor there after its group). Both use
// the device current at stitch_model_create; later calls switch to it for their duration when
// another is current. stitch_model_create also asks the device, once, what the generated code
// leaves to it: which GEMM chains it holds (the others run unfused), how many blocks each
// cooperative (grid-barrier) launch keeps resident, and whether it grants each kernel's shared
// memory (a clear error at creation where it does not).
#include "model_runtime.h"

#include "model_runtime_checks.h"
#include "model_runtime_registry.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <new>
#include <optional>

namespace stitch::runtime {
namespace {

// The message of this thread's last failed call. A plain array: writing it cannot fail, and it
// needs no destructor when the library is unloaded.
thread_local char t_last_error[4096] = "";

// The entry point as the caller named it: `function` (stitch_run, ...) with the library's C API
// prefix (NAME_run for a library built with --symbol-prefix NAME) in place of "stitch".
void write_failure(const char* function, const char* what, const char* message) noexcept {
  constexpr char kDefault[] = "stitch";
  const stitch_abi_model* abi = stitch_generated_model();
  // Only a model of this runtime's ABI has its build info where this runtime looks.
  const char* prefix = abi != nullptr && abi->abi_version == STITCH_ABI_VERSION &&
                               abi->build_info != nullptr &&
                               abi->build_info->symbol_prefix != nullptr
                           ? abi->build_info->symbol_prefix
                           : kDefault;
  const std::size_t own = sizeof(kDefault) - 1;
  if (std::strncmp(function, kDefault, own) == 0 && function[own] == '_')
    std::snprintf(t_last_error, sizeof(t_last_error), "%s%s: %s%s", prefix, function + own, what,
                  message);
  else
    std::snprintf(t_last_error, sizeof(t_last_error), "%s: %s%s", function, what, message);
}

stitch_status record_failure(const char* function, stitch_status status,
                             const char* message) noexcept {
  write_failure(function, "", message);
  return status;
}

template <typename Body> stitch_status guarded(const char* function, Body&& body) noexcept {
  try {
    body();
    return STITCH_OK;
  } catch (const ApiError& error) {
    return record_failure(function, error.status(), error.what());
  } catch (const std::bad_alloc&) {
    return record_failure(function, STITCH_ERROR_OUT_OF_MEMORY, "out of host memory");
  } catch (const std::exception& error) {
    write_failure(function, "unexpected exception: ", error.what());
    return STITCH_ERROR_INTERNAL;
  } catch (...) {
    return record_failure(function, STITCH_ERROR_INTERNAL, "unexpected unknown exception");
  }
}

// Turns a stitch_library.h status and message into ApiError.
void check_library(int32_t status, const char* message) {
  if (status == STITCH_OK) return;
  const std::string detail = message[0] != '\0' ? message : "(no message)";
  if (status < STITCH_ERROR_INVALID_ARGUMENT || status > STITCH_ERROR_INTERNAL)
    fail(STITCH_ERROR_INTERNAL, "unknown library status " + std::to_string(status) + ": " + detail);
  fail(static_cast<stitch_status>(status), detail);
}

void require_out(const void* pointer, const char* name) {
  if (pointer == nullptr) fail(STITCH_ERROR_INVALID_ARGUMENT, std::string(name) + " is null");
}

const stitch_abi_tensor& tensor_at(const stitch_abi_tensor* table, int32_t count, std::size_t index,
                                   const char* kind) {
  const auto size = static_cast<std::size_t>(count);
  if (index >= size)
    fail(STITCH_ERROR_INVALID_ARGUMENT, std::string(kind) + " index " + std::to_string(index) +
                                            " is out of range: the model has " +
                                            std::to_string(size) + " " + kind +
                                            (size == 1 ? "" : "s"));
  return table[index];
}

const stitch_abi_tap& tap_at(const stitch_abi_model& abi, std::size_t index) {
  const auto count = static_cast<std::size_t>(abi.num_taps);
  if (count == 0)
    fail(STITCH_ERROR_INVALID_ARGUMENT, "the model has no debug taps (build it with stitchc "
                                        "--debug-taps)");
  if (index >= count)
    fail(STITCH_ERROR_INVALID_ARGUMENT,
         "tap index " + std::to_string(index) + " is out of range: the model has " +
             std::to_string(count) + " tap" + (count == 1 ? "" : "s"));
  return abi.taps[index];
}

std::unique_ptr<Model> create_model() {
  const stitch_abi_model* abi = stitch_generated_model();
  check_generated_model(abi);
  auto model = std::make_unique<Model>();
  model->abi = abi;
  model->device = current_device();
  // What depends on this device (which GEMM chains it holds, each cooperative launch's grid,
  // the kernels' shared memory): asked once, before anything is allocated.
  model->unfused_chains.assign(static_cast<std::size_t>(abi->num_chains), 0);
  model->cooperative_grids.assign(static_cast<std::size_t>(abi->num_cooperative), 0);
  if (abi->prepare != nullptr) {
    char message[1024] = {};
    check_library(abi->prepare(model->unfused_chains.data(), model->cooperative_grids.data(),
                               message, sizeof(message)),
                  message);
  }
  model->weights.allocate(abi->weights_bytes, "weights");
  if (abi->weights_bytes > 0) {
    check_cuda(cudaMemcpy(model->weights.get(), abi->weights,
                          static_cast<std::size_t>(abi->weights_bytes), cudaMemcpyHostToDevice),
               "cudaMemcpy of " + std::to_string(abi->weights_bytes) +
                   " bytes of weights to the device");
    // A copy from pageable memory may return before its DMA has landed, and a run on a
    // non-blocking stream would not wait for it: wait here, once.
    check_cuda(cudaStreamSynchronize(nullptr), "cudaStreamSynchronize after copying the weights");
  }
  return model;
}

// The maxima a context serves: the model's (null), or those given to stitch_context_create_for.
struct Maxima {
  const int64_t* symbols = nullptr;
  std::size_t count = 0;
};

// The caller's maxima (stitch_context_create_for, stitch_model_context_memory_for): null only
// where there are none (a model of fixed shapes, num_symbols 0).
Maxima given_maxima(const int64_t* max_symbols, size_t num_symbols) {
  static const int64_t kNone = 0;
  if (num_symbols > 0) require_out(max_symbols, "max_symbols");
  return {num_symbols > 0 ? max_symbols : &kNone, num_symbols};
}

// A context on its own allocations, or, with `memory`, on parts of that block (`bytes` long).
std::unique_ptr<Context> create_context(const Model& model, void* memory, uint64_t bytes,
                                        Maxima maxima) {
  const stitch_abi_model& abi = *model.abi;
  ContextLayout layout = context_layout(model, maxima.symbols, maxima.count);
  if (memory != nullptr) {
    if (reinterpret_cast<std::uintptr_t>(memory) % ContextLayout::kAlignment != 0)
      fail(STITCH_ERROR_INVALID_ARGUMENT, "memory is not 256-byte aligned");
    if (bytes < layout.total_bytes)
      fail(STITCH_ERROR_INVALID_ARGUMENT,
           "memory is " + std::to_string(bytes) + " bytes but a context needs " +
               std::to_string(layout.total_bytes) +
               (maxima.symbols != nullptr ? " (stitch_model_context_memory_for)"
                                          : " (stitch_model_context_memory)"));
  }
  unsigned char* const block = static_cast<unsigned char*>(memory);
  const auto part = [&](DeviceBuffer& buffer, uint64_t offset, uint64_t size, const char* purpose) {
    if (block == nullptr)
      buffer.allocate(size, purpose);
    else
      buffer.borrow(size > 0 ? block + offset : nullptr, purpose);
  };
  auto context = std::make_unique<Context>();
  context->model = &model;
  context->inputs.resize(static_cast<std::size_t>(abi.num_inputs));
  context->outputs.resize(static_cast<std::size_t>(abi.num_outputs));
  context->max_symbols = std::move(layout.max_symbols);
  context->arena_offsets = std::move(layout.arena_offsets);
  context->slot_bytes = std::move(layout.slot_bytes);
  part(context->arena, 0, layout.arena_bytes, "arena");
  part(context->workspace, layout.workspace_offset, layout.workspace_bytes, "library workspace");
  part(context->fallback, layout.fallback_offset, layout.fallback_bytes,
       "unfused GEMM chains' intermediates");
  char message[1024] = {};
  check_library(stitch_libraries_create(&context->libraries, message, sizeof(message)), message);
  for (int32_t t = 0; t < abi.num_taps; ++t) {
    context->tap_buffers.push_back(std::make_unique<DeviceBuffer>());
    part(*context->tap_buffers.back(), layout.tap_offsets[static_cast<std::size_t>(t)],
         abi.taps[t].tensor.bytes, "debug tap");
    context->taps.push_back(context->tap_buffers.back()->get());
  }
  context->launcher = std::make_unique<Launcher>(model);
  return context;
}

// A new context of `model` (on `memory` when not null) in the registry; `out_context` is
// checked and cleared first, so that it is null whenever creating fails.
stitch_context* add_context(stitch_model* model, void* memory, uint64_t bytes,
                            stitch_context** out_context, Maxima maxima = {}) {
  require_out(out_context, "out_context");
  *out_context = nullptr;
  HandleRegistry& registry = HandleRegistry::instance();
  const Model& live = registry.model(model);
  const DeviceScope scope(live.device);
  return registry.add_context(model, create_context(live, memory, bytes, maxima));
}

// The index of the tensor named `name` in `table`.
std::size_t index_of(const stitch_abi_tensor* table, int32_t count, const char* name,
                     const char* kind) {
  require_out(name, "name");
  for (int32_t i = 0; i < count; ++i)
    if (std::strcmp(table[i].name, name) == 0) return static_cast<std::size_t>(i);
  std::string names;
  for (int32_t i = 0; i < count && i < 16; ++i)
    names += std::string(i > 0 ? ", '" : "'") + table[i].name + "'";
  fail(STITCH_ERROR_INVALID_ARGUMENT, std::string("the model has no ") + kind + " named '" + name +
                                          "' (its " + kind +
                                          "s: " + (names.empty() ? "none" : names) + ")");
}

// Frees everything the context owns, going on past failures (a sticky CUDA error fails every
// call), and throws the first failure afterwards.
void destroy_context(Context& context) {
  std::optional<ApiError> first;
  const auto attempt = [&](auto&& step) {
    try {
      step();
    } catch (const ApiError& error) {
      if (!first) first = error;
    }
  };
  // The arena must outlive the context's last run, which may still be executing.
  attempt([&] { context.launcher->wait_idle(); });
  attempt([&] { context.launcher->release(); });
  stitch_libraries_destroy(context.libraries);
  context.libraries = nullptr;
  attempt([&] { context.workspace.release(); });
  attempt([&] { context.fallback.release(); });
  attempt([&] { context.arena.release(); });
  for (std::unique_ptr<DeviceBuffer>& tap : context.tap_buffers)
    attempt([&] { tap->release(); });
  if (first) throw *first;
}

} // namespace

Context::~Context() { stitch_libraries_destroy(libraries); }

} // namespace stitch::runtime

using namespace stitch::runtime;

extern "C" {

const char* stitch_target(void) {
  const stitch_abi_model* abi = stitch_generated_model();
  return abi != nullptr && abi->target != nullptr ? abi->target : kRuntimeTarget;
}

int stitch_api_version(void) { return STITCH_API_VERSION; }

stitch_status stitch_library_build_info(stitch_build_info* out_info) {
  return guarded("stitch_library_build_info", [&] {
    require_out(out_info, "out_info");
    const stitch_abi_model* abi = stitch_generated_model();
    check_generated_model(abi);
    const stitch_abi_build_info& info = *abi->build_info;
    *out_info = {info.stitchc_version, info.model_sha256, info.model_file,
                 info.target,          info.archs,        info.planner,
                 info.precision,       info.flags,        info.symbol_prefix};
  });
}

stitch_status stitch_model_create(stitch_model** out_model) {
  return guarded("stitch_model_create", [&] {
    require_out(out_model, "out_model");
    *out_model = nullptr;
    std::unique_ptr<Model> model = create_model();
    *out_model = HandleRegistry::instance().add_model(std::move(model));
  });
}

stitch_status stitch_model_destroy(stitch_model* model) {
  return guarded("stitch_model_destroy", [&] {
    std::unique_ptr<Model> owned = HandleRegistry::instance().take_model(model);
    owned->weights.release();
    owned.reset();
    if (HandleRegistry::instance().empty()) release_idle_resources();
  });
}

stitch_status stitch_model_num_inputs(const stitch_model* model, size_t* out_count) {
  return guarded("stitch_model_num_inputs", [&] {
    const Model& live = HandleRegistry::instance().model(model);
    require_out(out_count, "out_count");
    *out_count = static_cast<size_t>(live.abi->num_inputs);
  });
}

stitch_status stitch_model_num_outputs(const stitch_model* model, size_t* out_count) {
  return guarded("stitch_model_num_outputs", [&] {
    const Model& live = HandleRegistry::instance().model(model);
    require_out(out_count, "out_count");
    *out_count = static_cast<size_t>(live.abi->num_outputs);
  });
}

stitch_status stitch_model_input(const stitch_model* model, size_t index,
                                 stitch_tensor_info* out_info) {
  return guarded("stitch_model_input", [&] {
    const Model& live = HandleRegistry::instance().model(model);
    require_out(out_info, "out_info");
    *out_info = tensor_info(tensor_at(live.abi->inputs, live.abi->num_inputs, index, "input"));
  });
}

stitch_status stitch_model_output(const stitch_model* model, size_t index,
                                  stitch_tensor_info* out_info) {
  return guarded("stitch_model_output", [&] {
    const Model& live = HandleRegistry::instance().model(model);
    require_out(out_info, "out_info");
    *out_info = tensor_info(tensor_at(live.abi->outputs, live.abi->num_outputs, index, "output"));
  });
}

stitch_status stitch_model_num_taps(const stitch_model* model, size_t* out_count) {
  return guarded("stitch_model_num_taps", [&] {
    const Model& live = HandleRegistry::instance().model(model);
    require_out(out_count, "out_count");
    *out_count = static_cast<size_t>(live.abi->num_taps);
  });
}

stitch_status stitch_model_tap(const stitch_model* model, size_t index, stitch_tap_info* out_info) {
  return guarded("stitch_model_tap", [&] {
    const Model& live = HandleRegistry::instance().model(model);
    require_out(out_info, "out_info");
    const stitch_abi_tap& tap = tap_at(*live.abi, index);
    *out_info = stitch_tap_info{tensor_info(tap.tensor), tap.group, tap.node};
  });
}

stitch_status stitch_context_create(stitch_model* model, stitch_context** out_context) {
  return guarded("stitch_context_create",
                 [&] { *out_context = add_context(model, nullptr, 0, out_context); });
}

stitch_status stitch_context_create_in_memory(stitch_model* model, void* memory, uint64_t bytes,
                                              stitch_context** out_context) {
  return guarded("stitch_context_create_in_memory", [&] {
    if (out_context != nullptr) *out_context = nullptr;
    require_out(memory, "memory");
    *out_context = add_context(model, memory, bytes, out_context);
  });
}

stitch_status stitch_context_create_for(stitch_model* model, const int64_t* max_symbols,
                                        size_t num_symbols, void* memory, uint64_t bytes,
                                        stitch_context** out_context) {
  return guarded("stitch_context_create_for", [&] {
    if (out_context != nullptr) *out_context = nullptr;
    *out_context =
        add_context(model, memory, bytes, out_context, given_maxima(max_symbols, num_symbols));
  });
}

stitch_status stitch_model_input_index(const stitch_model* model, const char* name,
                                       size_t* out_index) {
  return guarded("stitch_model_input_index", [&] {
    const Model& live = HandleRegistry::instance().model(model);
    require_out(out_index, "out_index");
    *out_index = index_of(live.abi->inputs, live.abi->num_inputs, name, "input");
  });
}

stitch_status stitch_model_output_index(const stitch_model* model, const char* name,
                                        size_t* out_index) {
  return guarded("stitch_model_output_index", [&] {
    const Model& live = HandleRegistry::instance().model(model);
    require_out(out_index, "out_index");
    *out_index = index_of(live.abi->outputs, live.abi->num_outputs, name, "output");
  });
}

stitch_status stitch_model_device(const stitch_model* model, int* out_device) {
  return guarded("stitch_model_device", [&] {
    const Model& live = HandleRegistry::instance().model(model);
    require_out(out_device, "out_device");
    *out_device = live.device;
  });
}

stitch_status stitch_model_context_memory(const stitch_model* model, uint64_t* out_bytes) {
  return guarded("stitch_model_context_memory", [&] {
    const Model& live = HandleRegistry::instance().model(model);
    require_out(out_bytes, "out_bytes");
    *out_bytes = context_layout(live).total_bytes;
  });
}

stitch_status stitch_model_context_memory_for(const stitch_model* model, const int64_t* max_symbols,
                                              size_t num_symbols, uint64_t* out_bytes) {
  return guarded("stitch_model_context_memory_for", [&] {
    const Model& live = HandleRegistry::instance().model(model);
    require_out(out_bytes, "out_bytes");
    const Maxima maxima = given_maxima(max_symbols, num_symbols);
    *out_bytes = context_layout(live, maxima.symbols, maxima.count).total_bytes;
  });
}

stitch_status stitch_model_num_symbols(const stitch_model* model, size_t* out_count) {
  return guarded("stitch_model_num_symbols", [&] {
    const Model& live = HandleRegistry::instance().model(model);
    require_out(out_count, "out_count");
    *out_count = static_cast<size_t>(live.abi->num_symbols);
  });
}

stitch_status stitch_model_symbol(const stitch_model* model, size_t index,
                                  stitch_symbol_info* out_info) {
  return guarded("stitch_model_symbol", [&] {
    const Model& live = HandleRegistry::instance().model(model);
    require_out(out_info, "out_info");
    if (index >= static_cast<size_t>(live.abi->num_symbols))
      fail(STITCH_ERROR_INVALID_ARGUMENT,
           "symbol index " + std::to_string(index) + " is out of range (the model has " +
               std::to_string(live.abi->num_symbols) + " symbolic dims)");
    const stitch_abi_symbol& symbol = live.abi->symbols[index];
    *out_info = stitch_symbol_info{symbol.name, symbol.min, symbol.max};
  });
}

stitch_status stitch_model_input_symbols(const stitch_model* model, size_t index,
                                         int32_t* out_symbols) {
  return guarded("stitch_model_input_symbols", [&] {
    const Model& live = HandleRegistry::instance().model(model);
    require_out(out_symbols, "out_symbols");
    const stitch_abi_tensor& input =
        tensor_at(live.abi->inputs, live.abi->num_inputs, index, "input");
    for (int32_t d = 0; d < input.rank; ++d)
      out_symbols[d] = input.dims[d] == -1 && live.abi->num_symbols > 0 ? input.symbols[d] : -1;
  });
}

stitch_status stitch_model_output_symbols(const stitch_model* model, size_t index,
                                          int32_t* out_symbols) {
  return guarded("stitch_model_output_symbols", [&] {
    const Model& live = HandleRegistry::instance().model(model);
    require_out(out_symbols, "out_symbols");
    const stitch_abi_tensor& output =
        tensor_at(live.abi->outputs, live.abi->num_outputs, index, "output");
    for (int32_t d = 0; d < output.rank; ++d)
      out_symbols[d] = output.dims[d] != -1 || live.abi->num_symbols == 0 ? -1
                       : output.symbols[d] >= 0                           ? output.symbols[d]
                                                                          : -2;
  });
}

stitch_status stitch_model_output_shapes(const stitch_model* model, const stitch_tensor* inputs,
                                         size_t num_inputs, stitch_tensor_info* out_outputs,
                                         size_t num_outputs) {
  return guarded("stitch_model_output_shapes", [&] {
    const Model& live = HandleRegistry::instance().model(model);
    const stitch_abi_model& abi = *live.abi;
    if (num_outputs != static_cast<size_t>(abi.num_outputs))
      fail(STITCH_ERROR_INVALID_ARGUMENT, "num_outputs is " + std::to_string(num_outputs) +
                                              " but the model has " +
                                              std::to_string(abi.num_outputs) + " outputs");
    if (num_outputs > 0) require_out(out_outputs, "out_outputs");
    if (abi.num_symbols == 0) {
      check_input_shapes(abi, inputs, num_inputs);
      for (size_t o = 0; o < num_outputs; ++o)
        out_outputs[o] = tensor_info(abi.outputs[o]);
      return;
    }
    RunShapes shapes;
    bind_run_shapes(abi, inputs, num_inputs, shapes);
    check_input_shapes(abi, inputs, num_inputs, &shapes);
    for (size_t o = 0; o < num_outputs; ++o)
      out_outputs[o] = tensor_info(shapes.outputs[o]);
  });
}

stitch_status stitch_context_destroy(stitch_context* context) {
  return guarded("stitch_context_destroy", [&] {
    std::unique_ptr<Context> owned = HandleRegistry::instance().take_context(context);
    const DeviceScope scope(owned->model->device);
    destroy_context(*owned);
  });
}

} // extern "C"

namespace {

// stitch_run and stitch_run_with_options, `function` naming the one called in messages.
stitch_status run_context(const char* function, stitch_context* context,
                          const stitch_tensor* inputs, size_t num_inputs,
                          const stitch_tensor* outputs, size_t num_outputs, void* stream,
                          const stitch_run_options* options) {
  return guarded(function, [&] {
    const uint32_t flags = options != nullptr ? options->flags : 0u;
    if ((flags & ~STITCH_RUN_NO_GRAPH) != 0)
      fail(STITCH_ERROR_INVALID_ARGUMENT,
           "unknown run option flags " + std::to_string(flags & ~STITCH_RUN_NO_GRAPH));
    Context& live = HandleRegistry::instance().context(context);
    const Model& model = *live.model;
    const bool symbolic = model.abi->num_symbols > 0;
    if (symbolic) bind_run_shapes(*model.abi, inputs, num_inputs, live.shapes);
    check_run_tensors(*model.abi, inputs, num_inputs, outputs, num_outputs,
                      symbolic ? &live.shapes : nullptr);
    if (symbolic) check_run_fits_context(live);
    for (size_t i = 0; i < num_inputs; ++i)
      live.inputs[i] = inputs[i].data;
    for (size_t o = 0; o < num_outputs; ++o)
      live.outputs[o] = outputs[o].data;
    stitch_abi_buffers buffers{};
    buffers.inputs = live.inputs.data();
    buffers.outputs = live.outputs.data();
    buffers.arena = static_cast<unsigned char*>(live.arena.get());
    buffers.weights = static_cast<const unsigned char*>(model.weights.get());
    buffers.workspace = live.workspace.get();
    buffers.libraries = live.libraries;
    buffers.taps = live.taps.empty() ? nullptr : live.taps.data();
    buffers.unfused_chains = model.unfused_chains.empty() ? nullptr : model.unfused_chains.data();
    buffers.fallback = static_cast<unsigned char*>(live.fallback.get());
    buffers.cooperative_grids =
        model.cooperative_grids.empty() ? nullptr : model.cooperative_grids.data();
    buffers.symbols = symbolic ? live.shapes.symbols.data() : nullptr;
    buffers.arena_offsets = live.arena_offsets.empty() ? nullptr : live.arena_offsets.data();
    const DeviceScope scope(model.device);
    live.launcher->run(model, buffers, stream, (flags & STITCH_RUN_NO_GRAPH) != 0);
    live.has_run = true;
  });
}

} // namespace

extern "C" {

stitch_status stitch_run(stitch_context* context, const stitch_tensor* inputs, size_t num_inputs,
                         const stitch_tensor* outputs, size_t num_outputs, void* stream) {
  return run_context("stitch_run", context, inputs, num_inputs, outputs, num_outputs, stream,
                     nullptr);
}

stitch_status stitch_run_with_options(stitch_context* context, const stitch_tensor* inputs,
                                      size_t num_inputs, const stitch_tensor* outputs,
                                      size_t num_outputs, void* stream,
                                      const stitch_run_options* options) {
  return run_context("stitch_run_with_options", context, inputs, num_inputs, outputs, num_outputs,
                     stream, options);
}

stitch_status stitch_context_read_tap(stitch_context* context, size_t index, void* data,
                                      uint64_t bytes) {
  return guarded("stitch_context_read_tap", [&] {
    Context& live = HandleRegistry::instance().context(context);
    const stitch_abi_tap& tap = tap_at(*live.model->abi, index);
    require_out(data, "data");
    if (bytes < tap.tensor.bytes)
      fail(STITCH_ERROR_SHAPE_MISMATCH, "tap " + std::to_string(index) + " ('" + tap.tensor.name +
                                            "') is " + std::to_string(tap.tensor.bytes) +
                                            " bytes but the buffer is " + std::to_string(bytes));
    if (!live.has_run)
      fail(STITCH_ERROR_INVALID_ARGUMENT,
           "the context has not run yet, so its taps hold no values");
    const DeviceScope scope(live.model->device);
    live.launcher->wait_idle();
    if (tap.tensor.bytes > 0)
      check_cuda(cudaMemcpy(data, live.taps[index], static_cast<std::size_t>(tap.tensor.bytes),
                            cudaMemcpyDeviceToHost),
                 "cudaMemcpy of tap " + std::to_string(index) + " to the host");
  });
}

const char* stitch_status_name(stitch_status status) {
  switch (static_cast<int>(status)) {
  case STITCH_OK:
    return "STITCH_OK";
  case STITCH_ERROR_INVALID_ARGUMENT:
    return "STITCH_ERROR_INVALID_ARGUMENT";
  case STITCH_ERROR_SHAPE_MISMATCH:
    return "STITCH_ERROR_SHAPE_MISMATCH";
  case STITCH_ERROR_CUDA:
    return "STITCH_ERROR_CUDA";
  case STITCH_ERROR_CUBLAS:
    return "STITCH_ERROR_CUBLAS";
  case STITCH_ERROR_CUDNN:
    return "STITCH_ERROR_CUDNN";
  case STITCH_ERROR_OUT_OF_MEMORY:
    return "STITCH_ERROR_OUT_OF_MEMORY";
  case STITCH_ERROR_INTERNAL:
    return "STITCH_ERROR_INTERNAL";
  }
  return "STITCH_ERROR_UNKNOWN_STATUS";
}

const char* stitch_last_error(void) { return t_last_error; }

} // extern "C"
