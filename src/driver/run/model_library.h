// ModelLibrary: one library stitchc compiled, opened with dlopen(RTLD_NOW | RTLD_LOCAL) and
// its C API (include/stitch/stitch.h, or its prefixed names) resolved with dlsym. Opening
// checks, in order, that the file loads, that it exports PREFIX_api_version (else it is not a
// stitchc library), that the
// version is the one this tool was built against, that every other API symbol is there, and
// that stitch_target() names a target the tool can drive ("cuda" or "host").
//
// ModelInstance: a stitch_model with one stitch_context, its inputs' and outputs'
// descriptions checked for consistency, and run() turning a failed status into a RunError
// carrying the library's stitch_last_error().
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
};

// A model input or output as the library describes it, copied out of stitch_tensor_info.
struct TensorInfo {
  std::string name;
  stitch_dtype dtype = STITCH_FLOAT32;
  std::vector<int64_t> dims;
  uint64_t bytes = 0;
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
  StitchApi api_;
};

class ModelInstance {
public:
  explicit ModelInstance(const ModelLibrary& library);
  ~ModelInstance();
  ModelInstance(const ModelInstance&) = delete;
  ModelInstance& operator=(const ModelInstance&) = delete;

  const std::vector<TensorInfo>& inputs() const { return inputs_; }
  const std::vector<TensorInfo>& outputs() const { return outputs_; }
  const std::vector<TapInfo>& taps() const { return taps_; }

  // Enqueues one run on `stream` (ignored by the host target).
  void run(const std::vector<stitch_tensor>& inputs, const std::vector<stitch_tensor>& outputs,
           void* stream);
  // Copies tap `index` of the last run into `data` (taps()[index].tensor.bytes long).
  void read_tap(size_t index, void* data);

private:
  std::vector<TensorInfo> describe(bool inputs) const;

  const ModelLibrary& library_;
  stitch_model* model_ = nullptr;
  stitch_context* context_ = nullptr;
  std::vector<TensorInfo> inputs_;
  std::vector<TensorInfo> outputs_;
  std::vector<TapInfo> taps_;
};

} // namespace stitch::run
