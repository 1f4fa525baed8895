// test_model_runtime_v3.cpp: what API version 3 added, on the affine model library (host
// target): inputs and outputs found by name, the model's device, contexts in caller-provided
// memory, and runs without the context's CUDA Graph.
#include "model_runtime_test_support.h"

#include <cstdlib>

using namespace model_runtime_test;

namespace {

// Host memory at 256-byte alignment (plus `shift` bytes), freed at scope exit.
class CallerMemory {
public:
  CallerMemory(uint64_t bytes, std::size_t shift = 0)
      : memory_(std::aligned_alloc(256, (bytes + shift + 255) / 256 * 256 + 256), &std::free),
        shift_(shift) {
    // A value no run computes: the test sees whether the context wrote where it should.
    std::memset(memory_.get(), 0x5A, (bytes + shift + 255) / 256 * 256 + 256);
  }
  void* get() const { return static_cast<unsigned char*>(memory_.get()) + shift_; }

private:
  std::unique_ptr<void, void (*)(void*)> memory_;
  std::size_t shift_;
};

} // namespace

// Proves: names find the indices stitch_model_input/output use; an unknown name is an error
// that names it and lists the model's names; null arguments are errors.
TEST_CASE("model runtime: inputs and outputs by name", "[model_runtime]") {
  OwnedModel model;
  size_t index = 99;
  require_ok(stitch_model_input_index(model.get(), "x", &index));
  REQUIRE(index == 0);
  require_ok(stitch_model_output_index(model.get(), "z", &index));
  REQUIRE(index == 1);
  require_ok(stitch_model_output_index(model.get(), "y", &index));
  REQUIRE(index == 0);
  require_failure(stitch_model_input_index(model.get(), "y", &index), STITCH_ERROR_INVALID_ARGUMENT,
                  "stitch_model_input_index", "the model has no input named 'y' (its inputs: 'x')");
  require_failure(stitch_model_output_index(model.get(), nullptr, &index),
                  STITCH_ERROR_INVALID_ARGUMENT, "stitch_model_output_index", "name is null");
  require_failure(stitch_model_input_index(model.get(), "x", nullptr),
                  STITCH_ERROR_INVALID_ARGUMENT, "stitch_model_input_index", "out_index is null");
  int device = -1;
  require_ok(stitch_model_device(model.get(), &device));
  REQUIRE(device == 0);
}

// Proves: a context in caller memory computes what a context of its own computes, bitwise, and
// writes its intermediates into that memory (the arena at its start changes); the memory it
// asks for covers the arena, the workspace and the taps; too little or misaligned memory is
// refused with the reason; destroying the context leaves the caller's memory to the caller.
TEST_CASE("model runtime: a context in caller-provided memory", "[model_runtime]") {
  OwnedModel model;
  uint64_t bytes = 0;
  require_ok(stitch_model_context_memory(model.get(), &bytes));
  // The arena (the weighted intermediate), the library workspace, two taps: each 256-aligned.
  REQUIRE(bytes >= 256 * ((affine::kInputBytes + 255) / 256) + 2 * 256);

  const std::vector<float> x = random_matrix(11);
  AffineOutputs own, borrowed;
  {
    OwnedContext context(model.get());
    require_ok(run_affine(context.get(), x, own));
  }
  CallerMemory memory(bytes);
  stitch_context* context = nullptr;
  require_ok(stitch_context_create_in_memory(model.get(), memory.get(), bytes, &context));
  require_ok(run_affine(context, x, borrowed));
  REQUIRE(borrowed == own);
  REQUIRE(borrowed == reference_outputs(x));
  // The arena starts the block: it holds the weighted intermediate now, not the fill pattern.
  unsigned char fill[16];
  std::memset(fill, 0x5A, sizeof(fill));
  REQUIRE(std::memcmp(memory.get(), fill, sizeof(fill)) != 0);
  // Taps live in the block too and read back after the run.
  std::vector<float> tap(affine::kRows);
  require_ok(stitch_context_read_tap(context, 1, tap.data(), affine::kSumBytes));
  REQUIRE(std::memcmp(tap.data(), own.z.data(), affine::kSumBytes) == 0);
  require_ok(stitch_context_destroy(context));

  require_failure(stitch_context_create_in_memory(model.get(), memory.get(), bytes - 1, &context),
                  STITCH_ERROR_INVALID_ARGUMENT, "stitch_context_create_in_memory",
                  "bytes but a context needs " + std::to_string(bytes));
  REQUIRE(context == nullptr);
  CallerMemory shifted(bytes, 64);
  require_failure(stitch_context_create_in_memory(model.get(), shifted.get(), bytes, &context),
                  STITCH_ERROR_INVALID_ARGUMENT, "stitch_context_create_in_memory",
                  "memory is not 256-byte aligned");
  require_failure(stitch_context_create_in_memory(model.get(), nullptr, bytes, &context),
                  STITCH_ERROR_INVALID_ARGUMENT, "stitch_context_create_in_memory",
                  "memory is null");
}

// Proves: a run without the CUDA Graph computes what stitch_run computes (on the host target
// both are one synchronous enqueue), null options are stitch_run, and unknown flags are refused.
TEST_CASE("model runtime: runs with options", "[model_runtime]") {
  OwnedModel model;
  OwnedContext context(model.get());
  const std::vector<float> x = random_matrix(12);
  AlignedBuffer input(affine::kInputBytes), y(affine::kInputBytes), z(affine::kSumBytes);
  std::memcpy(input.floats(), x.data(), affine::kInputBytes);
  const stitch_tensor inputs[] = {matrix_tensor(input.floats())};
  const stitch_tensor outputs[] = {matrix_tensor(y.floats()), sum_tensor(z.floats())};
  const AffineOutputs expected = reference_outputs(x);
  for (const uint32_t flags : {0u, STITCH_RUN_NO_GRAPH}) {
    std::memset(y.floats(), 0xFF, affine::kInputBytes);
    std::memset(z.floats(), 0xFF, affine::kSumBytes);
    const stitch_run_options options{flags};
    require_ok(stitch_run_with_options(context.get(), inputs, 1, outputs, 2, nullptr, &options));
    REQUIRE(std::memcmp(y.floats(), expected.y.data(), affine::kInputBytes) == 0);
    REQUIRE(std::memcmp(z.floats(), expected.z.data(), affine::kSumBytes) == 0);
  }
  require_ok(stitch_run_with_options(context.get(), inputs, 1, outputs, 2, nullptr, nullptr));
  const stitch_run_options unknown{4u};
  require_failure(stitch_run_with_options(context.get(), inputs, 1, outputs, 2, nullptr, &unknown),
                  STITCH_ERROR_INVALID_ARGUMENT, "stitch_run_with_options",
                  "unknown run option flags 4");
}
