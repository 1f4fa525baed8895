// test_model_runtime_api.cpp: the model runtime used correctly, through the public C API of
// the affine model library (host target): what it reports about the model, what a run computes,
// and what the library exports.
#include "model_runtime_test_support.h"
#include "stitch/stitch_prefixed.h"

#include <dlfcn.h>

#include <cmath>
#include <filesystem>
#include <optional>
#include <thread>

using namespace model_runtime_test;

namespace {

// The twin library (same model, input named "x_twin"), loaded privately, and closed at exit.
class TwinLibrary {
public:
  TwinLibrary() : handle_(dlopen(STITCH_TEST_TWIN_LIBRARY, RTLD_NOW | RTLD_LOCAL)) {
    INFO("dlopen " << STITCH_TEST_TWIN_LIBRARY << ": " << (handle_ ? "" : dlerror()));
    REQUIRE(handle_ != nullptr);
  }
  ~TwinLibrary() {
    if (handle_ != nullptr) dlclose(handle_);
  }
  void* symbol(const char* name) const { return dlsym(handle_, name); }
  template <typename Function> Function function(const char* name) const {
    void* address = symbol(name);
    INFO("symbol " << name);
    REQUIRE(address != nullptr);
    return reinterpret_cast<Function>(address);
  }

private:
  void* handle_;
};

} // namespace

// Proves: the info queries describe the compiled model's tensors exactly, and the library
// reports its target and API version.
TEST_CASE("model runtime: target, version and tensor info", "[model_runtime]") {
  REQUIRE(std::string(stitch_target()) == "host");
  REQUIRE(stitch_api_version() == STITCH_API_VERSION);
  stitch_build_info build{};
  require_ok(stitch_library_build_info(&build));
  REQUIRE(std::string(build.model_file) == "affine.onnx");
  REQUIRE(std::string(build.target) == "host");
  REQUIRE(std::string(build.symbol_prefix) == "stitch");
  REQUIRE(stitch_library_build_info(nullptr) == STITCH_ERROR_INVALID_ARGUMENT);
  OwnedModel model;
  size_t inputs = 0, outputs = 0;
  require_ok(stitch_model_num_inputs(model.get(), &inputs));
  require_ok(stitch_model_num_outputs(model.get(), &outputs));
  REQUIRE(inputs == 1);
  REQUIRE(outputs == 2);

  stitch_tensor_info info{};
  require_ok(stitch_model_input(model.get(), 0, &info));
  REQUIRE(std::string(info.name) == "x");
  REQUIRE(info.dtype == STITCH_FLOAT32);
  REQUIRE(info.rank == 2);
  REQUIRE(info.dims[0] == affine::kRows);
  REQUIRE(info.dims[1] == affine::kCols);
  REQUIRE(info.bytes == affine::kInputBytes);

  require_ok(stitch_model_output(model.get(), 1, &info));
  REQUIRE(std::string(info.name) == "z");
  REQUIRE(info.rank == 1);
  REQUIRE(info.dims[0] == affine::kRows);
  REQUIRE(info.bytes == affine::kSumBytes);
}

// Proves: a run computes both outputs right from fresh random inputs: y straight from the
// input, z through the arena and the weights the model copied at create.
TEST_CASE("model runtime: a run computes y = 2x + 1 and z = rowsum(y * w)", "[model_runtime]") {
  OwnedModel model;
  OwnedContext context(model.get());
  const std::vector<float> x = random_matrix(7);
  AffineOutputs out;
  require_ok(run_affine(context.get(), x, out));
  const AffineOutputs expected = reference_outputs(x);
  for (int i = 0; i < affine::kRows * affine::kCols; ++i)
    REQUIRE(out.y[i] == expected.y[i]);
  for (int r = 0; r < affine::kRows; ++r) {
    REQUIRE(std::isfinite(out.z[r]));
    REQUIRE(out.z[r] == expected.z[r]);
  }
}

