// stitch.hpp — a header-only C++ wrapper over the C API in stitch.h: RAII ownership of
// models and contexts, std::vector metadata, and exceptions (stitch::Error) on the C++
// side only. Nothing here adds state; every call goes through the C functions.
#pragma once

#include <stdexcept>
#include <string>
#include <vector>

#include "stitch/stitch.h"

namespace stitch {

class Error : public std::runtime_error {
public:
  Error(stitch_status status, const std::string& what)
      : std::runtime_error(what), status_(status) {}
  stitch_status status() const { return status_; }

private:
  stitch_status status_;
};

inline void check(stitch_status s) {
  if (s != STITCH_OK)
    throw Error(s, std::string(stitch_status_name(s)) + ": " + stitch_last_error());
}

struct TensorInfo {
  std::string name;
  stitch_dtype dtype;
  std::vector<int64_t> dims;
  uint64_t bytes;
};

// A debug tap (a library built with stitchc --debug-taps).
struct TapInfo {
  TensorInfo tensor;
  int32_t group;
  std::string node;
};

class Context;

class Model {
public:
  Model() { check(stitch_model_create(&model_)); }
  ~Model() {
    if (model_) stitch_model_destroy(model_);
  }
  Model(const Model&) = delete;
  Model& operator=(const Model&) = delete;

  std::vector<TensorInfo> inputs() const { return infos(true); }
  std::vector<TensorInfo> outputs() const { return infos(false); }
  std::vector<TapInfo> taps() const {
    size_t n = 0;
    check(stitch_model_num_taps(model_, &n));
    std::vector<TapInfo> out;
    for (size_t i = 0; i < n; ++i) {
      stitch_tap_info info;
      check(stitch_model_tap(model_, i, &info));
      out.push_back({to_info(info.tensor), info.group, info.node});
    }
    return out;
  }
  // The index of an input or output by name; throws Error when the model has none.
  size_t input_index(const std::string& name) const {
    size_t index = 0;
    check(stitch_model_input_index(model_, name.c_str(), &index));
    return index;
  }
  size_t output_index(const std::string& name) const {
    size_t index = 0;
    check(stitch_model_output_index(model_, name.c_str(), &index));
    return index;
  }
  int device() const {
    int device = 0;
    check(stitch_model_device(model_, &device));
    return device;
  }
  // Device memory a Context placed in caller memory needs.
  uint64_t context_memory() const {
    uint64_t bytes = 0;
    check(stitch_model_context_memory(model_, &bytes));
    return bytes;
  }
  // Symbolic dims (a library compiled with stitchc --dim): each symbol's name and range, in the
  // model's order; empty for a model of fixed shapes.
  std::vector<stitch_symbol_info> symbols() const {
    size_t n = 0;
    check(stitch_model_num_symbols(model_, &n));
    std::vector<stitch_symbol_info> out(n);
    for (size_t i = 0; i < n; ++i)
      check(stitch_model_symbol(model_, i, &out[i]));
    return out;
  }
  // Device memory a Context for runs whose symbols are at most `max_symbols` needs (one value
  // per symbol, in the order of symbols()).
  uint64_t context_memory_for(const std::vector<int64_t>& max_symbols) const {
    uint64_t bytes = 0;
    check(stitch_model_context_memory_for(model_, max_symbols.data(), max_symbols.size(), &bytes));
    return bytes;
  }
  // How the library was built.
  static stitch_build_info build_info() {
    stitch_build_info info{};
    check(stitch_library_build_info(&info));
    return info;
  }
  stitch_model* get() const { return model_; }

private:
  static TensorInfo to_info(const stitch_tensor_info& info) {
    return {info.name, info.dtype, std::vector<int64_t>(info.dims, info.dims + info.rank),
            info.bytes};
  }
  std::vector<TensorInfo> infos(bool inputs) const {
    size_t n = 0;
    check(inputs ? stitch_model_num_inputs(model_, &n) : stitch_model_num_outputs(model_, &n));
    std::vector<TensorInfo> out;
    for (size_t i = 0; i < n; ++i) {
      stitch_tensor_info info;
      check(inputs ? stitch_model_input(model_, i, &info) : stitch_model_output(model_, i, &info));
      out.push_back(to_info(info));
    }
    return out;
  }
  stitch_model* model_ = nullptr;
};

class Context {
public:
  explicit Context(Model& model) { check(stitch_context_create(model.get(), &context_)); }
  // A context working in caller-provided device memory (Model::context_memory() bytes,
  // 256-byte aligned), kept alive by the caller until the context is destroyed.
  Context(Model& model, void* memory, uint64_t bytes) {
    check(stitch_context_create_in_memory(model.get(), memory, bytes, &context_));
  }
  // A context for runs whose symbols are at most `max_symbols` (Model::symbols()' order), its
  // memory laid out for them: its own, or (with `memory`) Model::context_memory_for() bytes of
  // the caller's.
  Context(Model& model, const std::vector<int64_t>& max_symbols, void* memory = nullptr,
          uint64_t bytes = 0) {
    check(stitch_context_create_for(model.get(), max_symbols.data(), max_symbols.size(), memory,
                                    bytes, &context_));
  }
  ~Context() {
    if (context_) stitch_context_destroy(context_);
  }
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;

  // Enqueues one run on `stream` (a cudaStream_t, or nullptr).
  void run(const std::vector<stitch_tensor>& inputs, const std::vector<stitch_tensor>& outputs,
           void* stream = nullptr) {
    check(
        stitch_run(context_, inputs.data(), inputs.size(), outputs.data(), outputs.size(), stream));
  }

  // Enqueues one run with options, e.g. {STITCH_RUN_NO_GRAPH} inside the caller's own capture.
  void run(const std::vector<stitch_tensor>& inputs, const std::vector<stitch_tensor>& outputs,
           void* stream, const stitch_run_options& options) {
    check(stitch_run_with_options(context_, inputs.data(), inputs.size(), outputs.data(),
                                  outputs.size(), stream, &options));
  }

  // Copies tap `index` of the last run to host memory (waits for the run).
  void read_tap(size_t index, void* data, uint64_t bytes) {
    check(stitch_context_read_tap(context_, index, data, bytes));
  }

private:
  stitch_context* context_ = nullptr;
};

} // namespace stitch
