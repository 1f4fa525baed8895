// libraries_cuda.cpp: the per-context library state of the CUDA target: one cuBLASLt handle
// and one cuDNN handle (made on the current device), plus the plan caches the calls fill.
#include "cuda_checks.h"

#include <memory>

namespace stitch::library::cuda {
namespace {

// Frees whatever part of a context's state exists.
void destroy_libraries(stitch_abi_libraries* libraries) {
  if (libraries == nullptr) return;
  destroy_gemm_plans(libraries->gemm_plans);
  destroy_conv_plans(libraries->conv_plans);
  if (libraries->cudnn != nullptr) cudnnDestroy(libraries->cudnn);
  if (libraries->cublaslt != nullptr) cublasLtDestroy(libraries->cublaslt);
  delete libraries;
}

struct LibrariesDeleter {
  void operator()(stitch_abi_libraries* libraries) const { destroy_libraries(libraries); }
};

int32_t create_libraries(const ErrorSink& sink, stitch_abi_libraries** out) {
  std::unique_ptr<stitch_abi_libraries, LibrariesDeleter> libraries(new stitch_abi_libraries{});
  STITCH_CHECK_CUBLASLT(sink, cublasLtCreate, &libraries->cublaslt);
  STITCH_CHECK_CUDNN(sink, cudnnCreate, &libraries->cudnn);
  *out = libraries.release();
  return STITCH_OK;
}

} // namespace
} // namespace stitch::library::cuda

extern "C" int32_t stitch_libraries_create(stitch_abi_libraries** out, char* error,
                                           size_t error_size) {
  using namespace stitch::library;
  const ErrorSink sink("stitch_libraries_create", error, error_size);
  if (out == nullptr) return sink.fail(STITCH_ERROR_INTERNAL, "null result pointer");
  *out = nullptr;
  return run_guarded(sink, [&] { return cuda::create_libraries(sink, out); });
}

extern "C" void stitch_libraries_destroy(stitch_abi_libraries* libraries) {
  stitch::library::cuda::destroy_libraries(libraries);
}

extern "C" uint64_t stitch_library_workspace_bytes(void) {
  return STITCH_LIBRARY_CUDA_WORKSPACE_BYTES;
}
