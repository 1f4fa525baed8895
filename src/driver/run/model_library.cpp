// Loading a stitchc library and driving its C API. The library is not trusted to describe
// itself sensibly: every tensor description is checked before the tool allocates for it.
#include "driver/run/model_library.h"

#include <dlfcn.h>

#include <algorithm>
#include <filesystem>
#include <type_traits>

#include "driver/run/host_tensor.h"
#include "driver/run/run_error.h"

namespace stitch::run {

namespace {

// dlopen searches the library path for a name without a slash; the user means a file.
std::string dlopen_path(const std::string& path) {
  if (path.find('/') != std::string::npos) return path;
  return "./" + path;
}

bool ends_with(const std::string& text, const std::string& suffix) {
  return text.size() >= suffix.size() &&
         text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// Checks what the library says of a tensor. With `symbolic` (a library with symbolic dims), a
// dim may be -1, and then `bytes` is the size at the symbols' maxima, which the tool cannot
// recompute for an output; its other dims are checked all the same.
void check_info(const stitch_tensor_info& info, const char* kind, size_t index,
                const std::string& path, bool symbolic = false) {
  std::string what = fmt::format("{}: the library's {} {}", path, kind, index);
  if (info.name == nullptr) run_fail("{} has no name", what);
  if (!is_known_dtype(info.dtype))
    run_fail("{} ('{}') has the unknown dtype {}", what, info.name, static_cast<int>(info.dtype));
  if (info.rank < 0 || info.rank > STITCH_MAX_RANK)
    run_fail("{} ('{}') has rank {}", what, info.name, info.rank);
  std::vector<int64_t> dims(info.dims, info.dims + info.rank);
  std::vector<int64_t> fixed;
  for (int64_t dim : dims)
    if (!symbolic || dim != -1) fixed.push_back(dim);
  uint64_t count = 0;
  if (!checked_element_count(fixed, dtype_size(info.dtype), &count))
    run_fail("{} ('{}') has the impossible dims [{}]", what, info.name, fmt::join(dims, ","));
  if (fixed.size() == dims.size() && count * dtype_size(info.dtype) != info.bytes)
    run_fail("{} ('{}') is {} but claims {} bytes", what, info.name,
             describe_type(info.dtype, dims), info.bytes);
}

TensorInfo copy_info(const stitch_tensor_info& info) {
  return {info.name,
          info.dtype,
          std::vector<int64_t>(info.dims, info.dims + info.rank),
          info.bytes,
          {}};
}

} // namespace

bool TensorInfo::is_symbolic() const {
  return std::find(dims.begin(), dims.end(), -1) != dims.end();
}

ModelLibrary::ModelLibrary(const std::string& path, const std::string& symbol_prefix)
    : path_(path) {
  handle_ = dlopen(dlopen_path(path).c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle_ == nullptr) {
    const char* reason = dlerror();
    std::string hint =
        ends_with(path, ".onnx") ? " (an ONNX model; compile it with stitchc first)" : "";
    run_fail("{}: cannot load the library{}: {}", path, hint,
             reason != nullptr ? reason : "unknown error");
  }
  auto exports = [&](const std::string& prefix) {
    dlerror();
    return dlsym(handle_, (prefix + "_api_version").c_str()) != nullptr;
  };
  prefix_ = symbol_prefix.empty() ? "stitch" : symbol_prefix;
  if (symbol_prefix.empty() && !exports(prefix_)) {
    // A library built with --symbol-prefix NAME is usually named libNAME.so.
    std::string file = std::filesystem::path(path).filename().string();
    if (file.rfind("lib", 0) == 0 && file.find('.') != std::string::npos) {
      std::string guess = file.substr(3, file.find('.') - 3);
      if (!guess.empty() && exports(guess)) prefix_ = guess;
    }
  }
  if (!exports(prefix_)) {
    dlclose(handle_);
    run_fail("{}: not a stitchc library: it does not export {}_api_version{}", path, prefix_,
             symbol_prefix.empty() ? " (built with stitchc --symbol-prefix NAME? then pass "
                                     "--symbol-prefix NAME)"
                                   : "");
  }
  auto lookup = [&](const char* name, auto* out) {
    dlerror();
    void* address = dlsym(handle_, (prefix_ + "_" + name).c_str());
    *out = reinterpret_cast<std::remove_pointer_t<decltype(out)>>(address);
    return address != nullptr;
  };
  auto resolve = [&](const char* name, auto* out) {
    if (!lookup(name, out))
      run_fail("{}: not a complete stitchc library: the symbol '{}_{}' is missing", path, prefix_,
               name);
  };
  try {
    resolve("api_version", &api_.api_version);
    api_version_ = api_.api_version();
    if (api_version_ < kOldestApiVersion || api_version_ > STITCH_API_VERSION)
      run_fail(
          "{}: the library has stitch API version {}, but this stitch-run speaks version {} "
          "(and runs libraries of version {}); use the stitch-run of the stitchc that built it",
          path, api_version_, STITCH_API_VERSION, kOldestApiVersion);
    resolve("target", &api_.target);
    resolve("model_create", &api_.model_create);
    resolve("model_destroy", &api_.model_destroy);
    resolve("model_num_inputs", &api_.model_num_inputs);
    resolve("model_num_outputs", &api_.model_num_outputs);
    resolve("model_input", &api_.model_input);
    resolve("model_output", &api_.model_output);
    resolve("context_create", &api_.context_create);
    resolve("context_destroy", &api_.context_destroy);
    resolve("run", &api_.run);
    resolve("model_num_taps", &api_.model_num_taps);
    resolve("model_tap", &api_.model_tap);
    resolve("context_read_tap", &api_.context_read_tap);
    resolve("status_name", &api_.status_name);
    resolve("last_error", &api_.last_error);
    resolve("library_build_info", &api_.library_build_info);
    // Symbolic dims: all four functions, or none (a library of fixed shapes before version 4).
    int symbol_functions = lookup("model_num_symbols", &api_.model_num_symbols) +
                           lookup("model_symbol", &api_.model_symbol) +
                           lookup("model_input_symbols", &api_.model_input_symbols) +
                           lookup("model_output_shapes", &api_.model_output_shapes);
    lookup("model_output_symbols", &api_.model_output_symbols);
    // Contexts for part of the range (API version 5): both, or neither (a library of fixed
    // shapes may leave them out, as it may the functions of symbolic dims).
    lookup("model_context_memory", &api_.model_context_memory);
    const int context_functions =
        lookup("model_context_memory_for", &api_.model_context_memory_for) +
        lookup("context_create_for", &api_.context_create_for);
    if (context_functions == 1)
      run_fail("{}: not a complete stitchc library: it exports one of {}_model_context_memory_for "
               "and {}_context_create_for",
               path, prefix_, prefix_);
    if (symbol_functions != 0 && symbol_functions != 4)
      run_fail("{}: not a complete stitchc library: it exports {} of the 4 functions of symbolic "
               "dims ({}_model_num_symbols, _model_symbol, _model_input_symbols, "
               "_model_output_shapes)",
               path, symbol_functions, prefix_);
    const char* target = api_.target();
    target_ = target != nullptr ? target : "";
    if (target_ != "cuda" && target_ != "host")
      run_fail("{}: the library's target is '{}'; stitch-run drives 'cuda' and 'host'", path,
               target_);
  } catch (...) {
    dlclose(handle_);
    throw;
  }
}

std::vector<std::pair<std::string, std::string>> ModelLibrary::build_info() const {
  stitch_build_info info{};
  check(api_.library_build_info(&info), "stitch_library_build_info");
  auto text = [](const char* s) { return std::string(s != nullptr ? s : ""); };
  return {{"stitchc", text(info.stitchc_version)},
          {"model", text(info.model_file)},
          {"model sha256", text(info.model_sha256)},
          {"target", text(info.target)},
          {"archs", text(info.archs)},
          {"planner", text(info.planner)},
          {"precision", text(info.precision)},
          {"symbol prefix", text(info.symbol_prefix)},
          {"stitchc arguments", text(info.flags)}};
}

ModelLibrary::~ModelLibrary() { dlclose(handle_); }

void ModelLibrary::check(stitch_status status, const char* call) const {
  if (status == STITCH_OK) return;
  const char* name = api_.status_name(status);
  const char* message = api_.last_error();
  run_fail("{} failed: {}: {}", call, name != nullptr ? name : "unknown status",
           message != nullptr ? message : "");
}

ModelInstance::ModelInstance(const ModelLibrary& library) : library_(library) {
  const StitchApi& api = library.api();
  library.check(api.model_create(&model_), "stitch_model_create");
  try {
    symbols_ = describe_symbols();
    inputs_ = describe(true);
    outputs_ = describe(false);
    size_t tap_count = 0;
    library.check(api.model_num_taps(model_, &tap_count), "stitch_model_num_taps");
    for (size_t i = 0; i < tap_count; ++i) {
      stitch_tap_info info{};
      library.check(api.model_tap(model_, i, &info), "stitch_model_tap");
      check_info(info.tensor, "tap", i, library.path());
      taps_.push_back({copy_info(info.tensor), info.group, info.node != nullptr ? info.node : ""});
    }
    library.check(api.context_create(model_, &context_), "stitch_context_create");
  } catch (...) {
    api.model_destroy(model_);
    throw;
  }
}

ModelInstance::~ModelInstance() {
  const StitchApi& api = library_.api();
  if (context_ != nullptr) api.context_destroy(context_);
  api.model_destroy(model_);
}

std::vector<SymbolInfo> ModelInstance::describe_symbols() const {
  const StitchApi& api = library_.api();
  if (!library_.has_symbols_api()) return {};
  size_t count = 0;
  library_.check(api.model_num_symbols(model_, &count), "stitch_model_num_symbols");
  std::vector<SymbolInfo> symbols;
  for (size_t i = 0; i < count; ++i) {
    stitch_symbol_info info{};
    library_.check(api.model_symbol(model_, i, &info), "stitch_model_symbol");
    std::string what = fmt::format("{}: the library's symbolic dim {}", library_.path(), i);
    if (info.name == nullptr || info.name[0] == '\0') run_fail("{} has no name", what);
    if (info.min < 0 || info.max < info.min)
      run_fail("{} ('{}') has the impossible range {}..{}", what, info.name, info.min, info.max);
    for (const SymbolInfo& other : symbols)
      if (other.name == info.name) run_fail("{} ('{}') has the name of another", what, info.name);
    symbols.push_back({info.name, info.min, info.max});
  }
  return symbols;
}

std::vector<TensorInfo> ModelInstance::describe(bool inputs) const {
  const StitchApi& api = library_.api();
  const char* kind = inputs ? "input" : "output";
  size_t count = 0;
  library_.check(inputs ? api.model_num_inputs(model_, &count)
                        : api.model_num_outputs(model_, &count),
                 inputs ? "stitch_model_num_inputs" : "stitch_model_num_outputs");
  std::vector<TensorInfo> infos;
  for (size_t i = 0; i < count; ++i) {
    stitch_tensor_info info{};
    library_.check(inputs ? api.model_input(model_, i, &info) : api.model_output(model_, i, &info),
                   inputs ? "stitch_model_input" : "stitch_model_output");
    check_info(info, kind, i, library_.path(), is_symbolic());
    infos.push_back(copy_info(info));
    auto* read_symbols = inputs ? api.model_input_symbols : api.model_output_symbols;
    if (!is_symbolic() || read_symbols == nullptr) continue;
    // Each dim of -1 is some symbol's (or, for an output, computed from them: -2), and every
    // other dim is fixed.
    int32_t symbols[STITCH_MAX_RANK];
    std::fill(symbols, symbols + STITCH_MAX_RANK, -1);
    library_.check(read_symbols(model_, i, symbols),
                   inputs ? "stitch_model_input_symbols" : "stitch_model_output_symbols");
    TensorInfo& tensor = infos.back();
    tensor.symbols.assign(symbols, symbols + info.rank);
    for (size_t d = 0; d < tensor.dims.size(); ++d) {
      int32_t s = tensor.symbols[d];
      bool symbolic = (s >= 0 && static_cast<size_t>(s) < symbols_.size()) || (!inputs && s == -2);
      if (symbolic != (tensor.dims[d] == -1) || (!symbolic && s != -1))
        run_fail("{}: the library's {} {} ('{}') has dim {} of {} but symbol index {}",
                 library_.path(), kind, i, info.name, d, tensor.dims[d], s);
    }
  }
  return infos;
}

std::vector<TensorInfo>
ModelInstance::output_shapes(const std::vector<stitch_tensor>& inputs) const {
  if (!is_symbolic()) return outputs_;
  std::vector<stitch_tensor_info> infos(outputs_.size());
  library_.check(library_.api().model_output_shapes(model_, inputs.data(), inputs.size(),
                                                    infos.data(), infos.size()),
                 "stitch_model_output_shapes");
  std::vector<TensorInfo> outputs;
  for (size_t o = 0; o < infos.size(); ++o) {
    check_info(infos[o], "output", o, library_.path());
    outputs.push_back(copy_info(infos[o]));
    if (outputs.back().name != outputs_[o].name || outputs.back().dtype != outputs_[o].dtype)
      run_fail("{}: stitch_model_output_shapes describes output {} as '{}' of {}, but the model's "
               "output {} is '{}' of {}",
               library_.path(), o, outputs.back().name, dtype_name(outputs.back().dtype), o,
               outputs_[o].name, dtype_name(outputs_[o].dtype));
  }
  return outputs;
}

void ModelInstance::run(const std::vector<stitch_tensor>& inputs,
                        const std::vector<stitch_tensor>& outputs, void* stream) {
  library_.check(library_.api().run(context_, inputs.data(), inputs.size(), outputs.data(),
                                    outputs.size(), stream),
                 "stitch_run");
}

uint64_t ModelInstance::context_memory(const std::vector<int64_t>* maxima) const {
  uint64_t bytes = 0;
  if (maxima == nullptr) {
    if (library_.api().model_context_memory == nullptr)
      run_fail("{}: the library does not report its context memory (stitch API version 3 and "
               "later do)",
               library_.path());
    library_.check(library_.api().model_context_memory(model_, &bytes),
                   "stitch_model_context_memory");
    return bytes;
  }
  if (!library_.has_context_for_api())
    run_fail("{}: the library does not export contexts for part of the range (stitch API "
             "version 5)",
             library_.path());
  library_.check(
      library_.api().model_context_memory_for(model_, maxima->data(), maxima->size(), &bytes),
      "stitch_model_context_memory_for");
  return bytes;
}

void ModelInstance::run_in_context_for(const std::vector<int64_t>& maxima,
                                       const std::vector<stitch_tensor>& inputs,
                                       const std::vector<stitch_tensor>& outputs, void* stream) {
  const StitchApi& api = library_.api();
  if (!library_.has_context_for_api())
    run_fail("{}: the library does not export contexts for part of the range (stitch API "
             "version 5)",
             library_.path());
  stitch_context* context = nullptr;
  library_.check(api.context_create_for(model_, maxima.data(), maxima.size(), nullptr, 0, &context),
                 "stitch_context_create_for");
  const stitch_status status =
      api.run(context, inputs.data(), inputs.size(), outputs.data(), outputs.size(), stream);
  // Destroying the context waits for its run; the run's failure is the one to report.
  const stitch_status destroyed = api.context_destroy(context);
  library_.check(status, "stitch_run");
  library_.check(destroyed, "stitch_context_destroy");
}

void ModelInstance::read_tap(size_t index, void* data) {
  library_.check(
      library_.api().context_read_tap(context_, index, data, taps_.at(index).tensor.bytes),
      "stitch_context_read_tap");
}

} // namespace stitch::run
