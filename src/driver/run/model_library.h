// ModelLibrary: one library stitchc compiled, opened with dlopen(RTLD_NOW | RTLD_LOCAL) and
// its C API (include/stitch/stitch.h, or its prefixed names) resolved with dlsym. Opening
// checks, in order, that the file loads, that it exports PREFIX_api_version (else it is not a
// stitchc library), that the version is one this tool speaks (this tool's, or version 3, which
// lacks only the symbolic dims' functions), that every other API symbol is there, and that
// stitch_target() names a target the tool can drive ("cuda" or "host"). The functions of
// symbolic dims (API version 4) are resolved where the library has them; a library without
// them serves fixed shapes only.
//
// ModelInstance: a stitch_model with one stitch_context, its symbols and its inputs' and
// outputs' descriptions checked for consistency, the outputs' shapes for given inputs, and
// run() turning a failed status into a RunError carrying the library's stitch_last_error().
#pragma once

#include <string>
#include <vector>

#include "stitch/stitch.h"

namespace stitch::run {

// The API of stitch.h as function pointers into one library.
struct StitchApi {
  const char* (*target)(void) = nullptr;
  int (*api_version)(void) = nullptr;
  stitch_status (*model_create)(stitch_model**) = nullptr;
  stitch_status (*model_destroy)(stitch_model*) = nullptr;
  stitch_status (*model_num_inputs)(const stitch_model*, size_t*) = nullptr;
  stitch_status (*model_num_outputs)(const stitch_model*, size_t*) = nullptr;
  stitch_status (*model_input)(const stitch_model*, size_t, stitch_tensor_info*) = nullptr;
  stitch_status (*model_output)(const stitch_model*, size_t, stitch_tensor_info*) = nullptr;
  stitch_status (*context_create)(stitch_model*, stitch_context**) = nullptr;
  stitch_status (*context_destroy)(stitch_context*) = nullptr;
  stitch_status (*run)(stitch_context*, const stitch_tensor*, size_t, const stitch_tensor*, size_t,
                       void*) = nullptr;
  stitch_status (*model_num_taps)(const stitch_model*, size_t*) = nullptr;
  stitch_status (*model_tap)(const stitch_model*, size_t, stitch_tap_info*) = nullptr;
  stitch_status (*context_read_tap)(stitch_context*, size_t, void*, uint64_t) = nullptr;
  const char* (*status_name)(stitch_status) = nullptr;
  const char* (*last_error)(void) = nullptr;
  stitch_status (*library_build_info)(stitch_build_info*) = nullptr;
  // API version 4 (symbolic dims): null when the library does not export them.
  stitch_status (*model_num_symbols)(const stitch_model*, size_t*) = nullptr;
  stitch_status (*model_symbol)(const stitch_model*, size_t, stitch_symbol_info*) = nullptr;
  stitch_status (*model_input_symbols)(const stitch_model*, size_t, int32_t*) = nullptr;
  stitch_status (*model_output_shapes)(const stitch_model*, const stitch_tensor*, size_t,
                                       stitch_tensor_info*, size_t) = nullptr;
  // Null in the first libraries of version 4, which name no output's symbols.
  stitch_status (*model_output_symbols)(const stitch_model*, size_t, int32_t*) = nullptr;
  stitch_status (*model_context_memory)(const stitch_model*, uint64_t*) = nullptr;
  // API version 5 (contexts for part of the range): null where the library lacks them.
  stitch_status (*model_context_memory_for)(const stitch_model*, const int64_t*, size_t,
                                            uint64_t*) = nullptr;
  stitch_status (*context_create_for)(stitch_model*, const int64_t*, size_t, void*, uint64_t,
                                      stitch_context**) = nullptr;
};

// The oldest API version stitch-run runs: version 4 only added the functions of symbolic dims.
constexpr int kOldestApiVersion = 3;

// A symbolic dim of the model (stitchc --dim NAME=MIN..MAX): any value in [min, max] per run.
struct SymbolInfo {
  std::string name;
  int64_t min = 0;
  int64_t max = 0;
};

// A model input or output as the library describes it, copied out of stitch_tensor_info. In a
// library with symbolic dims, a dim that depends on them is -1 and `bytes` is the size at the
// symbols' maxima.
struct TensorInfo {
  std::string name;
  stitch_dtype dtype = STITCH_FLOAT32;
  std::vector<int64_t> dims;
  uint64_t bytes = 0;
  // The symbol index of each dim (stitch_model_input_symbols, stitch_model_output_symbols), -1
  // for a fixed dim and, for an output, -2 for a dim computed from the symbols; empty for every
  // tensor of a library of fixed shapes, and for the outputs of a library that does not say.
  std::vector<int32_t> symbols = {};

