// test_model_runtime_misuse.cpp: the model runtime used wrongly. Each misuse must come back as
// the right status with a message naming the function and the problem, never as a crash, and
// must leave the model and context usable.
#include "model_runtime_test_support.h"

#include <thread>

using namespace model_runtime_test;

namespace {

// The arguments of one stitch_run, valid until a test breaks one of them.
struct RunArguments {
  AlignedBuffer x{affine::kInputBytes}, y{affine::kInputBytes}, z{affine::kSumBytes};
  stitch_tensor inputs[1] = {matrix_tensor(x.floats())};
  stitch_tensor outputs[2] = {matrix_tensor(y.floats()), sum_tensor(z.floats())};

  stitch_status run(stitch_context* context, size_t num_inputs = 1, size_t num_outputs = 2) {
    return stitch_run(context, inputs, num_inputs, outputs, num_outputs, nullptr);
  }
};

// Proves the context still works after a refused call.
void require_context_works(stitch_context* context) {
  const std::vector<float> x = random_matrix(99);
  AffineOutputs out;
  require_ok(run_affine(context, x, out));
  REQUIRE(out == reference_outputs(x));
}

// Sets the model's fault for the scope, and clears it at exit whatever happens.
class ScopedFault {
public:
  explicit ScopedFault(int fault) { affine_model_set_fault(fault); }
  ~ScopedFault() { affine_model_set_fault(affine::kNoFault); }
  ScopedFault(const ScopedFault&) = delete;
  ScopedFault& operator=(const ScopedFault&) = delete;
};

} // namespace

// Proves: a null pointer in any argument of any function is STITCH_ERROR_INVALID_ARGUMENT
// naming the argument.
TEST_CASE("model runtime misuse: null pointers", "[model_runtime]") {
  OwnedModel model;
  OwnedContext context(model.get());
  size_t count = 0;
  stitch_tensor_info info{};
  const auto E = STITCH_ERROR_INVALID_ARGUMENT;

  require_failure(stitch_model_create(nullptr), E, "stitch_model_create", "out_model is null");
  require_failure(stitch_model_destroy(nullptr), E, "stitch_model_destroy", "model is null");
  require_failure(stitch_model_num_inputs(nullptr, &count), E, "stitch_model_num_inputs",
                  "model is null");
  require_failure(stitch_model_num_inputs(model.get(), nullptr), E, "stitch_model_num_inputs",
                  "out_count is null");
  require_failure(stitch_model_num_outputs(nullptr, &count), E, "stitch_model_num_outputs",
                  "model is null");
  require_failure(stitch_model_num_outputs(model.get(), nullptr), E, "stitch_model_num_outputs",
                  "out_count is null");
  require_failure(stitch_model_input(nullptr, 0, &info), E, "stitch_model_input", "model is null");
  require_failure(stitch_model_input(model.get(), 0, nullptr), E, "stitch_model_input",
                  "out_info is null");
  require_failure(stitch_model_output(nullptr, 0, &info), E, "stitch_model_output",
                  "model is null");
  require_failure(stitch_model_output(model.get(), 0, nullptr), E, "stitch_model_output",
                  "out_info is null");
  stitch_context* out_context = reinterpret_cast<stitch_context*>(&count);
  require_failure(stitch_context_create(nullptr, &out_context), E, "stitch_context_create",
                  "model is null");
  REQUIRE(out_context == nullptr);
  require_failure(stitch_context_create(model.get(), nullptr), E, "stitch_context_create",
                  "out_context is null");
  require_failure(stitch_context_destroy(nullptr), E, "stitch_context_destroy", "context is null");

  RunArguments args;
  require_failure(args.run(nullptr), E, "stitch_run", "context is null");
  require_failure(stitch_run(context.get(), nullptr, 1, args.outputs, 2, nullptr), E, "stitch_run",
                  "inputs is null but the model has 1 input");
  require_failure(stitch_run(context.get(), args.inputs, 1, nullptr, 2, nullptr), E, "stitch_run",
                  "outputs is null but the model has 2 outputs");
  args.inputs[0].data = nullptr;
  require_failure(args.run(context.get()), E, "stitch_run", "input 0 ('x'): data is null");
  args.inputs[0].data = args.x.floats();
  args.outputs[1].data = nullptr;
  require_failure(args.run(context.get()), E, "stitch_run", "output 1 ('z'): data is null");
  args.outputs[1].data = args.z.floats();
  args.outputs[0].dims = nullptr;
  require_failure(args.run(context.get()), E, "stitch_run",
                  "output 0 ('y'): dims is null for rank 2");
  require_context_works(context.get());
}