// Proves: a library with debug taps describes them, and after a run each tap holds the value
// its tensor had when its group finished: the arena intermediate and the output z.
TEST_CASE("model runtime: debug taps hold each group's tensors after a run", "[model_runtime]") {
  OwnedModel model;
  size_t taps = 0;
  require_ok(stitch_model_num_taps(model.get(), &taps));
  REQUIRE(taps == 2);
  stitch_tap_info info{};
  require_ok(stitch_model_tap(model.get(), 0, &info));
  REQUIRE(std::string(info.tensor.name) == "weighted");
  REQUIRE(info.tensor.bytes == affine::kInputBytes);
  REQUIRE(info.group == 0);
  REQUIRE(std::string(info.node) == "weigh");
  require_ok(stitch_model_tap(model.get(), 1, &info));
  REQUIRE(std::string(info.tensor.name) == "z");
  REQUIRE(info.group == 1);

  OwnedContext context(model.get());
  const std::vector<float> x = random_matrix(21);
  AffineOutputs out;
  require_ok(run_affine(context.get(), x, out));
  const AffineOutputs expected = reference_outputs(x);
  std::vector<float> weighted(affine::kRows * affine::kCols);
  require_ok(stitch_context_read_tap(context.get(), 0, weighted.data(), affine::kInputBytes));
  for (int r = 0; r < affine::kRows; ++r)
    for (int c = 0; c < affine::kCols; ++c)
      REQUIRE(weighted[r * affine::kCols + c] ==
              expected.y[r * affine::kCols + c] * affine::kWeights[c]);
  std::vector<float> z(affine::kRows);
  require_ok(stitch_context_read_tap(context.get(), 1, z.data(), affine::kSumBytes));
  for (int r = 0; r < affine::kRows; ++r)
    REQUIRE(z[r] == expected.z[r]);
}

// Proves: a context runs again and again on new buffers and new values, each run right.
TEST_CASE("model runtime: one context, many runs on fresh buffers", "[model_runtime]") {
  OwnedModel model;
  OwnedContext context(model.get());
  for (uint32_t seed = 100; seed < 110; ++seed) {
    const std::vector<float> x = random_matrix(seed);
    AffineOutputs out;
    require_ok(run_affine(context.get(), x, out));
    REQUIRE(out == reference_outputs(x));
  }
}

// Proves: a buffer larger than the tensor is accepted (bytes is the buffer's size), and only
// the tensor's bytes are written; 16-byte (not 64-byte) alignment is enough.
TEST_CASE("model runtime: larger and 16-byte aligned buffers are accepted", "[model_runtime]") {
  OwnedModel model;
  OwnedContext context(model.get());
  const std::vector<float> x = random_matrix(11);
  AlignedBuffer input(affine::kInputBytes + 16), y(2 * affine::kInputBytes), z(affine::kSumBytes);
  std::memcpy(input.floats(16), x.data(), affine::kInputBytes);
  const float sentinel = 12345.0f;
  y.floats()[affine::kRows * affine::kCols] = sentinel;
  stitch_tensor inputs[] = {matrix_tensor(input.floats(16))};
  stitch_tensor outputs[] = {matrix_tensor(y.floats()), sum_tensor(z.floats())};
  outputs[0].bytes = 2 * affine::kInputBytes;
  require_ok(stitch_run(context.get(), inputs, 1, outputs, 2, nullptr));
  REQUIRE(std::memcmp(y.floats(), reference_outputs(x).y.data(), affine::kInputBytes) == 0);
  REQUIRE(y.floats()[affine::kRows * affine::kCols] == sentinel);
}

// Proves: several models and contexts live side by side, each context with its own arena.
TEST_CASE("model runtime: two models, interleaved contexts", "[model_runtime]") {
  OwnedModel first, second;
  OwnedContext a(first.get()), b(second.get()), c(first.get());
  for (uint32_t seed = 0; seed < 3; ++seed) {
    for (stitch_context* context : {a.get(), b.get(), c.get()}) {
      const std::vector<float> x = random_matrix(seed * 3 + 1);
      AffineOutputs out;
      require_ok(run_affine(context, x, out));
      REQUIRE(out == reference_outputs(x));
    }
  }
}

