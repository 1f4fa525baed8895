// model_runtime_device.cpp: what both targets share below the API: CUDA error checks, device
// allocations and the call into the generated enqueue. The same source serves the CUDA runtime
// and the host emulation, which keeps the CUDA runtime's names.
#include "model_runtime.h"

#include "arena_layout.h"

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

namespace {

// The maxima a context is created for, checked: one per symbol, each within its range.
std::vector<int64_t> checked_maxima(const stitch_abi_model& abi, const int64_t* max_symbols,
                                    std::size_t num_symbols) {
  const auto count = static_cast<std::size_t>(abi.num_symbols);
  if (num_symbols != count)
    fail(STITCH_ERROR_INVALID_ARGUMENT, "num_symbols is " + std::to_string(num_symbols) +
                                            " but the model has " + std::to_string(count) +
                                            " symbolic dim" + (count == 1 ? "" : "s"));
  std::vector<int64_t> maxima(max_symbols, max_symbols + count);
  for (std::size_t s = 0; s < count; ++s) {
    const stitch_abi_symbol& symbol = abi.symbols[s];
    if (maxima[s] < symbol.min || maxima[s] > symbol.max)
      fail(STITCH_ERROR_INVALID_ARGUMENT, "max_symbols[" + std::to_string(s) + "] ('" +
                                              symbol.name + "') is " + std::to_string(maxima[s]) +
                                              ", outside its range " + std::to_string(symbol.min) +
                                              ".." + std::to_string(symbol.max));
  }
  return maxima;
}

} // namespace

ContextLayout context_layout(const Model& model, const int64_t* max_symbols,
                             std::size_t num_symbols) {
  const stitch_abi_model& abi = *model.abi;
  const auto aligned = [](uint64_t bytes) {
    return (bytes + ContextLayout::kAlignment - 1) / ContextLayout::kAlignment *
           ContextLayout::kAlignment;
  };
  ContextLayout layout;
  layout.arena_bytes = abi.arena_bytes;
  if (abi.num_symbols > 0) {
    const auto count = static_cast<std::size_t>(abi.num_symbols);
    const auto slots = static_cast<std::size_t>(abi.num_arena_slots);
    if (max_symbols != nullptr) {
      layout.max_symbols = checked_maxima(abi, max_symbols, num_symbols);
    } else {
      for (std::size_t s = 0; s < count; ++s)
        layout.max_symbols.push_back(abi.symbols[s].max);
    }
    const bool below = !std::equal(
        layout.max_symbols.begin(), layout.max_symbols.end(), abi.symbols, abi.symbols + count,
        [](int64_t m, const stitch_abi_symbol& s) { return m == s.max; });
    if (!below) {
      layout.arena_offsets.assign(abi.arena_offsets, abi.arena_offsets + slots);
    } else if (slots > 0) {
      // The model's steps replayed with each slot's bytes at these maxima (arena_layout.h).
      layout.slot_bytes.assign(slots, 0);
      layout.arena_offsets.assign(slots, 0);
      abi.arena_slot_bytes(layout.max_symbols.data(), layout.slot_bytes.data());
      if (!arena::lay_out(abi.arena_steps, static_cast<std::size_t>(abi.num_arena_steps),
                          layout.slot_bytes.data(), slots, layout.arena_offsets.data(),
                          &layout.arena_bytes))
        fail(STITCH_ERROR_INTERNAL, "the model's arena steps do not place each slot once");
    } else {
      layout.arena_bytes = 0;
    }
  } else if (max_symbols != nullptr || num_symbols != 0) {
    checked_maxima(abi, max_symbols, num_symbols);
  }
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

void check_run_fits_context(Context& context) {
  const stitch_abi_model& abi = *context.model->abi;
  const std::vector<int64_t>& symbols = context.shapes.symbols;
  for (std::size_t s = 0; s < context.max_symbols.size(); ++s) {
    if (symbols[s] <= context.max_symbols[s]) continue;
    const std::size_t input = context.shapes.binder[s];
    const std::string given =
        input < static_cast<std::size_t>(abi.num_inputs)
            ? "input " + std::to_string(input) + " ('" + abi.inputs[input].name + "') gives"
            : "the run gives";
    fail(STITCH_ERROR_SHAPE_MISMATCH,
         given + " '" + abi.symbols[s].name + "' " + std::to_string(symbols[s]) + ", above " +
             std::to_string(context.max_symbols[s]) +
             ", the most this context serves (stitch_context_create_for)");
  }
  if (context.slot_bytes.empty()) return; // the model's layout, at its maxima, holds every run
  // stitchc prints slot sizes that grow with the symbols (a size that may shrink as its
  // maximum), so this holds once the symbols do; checked all the same, as the layout's bounds
  // are the context's memory.
  context.run_slot_bytes.resize(context.slot_bytes.size());
  abi.arena_slot_bytes(symbols.data(), context.run_slot_bytes.data());
  for (std::size_t k = 0; k < context.slot_bytes.size(); ++k)
    if (arena::slot_size(context.run_slot_bytes[k]) > arena::slot_size(context.slot_bytes[k]))
      fail(STITCH_ERROR_SHAPE_MISMATCH,
           "at these dims intermediate " + std::to_string(k) + " of the arena takes " +
               std::to_string(context.run_slot_bytes[k]) + " bytes, more than the " +
               std::to_string(context.slot_bytes[k]) +
               " this context laid out at its maxima (stitch_context_create_for): create it "
               "for larger maxima");
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