// Proves: index and count errors are STITCH_ERROR_INVALID_ARGUMENT saying what the model has.
TEST_CASE("model runtime misuse: indices and counts", "[model_runtime]") {
  OwnedModel model;
  OwnedContext context(model.get());
  stitch_tensor_info info{};
  require_failure(stitch_model_input(model.get(), 1, &info), STITCH_ERROR_INVALID_ARGUMENT,
                  "stitch_model_input", "input index 1 is out of range: the model has 1 input");
  require_failure(stitch_model_output(model.get(), 2, &info), STITCH_ERROR_INVALID_ARGUMENT,
                  "stitch_model_output", "output index 2 is out of range: the model has 2 outputs");
  RunArguments args;
  require_failure(args.run(context.get(), 0, 2), STITCH_ERROR_INVALID_ARGUMENT, "stitch_run",
                  "num_inputs is 0 but the model has 1 input");
  require_failure(args.run(context.get(), 2, 2), STITCH_ERROR_INVALID_ARGUMENT, "stitch_run",
                  "num_inputs is 2 but the model has 1 input");
  require_failure(args.run(context.get(), 1, 1), STITCH_ERROR_INVALID_ARGUMENT, "stitch_run",
                  "num_outputs is 1 but the model has 2 outputs");
  require_failure(args.run(context.get(), 1, 3), STITCH_ERROR_INVALID_ARGUMENT, "stitch_run",
                  "num_outputs is 3 but the model has 2 outputs");
  require_ok(args.run(context.get()));
}

// Proves: a tensor whose dtype, rank, dims or byte size differ from the model's is
// STITCH_ERROR_SHAPE_MISMATCH saying what was given and what the model expects.
TEST_CASE("model runtime misuse: dtype, shape and byte size", "[model_runtime]") {
  OwnedModel model;
  OwnedContext context(model.get());
  RunArguments args;
  const auto S = STITCH_ERROR_SHAPE_MISMATCH;

  SECTION("dtype") {
    args.inputs[0].dtype = STITCH_INT32;
    require_failure(args.run(context.get()), S, "stitch_run",
                    "input 0 ('x'): dtype is int32 but the model expects float32[4,8]");
    args.inputs[0].dtype = STITCH_FLOAT32;
    args.outputs[1].dtype = static_cast<stitch_dtype>(99);
    require_failure(args.run(context.get()), S, "stitch_run",
                    "output 1 ('z'): dtype is dtype 99 but the model expects float32[4]");
  }
  SECTION("rank") {
    const int64_t flat[] = {32};
    args.inputs[0].rank = 1;
    args.inputs[0].dims = flat;
    require_failure(args.run(context.get()), S, "stitch_run",
                    "input 0 ('x'): rank is 1 but the model expects float32[4,8] (rank 2)");
    args.inputs[0].rank = -1;
    require_failure(args.run(context.get()), S, "stitch_run", "input 0 ('x'): rank is -1");
    args.inputs[0].rank = 9;
    require_failure(args.run(context.get()), S, "stitch_run", "input 0 ('x'): rank is 9");
  }
  SECTION("dims") {
    const int64_t transposed[] = {8, 4};
    args.outputs[0].dims = transposed;
    require_failure(args.run(context.get()), S, "stitch_run",
                    "output 0 ('y'): shape is [8,4] but the model expects float32[4,8]");
  }
  SECTION("bytes") {
    args.inputs[0].bytes = affine::kInputBytes - 1;
    require_failure(args.run(context.get()), S, "stitch_run",
                    "input 0 ('x'): the buffer is 127 bytes but float32[4,8] needs 128");
    args.inputs[0].bytes = affine::kInputBytes;
    args.outputs[1].bytes = 0;
    require_failure(args.run(context.get()), S, "stitch_run",
                    "output 1 ('z'): the buffer is 0 bytes but float32[4] needs 16");
  }
  require_context_works(context.get());
}

// Proves: a buffer that is not 16-byte aligned is STITCH_ERROR_INVALID_ARGUMENT, for inputs and
// outputs alike.
TEST_CASE("model runtime misuse: misaligned buffers", "[model_runtime]") {
  OwnedModel model;
  OwnedContext context(model.get());
  RunArguments args;
  for (size_t shift : {4, 8, 12}) {
    INFO("shifted by " << shift << " bytes");
    args.inputs[0].data = args.x.floats(shift);
    require_failure(args.run(context.get()), STITCH_ERROR_INVALID_ARGUMENT, "stitch_run",
                    "input 0 ('x'): data 0x");
    REQUIRE_THAT(std::string(stitch_last_error()),
                 Catch::Matchers::Contains("is not 16-byte aligned"));
    args.inputs[0].data = args.x.floats();
    args.outputs[1].data = args.z.floats(shift);
    require_failure(args.run(context.get()), STITCH_ERROR_INVALID_ARGUMENT, "stitch_run",
                    "is not 16-byte aligned");
    REQUIRE_THAT(std::string(stitch_last_error()), Catch::Matchers::Contains("output 1 ('z')"));
    args.outputs[1].data = args.z.floats();
  }
  require_ok(args.run(context.get()));
}

