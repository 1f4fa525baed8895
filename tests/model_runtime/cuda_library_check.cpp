// cuda_library_check.cpp: checks the affine model linked with stitch_runtime_cuda (the library
// the stitch_model_runtime_cuda_link test builds), loaded with dlopen.
//
// Everywhere: the library loads with all its symbols resolved, exports the stitch.h API but not
// stitch_generated_model, and reports target "cuda" and the API version.
// Without a usable CUDA device: stitch_model_create fails cleanly with STITCH_ERROR_CUDA naming
// the CUDA call.
// With one: runs that exercise CUDA Graph capture, replay after the inputs change in place,
// recapture for new pointers, the legacy NULL stream and cudaStreamPerThread, a host pointer
// refused, a failing launch reported and recovered from, runs without the context's graph
// (STITCH_RUN_NO_GRAPH) directly and captured into the application's own graph and replayed,
// and double destroy; every output is
// compared bitwise with affine_reference. (Written without a GPU at hand: the device half had
// not been run when it was added.)
//
// Usage: stitch_model_runtime_cuda_check <path of the CUDA model library>
#include "affine_model.h"

#include "stitch/stitch.h"

#include <cuda_runtime_api.h>
#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

namespace {

int g_failures = 0;

void expect(bool condition, const std::string& what) {
  if (condition) return;
  std::fprintf(stderr, "FAILED: %s\n", what.c_str());
  ++g_failures;
}

struct Api {
  const char* (*target)();
  int (*api_version)();
  stitch_status (*model_create)(stitch_model**);
  stitch_status (*model_destroy)(stitch_model*);
  stitch_status (*context_create)(stitch_model*, stitch_context**);
  stitch_status (*context_destroy)(stitch_context*);
  stitch_status (*run)(stitch_context*, const stitch_tensor*, size_t, const stitch_tensor*, size_t,
                       void*);
  stitch_status (*run_with_options)(stitch_context*, const stitch_tensor*, size_t,
                                    const stitch_tensor*, size_t, void*, const stitch_run_options*);
  const char* (*last_error)();
  void (*set_fault)(int);
};

template <typename Function> void resolve(void* library, const char* name, Function* out) {
  *out = reinterpret_cast<Function>(dlsym(library, name));
  expect(*out != nullptr, std::string("the library exports ") + name);
}

bool same_bytes(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

float* allocate(std::size_t bytes) {
  void* data = nullptr;
  expect(cudaMalloc(&data, bytes) == cudaSuccess, "cudaMalloc of " + std::to_string(bytes));
  return static_cast<float*>(data);
}

// One set of device tensors for the model.
struct DeviceTensors {
  float* x;
  float* y;
  float* z;
  DeviceTensors()
      : x(allocate(affine::kInputBytes)), y(allocate(affine::kInputBytes)),
        z(allocate(affine::kSumBytes)) {}
  ~DeviceTensors() {
    cudaFree(x);
    cudaFree(y);
    cudaFree(z);
  }
};

const int64_t kInputDims[] = {affine::kRows, affine::kCols};
const int64_t kSumDims[] = {affine::kRows};

stitch_status run_on(const Api& api, stitch_context* context, void* x, void* y, void* z,
                     cudaStream_t stream) {
  const stitch_tensor inputs[] = {{x, STITCH_FLOAT32, 2, kInputDims, affine::kInputBytes}};
  const stitch_tensor outputs[] = {{y, STITCH_FLOAT32, 2, kInputDims, affine::kInputBytes},
                                   {z, STITCH_FLOAT32, 1, kSumDims, affine::kSumBytes}};
  return api.run(context, inputs, 1, outputs, 2, stream);
}

// Fills x with values from `seed` and returns what the outputs must be.
void fill_input(DeviceTensors& tensors, uint32_t seed, std::vector<float>& expected_y,
                std::vector<float>& expected_z, const std::string& what) {
  std::mt19937 generator(seed);
  std::uniform_real_distribution<float> value(-4.0f, 4.0f);
  std::vector<float> x(affine::kRows * affine::kCols);
  for (float& element : x)
    element = value(generator);
  expect(cudaMemcpy(tensors.x, x.data(), affine::kInputBytes, cudaMemcpyHostToDevice) ==
             cudaSuccess,
         what + ": copy x");
  expect(cudaMemset(tensors.y, 0xFF, affine::kInputBytes) == cudaSuccess, what + ": clear y");
  expect(cudaMemset(tensors.z, 0xFF, affine::kSumBytes) == cudaSuccess, what + ": clear z");
  expected_y.resize(x.size());
  expected_z.resize(affine::kRows);
  affine::affine_reference(x.data(), expected_y.data(), expected_z.data());
}

void compare_outputs(const DeviceTensors& tensors, const std::vector<float>& expected_y,
                     const std::vector<float>& expected_z, const std::string& what) {
  std::vector<float> y(expected_y.size()), z(expected_z.size());
  expect(cudaMemcpy(y.data(), tensors.y, affine::kInputBytes, cudaMemcpyDeviceToHost) ==
             cudaSuccess,
         what + ": copy y back");
  expect(cudaMemcpy(z.data(), tensors.z, affine::kSumBytes, cudaMemcpyDeviceToHost) == cudaSuccess,
         what + ": copy z back");
  expect(same_bytes(y, expected_y), what + ": y equals the reference");
  expect(same_bytes(z, expected_z), what + ": z equals the reference");
}

// Fills x with fresh values, runs on `stream`, and compares both outputs with the reference.
void run_and_compare(const Api& api, stitch_context* context, DeviceTensors& tensors,
                     cudaStream_t stream, uint32_t seed, const std::string& what) {
  std::vector<float> expected_y, expected_z;
  fill_input(tensors, seed, expected_y, expected_z, what);
  expect(cudaDeviceSynchronize() == cudaSuccess, what + ": synchronize before the run");
  const stitch_status status = run_on(api, context, tensors.x, tensors.y, tensors.z, stream);
  expect(status == STITCH_OK, what + ": stitch_run: " + api.last_error());
  expect(cudaStreamSynchronize(stream) == cudaSuccess, what + ": synchronize after the run");
  compare_outputs(tensors, expected_y, expected_z, what);
}

// STITCH_RUN_NO_GRAPH: a run captured into the application's own CUDA Graph (global capture
// mode, the strictest) replays with new input values, and a direct run outside a capture works.
void check_application_capture(const Api& api, stitch_context* context, DeviceTensors& tensors,
                               cudaStream_t stream) {
  const stitch_run_options direct{STITCH_RUN_NO_GRAPH};
  const stitch_tensor inputs[] = {{tensors.x, STITCH_FLOAT32, 2, kInputDims, affine::kInputBytes}};
  const stitch_tensor outputs[] = {{tensors.y, STITCH_FLOAT32, 2, kInputDims, affine::kInputBytes},
                                   {tensors.z, STITCH_FLOAT32, 1, kSumDims, affine::kSumBytes}};
  std::vector<float> expected_y, expected_z;

  fill_input(tensors, 11, expected_y, expected_z, "direct run");
  expect(api.run_with_options(context, inputs, 1, outputs, 2, stream, &direct) == STITCH_OK,
         std::string("direct run: ") + api.last_error());
  expect(cudaStreamSynchronize(stream) == cudaSuccess, "direct run: synchronize");
  compare_outputs(tensors, expected_y, expected_z, "direct run");

  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
  expect(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal) == cudaSuccess,
         "application capture: begin");
  const stitch_status captured =
      api.run_with_options(context, inputs, 1, outputs, 2, stream, &direct);
  expect(cudaStreamEndCapture(stream, &graph) == cudaSuccess, "application capture: end");
  expect(captured == STITCH_OK,
         std::string("run inside the application's capture: ") + api.last_error());
  if (graph == nullptr) return;
  expect(cudaGraphInstantiate(&exec, graph, 0) == cudaSuccess, "application graph: instantiate");
  for (uint32_t seed : {12u, 13u}) {
    const std::string what = "application graph replay, seed " + std::to_string(seed);
    fill_input(tensors, seed, expected_y, expected_z, what);
    expect(cudaGraphLaunch(exec, stream) == cudaSuccess, what + ": launch");
    expect(cudaStreamSynchronize(stream) == cudaSuccess, what + ": synchronize");
    compare_outputs(tensors, expected_y, expected_z, what);
  }
  if (exec != nullptr) cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
}

void check_on_device(const Api& api) {
  stitch_model* model = nullptr;
  stitch_context* context = nullptr;
  expect(api.model_create(&model) == STITCH_OK, std::string("model create: ") + api.last_error());
  expect(api.context_create(model, &context) == STITCH_OK,
         std::string("context create: ") + api.last_error());
  if (g_failures != 0) return;

  cudaStream_t stream = nullptr;
  expect(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking) == cudaSuccess,
         "cudaStreamCreateWithFlags");
  {
    DeviceTensors a, b;
    run_and_compare(api, context, a, stream, 1, "first run (capture)");
    run_and_compare(api, context, a, stream, 2, "same pointers, new values (replay)");
    run_and_compare(api, context, b, stream, 3, "new pointers (recapture and update)");
    run_and_compare(api, context, a, nullptr, 4, "legacy NULL stream, new pointers");
    run_and_compare(api, context, a, nullptr, 5, "legacy NULL stream, replay");
    run_and_compare(api, context, b, cudaStreamPerThread, 6, "cudaStreamPerThread");

    std::vector<float> host(affine::kRows * affine::kCols + 16);
    auto* aligned_host =
        reinterpret_cast<float*>((reinterpret_cast<uintptr_t>(host.data()) + 15) / 16 * 16);
    const stitch_status refused = run_on(api, context, aligned_host, a.y, a.z, stream);
    expect(refused == STITCH_ERROR_INVALID_ARGUMENT &&
               std::strstr(api.last_error(), "is not device memory") != nullptr,
           std::string("plain host memory refused: ") + api.last_error());

    api.set_fault(affine::kBadLaunch);
    const stitch_status failed = run_on(api, context, b.x, a.y, b.z, stream);
    api.set_fault(affine::kNoFault);
    expect(failed == STITCH_ERROR_CUDA &&
               std::strstr(api.last_error(), "affine_and_weigh") != nullptr,
           std::string("failing launch reported: ") + api.last_error());
    run_and_compare(api, context, a, stream, 7, "after a failed capture");
    check_application_capture(api, context, b, stream);
    run_and_compare(api, context, a, stream, 8, "the context's own graph after direct runs");
  }
  expect(api.context_destroy(context) == STITCH_OK,
         std::string("context destroy: ") + api.last_error());
  expect(api.context_destroy(context) == STITCH_ERROR_INVALID_ARGUMENT, "double context destroy");
  expect(api.model_destroy(model) == STITCH_OK, std::string("model destroy: ") + api.last_error());
  expect(api.model_destroy(model) == STITCH_ERROR_INVALID_ARGUMENT, "double model destroy");
  cudaStreamDestroy(stream);
}

} // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s <CUDA model library>\n", argv[0]);
    return 2;
  }
  void* library = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (library == nullptr) {
    std::fprintf(stderr, "FAILED: dlopen %s: %s\n", argv[1], dlerror());
    return 1;
  }
  Api api{};
  resolve(library, "stitch_target", &api.target);
  resolve(library, "stitch_api_version", &api.api_version);
  resolve(library, "stitch_model_create", &api.model_create);
  resolve(library, "stitch_model_destroy", &api.model_destroy);
  resolve(library, "stitch_context_create", &api.context_create);
  resolve(library, "stitch_context_destroy", &api.context_destroy);
  resolve(library, "stitch_run", &api.run);
  resolve(library, "stitch_run_with_options", &api.run_with_options);
  resolve(library, "stitch_last_error", &api.last_error);
  resolve(library, "affine_model_set_fault", &api.set_fault);
  for (const char* name : {"stitch_model_num_inputs", "stitch_model_num_outputs",
                           "stitch_model_input", "stitch_model_output", "stitch_status_name"})
    expect(dlsym(library, name) != nullptr, std::string("the library exports ") + name);
  expect(dlsym(library, "stitch_generated_model") == nullptr,
         "stitch_generated_model stays hidden");
  if (g_failures != 0) return 1;

  expect(std::string(api.target()) == "cuda", "stitch_target() is \"cuda\"");
  expect(api.api_version() == STITCH_API_VERSION, "stitch_api_version()");

  int devices = 0;
  const cudaError_t probe = cudaGetDeviceCount(&devices);
  if (probe != cudaSuccess || devices == 0) {
    stitch_model* model = reinterpret_cast<stitch_model*>(&devices);
    const stitch_status status = api.model_create(&model);
    const std::string message = api.last_error();
    expect(status == STITCH_ERROR_CUDA, "without a device, stitch_model_create is "
                                        "STITCH_ERROR_CUDA: " +
                                            message);
    expect(model == nullptr, "without a device, *out_model is null");
    expect(message.rfind("stitch_model_create: cuda", 0) == 0 &&
               message.find(" failed: cuda") != std::string::npos,
           "the message names the CUDA call and its error: " + message);
    std::printf("no usable CUDA device (%s); checked the library and a clean create failure: %s\n",
                cudaGetErrorName(probe), message.c_str());
  } else {
    check_on_device(api);
    std::printf("ran the CUDA model library on a device\n");
  }
  if (g_failures != 0) return 1;
  std::printf("CUDA model library checks passed\n");
  return 0;
}
