// model_runtime_device.cpp: what both targets share below the API: CUDA error checks, device
// allocations and the call into the generated enqueue. The same source serves the CUDA runtime
// and the host emulation, which keeps the CUDA runtime's names.
#include "model_runtime.h"

#include <algorithm>
#include <cstring>

namespace stitch::runtime {

void fail(stitch_status status, std::string message) { throw ApiError(status, std::move(message)); }

std::string describe_cuda_failure(cudaError_t result, const std::string& what) {
  const char* name = cudaGetErrorName(result);
  const char* text = cudaGetErrorString(result);
  name = name != nullptr ? name : "unknown CUDA error";
  text = text != nullptr ? text : "";
  // The host emulation's detailed text already starts with the name.
  if (std::strncmp(text, name, std::strlen(name)) == 0) return what + " failed: " + text;
  return what + " failed: " + name + " (" + text + ")";
}

void check_cuda(cudaError_t result, const std::string& what) {
  if (result == cudaSuccess) return;
  const stitch_status status =
      result == cudaErrorMemoryAllocation ? STITCH_ERROR_OUT_OF_MEMORY : STITCH_ERROR_CUDA;
  // An allocation failure is not sticky: clear it so that later calls do not report it again.
  if (result == cudaErrorMemoryAllocation) (void)cudaGetLastError();
  fail(status, describe_cuda_failure(result, what));
}

DeviceBuffer::~DeviceBuffer() {
  if (data_ != nullptr && owned_) (void)cudaFree(data_);
}

void DeviceBuffer::allocate(uint64_t bytes, const char* purpose) {
  if (data_ != nullptr) fail(STITCH_ERROR_INTERNAL, std::string(purpose) + " allocated twice");
  purpose_ = purpose;
  if (bytes == 0) return;
  void* data = nullptr;
  check_cuda(cudaMalloc(&data, static_cast<std::size_t>(bytes)),
             "cudaMalloc of " + std::to_string(bytes) + " bytes for the " + purpose);
  data_ = data;
  owned_ = true;
}

void DeviceBuffer::borrow(void* data, const char* purpose) {
  if (data_ != nullptr) fail(STITCH_ERROR_INTERNAL, std::string(purpose) + " allocated twice");
  purpose_ = purpose;
  data_ = data;
  owned_ = false;
}

void DeviceBuffer::release() {
  void* const data = data_;
  const bool owned = owned_;
  data_ = nullptr;
  owned_ = false;
  if (data != nullptr && owned)
    check_cuda(cudaFree(data), std::string("cudaFree of the ") + purpose_);
}

ContextLayout context_layout(const Model& model) {
  const stitch_abi_model& abi = *model.abi;
  const auto aligned = [](uint64_t bytes) {
    return (bytes + ContextLayout::kAlignment - 1) / ContextLayout::kAlignment *
           ContextLayout::kAlignment;
  };
  ContextLayout layout;
  layout.arena_bytes = abi.arena_bytes;
  layout.workspace_bytes = std::max(abi.workspace_bytes, stitch_library_workspace_bytes());
  layout.workspace_offset = aligned(layout.arena_bytes);
  layout.fallback_bytes = model.runs_unfused_chains() ? abi.fallback_bytes : 0;
  layout.fallback_offset = layout.workspace_offset + aligned(layout.workspace_bytes);
  uint64_t end = layout.fallback_offset + aligned(layout.fallback_bytes);
  for (int32_t t = 0; t < abi.num_taps; ++t) {
    layout.tap_offsets.push_back(end);
    end += aligned(abi.taps[t].tensor.bytes);
  }
  layout.total_bytes = end;
  return layout;
}

void enqueue_model(const stitch_abi_model& abi, const stitch_abi_buffers& buffers) {
  char message[2048] = {};
  const int32_t status = abi.enqueue(&buffers, message, sizeof(message));
  if (status == STITCH_OK) return;
  message[sizeof(message) - 1] = '\0';
  const std::string detail = message[0] != '\0' ? message : "(no message)";
  if (status < STITCH_ERROR_INVALID_ARGUMENT || status > STITCH_ERROR_INTERNAL)
    fail(STITCH_ERROR_INTERNAL, "the generated enqueue returned the unknown status " +
                                    std::to_string(status) + ": " + detail);
  fail(static_cast<stitch_status>(status), detail);
}

} // namespace stitch::runtime