  bool is_symbolic() const;
};

// A debug tap (a library built with stitchc --debug-taps): a tensor one fusion group writes.
struct TapInfo {
  TensorInfo tensor;
  int32_t group = 0;
  std::string node;
};

class ModelLibrary {
public:
  // `symbol_prefix`: the prefix of the library's exported C API (stitchc --symbol-prefix);
  // empty: "stitch", else, for a file libNAME.so, NAME when the library exports NAME_*.
  explicit ModelLibrary(const std::string& path, const std::string& symbol_prefix = "");
  ~ModelLibrary();
  ModelLibrary(const ModelLibrary&) = delete;
  ModelLibrary& operator=(const ModelLibrary&) = delete;

  const std::string& path() const { return path_; }
  const std::string& target() const { return target_; }
  bool is_cuda_target() const { return target_ == "cuda"; }
  const StitchApi& api() const { return api_; }
  // The library's stitch_api_version(): kOldestApiVersion to STITCH_API_VERSION.
  int api_version() const { return api_version_; }
  // Whether the library exports the functions of symbolic dims (API version 4).
  bool has_symbols_api() const { return api_.model_num_symbols != nullptr; }
  // Whether it exports contexts for part of the range (API version 5).
  bool has_context_for_api() const { return api_.context_create_for != nullptr; }
  const std::string& symbol_prefix() const { return prefix_; }
  // How the library was built (stitch_library_build_info), as label and value pairs.
  std::vector<std::pair<std::string, std::string>> build_info() const;

  // Throws a RunError "CALL failed: STATUS_NAME: last error" unless `status` is STITCH_OK.
  void check(stitch_status status, const char* call) const;

private:
  void* handle_ = nullptr;
  std::string path_;
  std::string target_;
  std::string prefix_;
  int api_version_ = 0;
  StitchApi api_;
};

class ModelInstance {
public:
  explicit ModelInstance(const ModelLibrary& library);
  ~ModelInstance();
  ModelInstance(const ModelInstance&) = delete;
  ModelInstance& operator=(const ModelInstance&) = delete;

  const std::vector<SymbolInfo>& symbols() const { return symbols_; }
  bool is_symbolic() const { return !symbols_.empty(); }
  const std::vector<TensorInfo>& inputs() const { return inputs_; }
  // As compiled: a symbolic dim is -1 (see output_shapes).
  const std::vector<TensorInfo>& outputs() const { return outputs_; }
  const std::vector<TapInfo>& taps() const { return taps_; }

  // The outputs for inputs of the given dims (only their dtypes, ranks and dims are read):
  // stitch_model_output_shapes, which checks them as a run does; outputs() for a library of
  // fixed shapes.
  std::vector<TensorInfo> output_shapes(const std::vector<stitch_tensor>& inputs) const;

  // Enqueues one run on `stream` (ignored by the host target).
  void run(const std::vector<stitch_tensor>& inputs, const std::vector<stitch_tensor>& outputs,
           void* stream);
  // The device memory of a context: at the model's maxima (stitch_model_context_memory), or,
  // with `maxima` (one value per symbol), of a context for runs up to them
  // (stitch_model_context_memory_for, API version 5).
  uint64_t context_memory(const std::vector<int64_t>* maxima = nullptr) const;
  // One run, waited for, in a context of its own created for `maxima`
  // (stitch_context_create_for, API version 5).
  void run_in_context_for(const std::vector<int64_t>& maxima,
                          const std::vector<stitch_tensor>& inputs,
                          const std::vector<stitch_tensor>& outputs, void* stream);
  // Copies tap `index` of the last run into `data` (taps()[index].tensor.bytes long).
  void read_tap(size_t index, void* data);

private:
  std::vector<SymbolInfo> describe_symbols() const;
  std::vector<TensorInfo> describe(bool inputs) const;

  const ModelLibrary& library_;
  stitch_model* model_ = nullptr;
  stitch_context* context_ = nullptr;
  std::vector<SymbolInfo> symbols_;
  std::vector<TensorInfo> inputs_;
  std::vector<TensorInfo> outputs_;
  std::vector<TapInfo> taps_;
};

} // namespace stitch::run