// Proves: every status has its enumerator's name, and an unknown one is named as such.
TEST_CASE("model runtime: status names", "[model_runtime]") {
  REQUIRE(std::string(stitch_status_name(STITCH_OK)) == "STITCH_OK");
  REQUIRE(std::string(stitch_status_name(STITCH_ERROR_INVALID_ARGUMENT)) ==
          "STITCH_ERROR_INVALID_ARGUMENT");
  REQUIRE(std::string(stitch_status_name(STITCH_ERROR_SHAPE_MISMATCH)) ==
          "STITCH_ERROR_SHAPE_MISMATCH");
  REQUIRE(std::string(stitch_status_name(STITCH_ERROR_CUDA)) == "STITCH_ERROR_CUDA");
  REQUIRE(std::string(stitch_status_name(STITCH_ERROR_CUBLAS)) == "STITCH_ERROR_CUBLAS");
  REQUIRE(std::string(stitch_status_name(STITCH_ERROR_CUDNN)) == "STITCH_ERROR_CUDNN");
  REQUIRE(std::string(stitch_status_name(STITCH_ERROR_OUT_OF_MEMORY)) ==
          "STITCH_ERROR_OUT_OF_MEMORY");
  REQUIRE(std::string(stitch_status_name(STITCH_ERROR_INTERNAL)) == "STITCH_ERROR_INTERNAL");
  REQUIRE(std::string(stitch_status_name(static_cast<stitch_status>(42))) ==
          "STITCH_ERROR_UNKNOWN_STATUS");
}

// Proves: a model library exports the whole stitch.h API and keeps stitch_generated_model to
// itself, so each library binds its own generated model: the twin, loaded privately into a
// process that already has this library's exported symbols first in line, still describes its
// own input; and a handle of one library is not a handle of the other.
TEST_CASE("model runtime: exports, and each library binds its own model", "[model_runtime]") {
  TwinLibrary twin;
#define STITCH_NAME_OF(type, name, params) "stitch_" #name,
  for (const char* name : {STITCH_API_FUNCTIONS(STITCH_NAME_OF)}) {
    INFO("symbol " << name);
    REQUIRE(twin.symbol(name) != nullptr);
  }
#undef STITCH_NAME_OF
  REQUIRE(twin.symbol("stitch_generated_model") == nullptr);

  const auto create = twin.function<stitch_status (*)(stitch_model**)>("stitch_model_create");
  const auto destroy = twin.function<stitch_status (*)(stitch_model*)>("stitch_model_destroy");
  const auto input =
      twin.function<stitch_status (*)(const stitch_model*, size_t, stitch_tensor_info*)>(
          "stitch_model_input");
  const auto last_error = twin.function<const char* (*)()>("stitch_last_error");

  stitch_model* twin_model = nullptr;
  require_ok(create(&twin_model));
  stitch_tensor_info info{};
  require_ok(input(twin_model, 0, &info));
  REQUIRE(std::string(info.name) == "x_twin");

  OwnedModel own;
  REQUIRE(input(own.get(), 0, &info) == STITCH_ERROR_INVALID_ARGUMENT);
  REQUIRE_THAT(std::string(last_error()), Catch::Matchers::Contains("not a live model"));
  require_failure(stitch_model_input(twin_model, 0, &info), STITCH_ERROR_INVALID_ARGUMENT,
                  "stitch_model_input", "not a live model");
  require_ok(destroy(twin_model));
}

namespace {

// The OS threads of this process (/proc/self/task).
std::size_t process_threads() {
  std::size_t count = 0;
  for (const auto& entry : std::filesystem::directory_iterator("/proc/self/task")) {
    (void)entry;
    ++count;
  }
  return count;
}

} // namespace

// Proves: destroying the library's last model stops the host emulation's worker threads (every
// model library holds a pool of its own, and its threads cache fiber stacks: a process loading
// many libraries kept them all until mmap ran out of mappings); the next model's runs start
// them again and compute as before.
TEST_CASE("model runtime: the last model destroyed releases the emulation's worker threads",
          "[model_runtime]") {
  // The baseline after a first model's life: a sanitizer's runtime starts a thread of its own
  // once the process has more than one.
  std::size_t before = 0;
  for (int round = 0; round < 3; ++round) {
    std::optional<OwnedModel> model;
    model.emplace();
    {
      OwnedContext context(model->get());
      const std::vector<float> x = random_matrix(7 + static_cast<uint32_t>(round));
      AffineOutputs out;
      require_ok(run_affine(context.get(), x, out)); // a launch of one block per row
      REQUIRE(out == reference_outputs(x));
      if (round > 0 && std::thread::hardware_concurrency() > 1) CHECK(process_threads() > before);
    }
    model.reset(); // the library's last model
    if (round == 0)
      before = process_threads();
    else
      CHECK(process_threads() == before);
  }
}
