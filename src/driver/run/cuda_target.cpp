// The CUDA target, through the CUDA runtime loaded at run time. Only the dozen entry points
// below are used, declared here with the runtime's C ABI (handles as void*, errors as int),
// so no CUDA header or library is needed to build stitch-run.
//
// Inputs are copied with cudaMemcpy on the legacy stream and the device is synchronized
// before the first run, so a run on the tool's non-blocking stream never races the copies.
// The stream is non-blocking because the first stitch_run captures a CUDA Graph on it.
#include <dlfcn.h>

#include <algorithm>

#include "driver/run/run_error.h"
#include "driver/run/run_target.h"

namespace stitch::run {

namespace {

constexpr int kCudaSuccess = 0;
constexpr int kMemcpyHostToDevice = 1;
constexpr int kMemcpyDeviceToHost = 2;
constexpr unsigned kStreamNonBlocking = 1;
constexpr const char* kCudartNames[] = {"libcudart.so.13", "libcudart.so"};

struct CudartFunctions {
  int (*malloc)(void**, size_t) = nullptr;
  int (*free)(void*) = nullptr;
  int (*memcpy)(void*, const void*, size_t, int) = nullptr;
  int (*device_synchronize)() = nullptr;
  int (*stream_create_with_flags)(void**, unsigned) = nullptr;
  int (*stream_destroy)(void*) = nullptr;
  int (*stream_synchronize)(void*) = nullptr;
  int (*event_create)(void**) = nullptr;
  int (*event_destroy)(void*) = nullptr;
  int (*event_record)(void*, void*) = nullptr;
  int (*event_synchronize)(void*) = nullptr;
  int (*event_elapsed_time)(float*, void*, void*) = nullptr;
  const char* (*get_error_string)(int) = nullptr;
};

template <typename Function>
void resolve(void* handle, const char* library, const char* symbol, Function* out) {
  void* address = dlsym(handle, symbol);
  if (address == nullptr) run_fail("{} has no '{}'; is it a CUDA runtime?", library, symbol);
  *out = reinterpret_cast<Function>(address);
}

class CudaTarget : public RunTarget {
public:
  CudaTarget() {
    std::string reasons;
    for (const char* name : kCudartNames) {
      handle_ = dlopen(name, RTLD_NOW | RTLD_LOCAL);
      if (handle_ != nullptr) {
        library_ = name;
        break;
      }
      const char* reason = dlerror();
      reasons += fmt::format("\n  {}: {}", name, reason != nullptr ? reason : "not found");
    }
    if (handle_ == nullptr)
      run_fail("the library targets CUDA, but no CUDA runtime could be loaded:{}\n(add the "
               "folder holding libcudart.so.13 to LD_LIBRARY_PATH)",
               reasons);
    try {
      resolve_all();
      check(cuda_.stream_create_with_flags(&stream_, kStreamNonBlocking),
            "cudaStreamCreateWithFlags");
      check(cuda_.event_create(&start_), "cudaEventCreate");
      check(cuda_.event_create(&stop_), "cudaEventCreate");
    } catch (...) {
      destroy_handles();
      dlclose(handle_);
      throw;
    }
  }

  ~CudaTarget() override {
    destroy_handles();
    // The runtime stays loaded: unloading it while the model library may still hold CUDA
    // state is not worth the risk at process exit.
  }

  std::string description() const override { return fmt::format("cuda ({})", library_); }

  void* allocate(uint64_t bytes) override {
    void* data = nullptr;
    check(cuda_.malloc(&data, std::max<uint64_t>(bytes, 1)),
          fmt::format("cudaMalloc of {} bytes", bytes).c_str());
    return data;
  }

  void release(void* data) noexcept override { cuda_.free(data); }

  void copy_to_target(void* target_data, const void* host_data, uint64_t bytes) override {
    if (bytes == 0) return;
    check(cuda_.memcpy(target_data, host_data, bytes, kMemcpyHostToDevice),
          "cudaMemcpy to the device");
  }

  void copy_to_host(void* host_data, const void* target_data, uint64_t bytes) override {
    if (bytes == 0) return;
    check(cuda_.memcpy(host_data, target_data, bytes, kMemcpyDeviceToHost),
          "cudaMemcpy to the host");
  }

  void* stream() override { return stream_; }

  void synchronize() override {
    check(cuda_.stream_synchronize(stream_), "cudaStreamSynchronize");
    check(cuda_.device_synchronize(), "cudaDeviceSynchronize");
  }

  double timed_run_ms(const std::function<void()>& enqueue_run) override {
    check(cuda_.event_record(start_, stream_), "cudaEventRecord");
    enqueue_run();
    check(cuda_.event_record(stop_, stream_), "cudaEventRecord");
    check(cuda_.event_synchronize(stop_), "cudaEventSynchronize");
    float ms = 0.0f;
    check(cuda_.event_elapsed_time(&ms, start_, stop_), "cudaEventElapsedTime");
    return ms;
  }

private:
  void resolve_all() {
    resolve(handle_, library_, "cudaMalloc", &cuda_.malloc);
    resolve(handle_, library_, "cudaFree", &cuda_.free);
    resolve(handle_, library_, "cudaMemcpy", &cuda_.memcpy);
    resolve(handle_, library_, "cudaDeviceSynchronize", &cuda_.device_synchronize);
    resolve(handle_, library_, "cudaStreamCreateWithFlags", &cuda_.stream_create_with_flags);
    resolve(handle_, library_, "cudaStreamDestroy", &cuda_.stream_destroy);
    resolve(handle_, library_, "cudaStreamSynchronize", &cuda_.stream_synchronize);
    resolve(handle_, library_, "cudaEventCreate", &cuda_.event_create);
    resolve(handle_, library_, "cudaEventDestroy", &cuda_.event_destroy);
    resolve(handle_, library_, "cudaEventRecord", &cuda_.event_record);
    resolve(handle_, library_, "cudaEventSynchronize", &cuda_.event_synchronize);
    resolve(handle_, library_, "cudaEventElapsedTime", &cuda_.event_elapsed_time);
    resolve(handle_, library_, "cudaGetErrorString", &cuda_.get_error_string);
  }

  void check(int error, const char* call) const {
    if (error == kCudaSuccess) return;
    const char* message =
        cuda_.get_error_string != nullptr ? cuda_.get_error_string(error) : nullptr;
    run_fail("{} failed: CUDA error {}: {}", call, error, message != nullptr ? message : "unknown");
  }

  void destroy_handles() noexcept {
    if (stop_ != nullptr) cuda_.event_destroy(stop_);
    if (start_ != nullptr) cuda_.event_destroy(start_);
    if (stream_ != nullptr) cuda_.stream_destroy(stream_);
    stop_ = start_ = stream_ = nullptr;
  }

  void* handle_ = nullptr;
  const char* library_ = "";
  CudartFunctions cuda_;
  void* stream_ = nullptr;
  void* start_ = nullptr;
  void* stop_ = nullptr;
};

} // namespace

std::unique_ptr<RunTarget> make_cuda_target() { return std::make_unique<CudaTarget>(); }

} // namespace stitch::run