// Proves: an output that shares bytes with an input or another output is refused.
TEST_CASE("model runtime misuse: overlapping outputs", "[model_runtime]") {
  OwnedModel model;
  OwnedContext context(model.get());
  RunArguments args;
  args.outputs[0].data = args.x.floats();
  require_failure(args.run(context.get()), STITCH_ERROR_INVALID_ARGUMENT, "stitch_run",
                  "output 0 ('y') overlaps input 0 ('x')");
  args.outputs[0].data = args.y.floats();
  args.outputs[1].data = args.y.floats(affine::kInputBytes - 16);
  require_failure(args.run(context.get()), STITCH_ERROR_INVALID_ARGUMENT, "stitch_run",
                  "output 1 ('z') overlaps output 0 ('y')");
  args.outputs[1].data = args.z.floats();
  require_ok(args.run(context.get()));
}

// Proves: use after destroy and double destroy are errors, also when a new object has taken
// the destroyed one's memory, and a model with live contexts cannot be destroyed.
TEST_CASE("model runtime misuse: use after destroy, double destroy", "[model_runtime]") {
  RunArguments args;
  stitch_model* model = nullptr;
  require_ok(stitch_model_create(&model));
  stitch_context* context = nullptr;
  require_ok(stitch_context_create(model, &context));

  require_failure(stitch_model_destroy(model), STITCH_ERROR_INVALID_ARGUMENT,
                  "stitch_model_destroy", "still has 1 live context; destroy its contexts first");
  require_ok(args.run(context));

  require_ok(stitch_context_destroy(context));
  require_failure(args.run(context), STITCH_ERROR_INVALID_ARGUMENT, "stitch_run",
                  "is not a live context");
  require_failure(stitch_context_destroy(context), STITCH_ERROR_INVALID_ARGUMENT,
                  "stitch_context_destroy", "is not a live context");

  require_ok(stitch_model_destroy(model));
  size_t count = 0;
  require_failure(stitch_model_num_inputs(model, &count), STITCH_ERROR_INVALID_ARGUMENT,
                  "stitch_model_num_inputs", "is not a live model");
  stitch_context* late = nullptr;
  require_failure(stitch_context_create(model, &late), STITCH_ERROR_INVALID_ARGUMENT,
                  "stitch_context_create", "is not a live model");
  require_failure(stitch_model_destroy(model), STITCH_ERROR_INVALID_ARGUMENT,
                  "stitch_model_destroy", "is not a live model");

  // New objects, likely at the freed addresses: the stale handles must not reach them.
  OwnedModel fresh_model;
  OwnedContext fresh_context(fresh_model.get());
  require_failure(stitch_model_destroy(model), STITCH_ERROR_INVALID_ARGUMENT,
                  "stitch_model_destroy", "is not a live model");
  require_failure(stitch_context_destroy(context), STITCH_ERROR_INVALID_ARGUMENT,
                  "stitch_context_destroy", "is not a live context");
  require_context_works(fresh_context.get());
}

// Proves: the debug-tap calls refuse null pointers, indices out of range, short buffers, a
// context that has not run, and destroyed handles, each with a status and a message.
TEST_CASE("model runtime misuse: debug taps", "[model_runtime]") {
  stitch_model* model = nullptr;
  require_ok(stitch_model_create(&model));
  stitch_tap_info info{};
  require_failure(stitch_model_num_taps(model, nullptr), STITCH_ERROR_INVALID_ARGUMENT,
                  "stitch_model_num_taps", "out_count is null");
  require_failure(stitch_model_tap(model, 0, nullptr), STITCH_ERROR_INVALID_ARGUMENT,
                  "stitch_model_tap", "out_info is null");
  require_failure(stitch_model_tap(model, 2, &info), STITCH_ERROR_INVALID_ARGUMENT,
                  "stitch_model_tap", "tap index 2 is out of range: the model has 2 taps");
  stitch_context* context = nullptr;
  require_ok(stitch_context_create(model, &context));
  std::vector<float> z(affine::kRows);
  require_failure(stitch_context_read_tap(context, 1, z.data(), affine::kSumBytes),
                  STITCH_ERROR_INVALID_ARGUMENT, "stitch_context_read_tap",
                  "the context has not run yet");
  RunArguments args;
  require_ok(args.run(context));
  require_failure(stitch_context_read_tap(context, 1, nullptr, affine::kSumBytes),
                  STITCH_ERROR_INVALID_ARGUMENT, "stitch_context_read_tap", "data is null");
  require_failure(stitch_context_read_tap(context, 1, z.data(), affine::kSumBytes - 1),
                  STITCH_ERROR_SHAPE_MISMATCH, "stitch_context_read_tap",
                  "tap 1 ('z') is 16 bytes but the buffer is 15");
  require_failure(stitch_context_read_tap(context, 7, z.data(), affine::kSumBytes),
                  STITCH_ERROR_INVALID_ARGUMENT, "stitch_context_read_tap", "out of range");
  require_ok(stitch_context_read_tap(context, 1, z.data(), affine::kSumBytes));
  require_ok(stitch_context_destroy(context));
  require_failure(stitch_context_read_tap(context, 1, z.data(), affine::kSumBytes),
                  STITCH_ERROR_INVALID_ARGUMENT, "stitch_context_read_tap",
                  "is not a live context");
  require_ok(stitch_model_destroy(model));
  require_failure(stitch_model_tap(model, 0, &info), STITCH_ERROR_INVALID_ARGUMENT,
                  "stitch_model_tap", "is not a live model");
}

// Proves: made-up handles, and a handle of the wrong kind, are refused without being read.
TEST_CASE("model runtime misuse: foreign handles", "[model_runtime]") {
  OwnedModel model;
  OwnedContext context(model.get());
  size_t count = 0;
  int on_stack = 0;
  for (void* bogus : {reinterpret_cast<void*>(0x10), static_cast<void*>(&on_stack),
                      reinterpret_cast<void*>(~uintptr_t{0} - 7)}) {
    require_failure(stitch_model_num_inputs(static_cast<stitch_model*>(bogus), &count),
                    STITCH_ERROR_INVALID_ARGUMENT, "stitch_model_num_inputs",
                    "is not a live model");
    require_failure(stitch_context_destroy(static_cast<stitch_context*>(bogus)),
                    STITCH_ERROR_INVALID_ARGUMENT, "stitch_context_destroy",
                    "is not a live context");
  }
  require_failure(stitch_model_num_inputs(reinterpret_cast<stitch_model*>(context.get()), &count),
                  STITCH_ERROR_INVALID_ARGUMENT, "stitch_model_num_inputs", "is not a live model");
  RunArguments args;
  require_failure(args.run(reinterpret_cast<stitch_context*>(model.get())),
                  STITCH_ERROR_INVALID_ARGUMENT, "stitch_run", "is not a live context");
  require_context_works(context.get());
}

// Proves: a failing kernel launch inside enqueue comes back as STITCH_ERROR_CUDA with the
// kernel's name and CUDA's error, and the context runs normally afterwards.
TEST_CASE("model runtime misuse: a failing launch", "[model_runtime]") {
  OwnedModel model;
  OwnedContext context(model.get());
  RunArguments args;
  {
    const ScopedFault fault(affine::kBadLaunch);
    require_failure(args.run(context.get()), STITCH_ERROR_CUDA, "stitch_run",
                    "kernel affine_and_weigh: cudaErrorInvalidConfiguration");
  }
  require_context_works(context.get());
}

// Proves: a generated model that breaks the ABI is refused at create as STITCH_ERROR_INTERNAL,
// with *out_model null, before anything reads its tables.
TEST_CASE("model runtime misuse: broken generated model", "[model_runtime]") {
  const struct {
    int fault;
    const char* fragment;
  } cases[] = {
      {affine::kAbiVersion, "the generated code speaks ABI version 99 but the runtime"},
      {affine::kWrongTarget, "the generated code is for target 'cuda' but is linked with the "
                             "'host' runtime"},
      {affine::kBadTable, "input 0 ('x') has rank 9 (0 to 8)"},
      {affine::kNullModel, "stitch_generated_model() returned null"},
  };
  for (const auto& broken : cases) {
    INFO("fault " << broken.fault);
    const ScopedFault fault(broken.fault);
    stitch_model* model = reinterpret_cast<stitch_model*>(&model);
    require_failure(stitch_model_create(&model), STITCH_ERROR_INTERNAL, "stitch_model_create",
                    broken.fragment);
    REQUIRE(model == nullptr);
  }
  OwnedModel healthy;
}

// Proves: stitch_last_error belongs to the calling thread: another thread starts with "",
// sees its own failure, and does not disturb this thread's message.
TEST_CASE("model runtime misuse: the last error is per thread", "[model_runtime]") {
  require_failure(stitch_model_destroy(nullptr), STITCH_ERROR_INVALID_ARGUMENT,
                  "stitch_model_destroy", "model is null");
  std::string initial, after;
  stitch_status status = STITCH_OK;
  std::thread other([&] {
    initial = stitch_last_error();
    status = stitch_context_destroy(nullptr);
    after = stitch_last_error();
  });
  other.join();
  REQUIRE(initial.empty());
  REQUIRE(status == STITCH_ERROR_INVALID_ARGUMENT);
  REQUIRE(after == "stitch_context_destroy: context is null");
  REQUIRE(std::string(stitch_last_error()) == "stitch_model_destroy: model is null");
}
