// affine_model.cu: a hand-written stand-in for the launcher stitchc generates, for the model
// described in affine_model.h. Same source on both targets: compiled as C++ with
// -DSTITCH_HOST_TARGET for the runtime tests, and by nvcc for the CUDA link check.
//
// Like generated code, it defines stitch_generated_model() with the tensor tables, the embedded
// weights and an enqueue that puts two real kernels on the stream: the first writes output y and
// an intermediate into the arena, the second reduces the intermediate into output z. It also
// checks the runtime's promises about the buffers (arena and weights 256-byte aligned), and
// exports affine_model_set_fault so tests can make it fail in the ways a broken launch or a
// broken build would. AFFINE_MODEL_TWIN builds a twin whose input is named "x_twin".
#include "stitch_cuda.h"
#include "stitch_model_abi.h"

#include "affine_model.h"

#include <atomic>
#include <cstdint>
#include <cstdio>

namespace {

using affine::kCols;
using affine::kRows;

std::atomic<int> g_fault{affine::kNoFault};

// y = 2x + 1 and weighted = y * w, one thread per element.
__global__ void affine_and_weigh(const float* __restrict__ x, const float* __restrict__ w,
                                 float* __restrict__ y, float* __restrict__ weighted, int rows) {
  const int i = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (i >= rows * kCols) return;
  const float value = x[i] * 2.0f + 1.0f;
  y[i] = value;
  weighted[i] = value * w[i % kCols];
}

// z[row] = the sum of weighted[row, :], one block per row, a tree in shared memory.
__global__ void row_sum(const float* __restrict__ weighted, float* __restrict__ z) {
  STITCH_SHARED(float, partial, kCols);
  const int row = static_cast<int>(blockIdx.x);
  const int col = static_cast<int>(threadIdx.x);
  partial[col] = weighted[row * kCols + col];
  __syncthreads();
  for (int stride = kCols / 2; stride > 0; stride /= 2) {
    if (col < stride) partial[col] += partial[col + stride];
    __syncthreads();
  }
  if (col == 0) z[row] = partial[0];
}

int32_t fail_with(int32_t status, char* error, size_t error_size, const char* message) {
  std::snprintf(error, error_size, "%s", message);
  return status;
}

int32_t launch_failed(cudaError_t result, const char* kernel, char* error, size_t error_size) {
  std::snprintf(error, error_size, "kernel %s: %s (%s)", kernel, cudaGetErrorName(result),
                cudaGetErrorString(result));
  return 3; // STITCH_ERROR_CUDA
}

int32_t enqueue(const stitch_abi_buffers* b, char* error, size_t error_size) {
  if (reinterpret_cast<uintptr_t>(b->arena) % 256 != 0 || b->arena == nullptr)
    return fail_with(7, error, error_size, "the arena is null or not 256-byte aligned");
  if (reinterpret_cast<uintptr_t>(b->weights) % 256 != 0 || b->weights == nullptr)
    return fail_with(7, error, error_size, "the weights are null or not 256-byte aligned");
  const auto* x = static_cast<const float*>(b->inputs[0]);
  auto* y = static_cast<float*>(b->outputs[0]);
  auto* z = static_cast<float*>(b->outputs[1]);
  const auto* w = reinterpret_cast<const float*>(b->weights);
  // The symbolic variant reaches its intermediate through arena slot 0 (the context's layout).
  if (b->symbols != nullptr && b->arena_offsets == nullptr)
    return fail_with(7, error, error_size, "a symbolic model's run has no arena offsets");
  auto* weighted =
      reinterpret_cast<float*>(b->arena + (b->symbols != nullptr ? b->arena_offsets[0] : 0));

  // The symbolic variant's rows are the run's symbol 0; the fixed model's are kRows.
  const int rows = b->symbols != nullptr ? static_cast<int>(b->symbols[0]) : kRows;
  const unsigned threads = g_fault.load() == affine::kBadLaunch ? 2048u : 32u;
  cudaError_t result = STITCH_LAUNCH(affine_and_weigh, dim3(1), dim3(threads), 0, b->stream, x, w,
                                     y, weighted, rows);
  if (result != cudaSuccess) return launch_failed(result, "affine_and_weigh", error, error_size);
  // Debug taps, as --debug-taps generates them: the intermediate after the first kernel, z
  // after the second.
  if (b->taps != nullptr && cudaMemcpyAsync(b->taps[0], weighted, affine::kInputBytes,
                                            cudaMemcpyDeviceToDevice, b->stream) != cudaSuccess)
    return fail_with(3, error, error_size, "cudaMemcpyAsync of tap 0 failed");
  result = STITCH_LAUNCH(row_sum, dim3(static_cast<unsigned>(rows)), dim3(kCols), 0, b->stream,
                         weighted, z);
  if (result != cudaSuccess) return launch_failed(result, "row_sum", error, error_size);
  if (b->taps != nullptr && cudaMemcpyAsync(b->taps[1], z, affine::kSumBytes,
                                            cudaMemcpyDeviceToDevice, b->stream) != cudaSuccess)
    return fail_with(3, error, error_size, "cudaMemcpyAsync of tap 1 failed");
  return 0;
}

#if defined(STITCH_HOST_TARGET)
constexpr const char* kTarget = "host";
constexpr const char* kOtherTarget = "cuda";
#else
constexpr const char* kTarget = "cuda";
constexpr const char* kOtherTarget = "host";
#endif

#if defined(AFFINE_MODEL_TWIN)
constexpr const char* kInputName = "x_twin";
#else
constexpr const char* kInputName = "x";
#endif

const stitch_abi_tensor kInputs[] = {{kInputName, 1, 2, {kRows, kCols}, affine::kInputBytes, {}}};
const stitch_abi_tensor kBadInputs[] = {
    {kInputName, 1, 9, {kRows, kCols}, affine::kInputBytes, {}}};
const stitch_abi_tensor kOutputs[] = {{"y", 1, 2, {kRows, kCols}, affine::kInputBytes, {}},
                                      {"z", 1, 1, {kRows}, affine::kSumBytes, {}}};

const stitch_abi_tap kTaps[] = {
    {{"weighted", 1, 2, {kRows, kCols}, affine::kInputBytes, {}}, 0, "weigh"},
    {{"z", 1, 1, {kRows}, affine::kSumBytes, {}}, 1, "row_sum"}};

// The symbolic variant (affine::kSymbolicRows): x is float32[rows,8], rows in 1..kRows.
const stitch_abi_tensor kSymbolicInputs[] = {
    {kInputName, 1, 2, {-1, kCols}, affine::kInputBytes, {0, 0}}};
const stitch_abi_tensor kSymbolicOutputs[] = {{"y", 1, 2, {-1, kCols}, affine::kInputBytes, {0}},
                                              {"z", 1, 1, {-1}, affine::kSumBytes, {0}}};
const stitch_abi_symbol kSymbols[] = {{"rows", 1, kRows}};
void symbolic_output_dims(const int64_t* symbols, int64_t* dims) {
  dims[0] = symbols[0];
  dims[1] = kCols;
  dims[STITCH_ABI_MAX_RANK] = symbols[0];
}
// Its arena as slots: 0 the weighted intermediate (rows*8 floats), 1 a block of rows*256 bytes
// placed first and released last, as a larger intermediate of a generated model would be, so
// that the layout moves slot 0 with the maxima: at rows 4, slot 1 at 0 (1024 bytes) and slot 0
// at 1024 (an arena of 1280 bytes); at rows 1, slot 0 at 256 (512 bytes).
const int64_t kSymbolicOffsets[] = {1024, 0};
const int32_t kSymbolicSteps[] = {1, 0, ~0, ~1};
void symbolic_slot_bytes(const int64_t* symbols, uint64_t* bytes) {
  bytes[0] = static_cast<uint64_t>(symbols[0]) * kCols * sizeof(float);
  bytes[1] = static_cast<uint64_t>(symbols[0]) * 256;
}

const stitch_abi_build_info kBuildInfo = {
    "0.0.0-test",
    "0000000000000000000000000000000000000000000000000000000000000000",
    "affine.onnx",
    kTarget,
    "",
    "none",
    "fp32",
    "hand-written",
    "stitch"};

const stitch_abi_model kModel = {
    STITCH_ABI_VERSION,
    kTarget,
    1,
    2,
    kInputs,
    kOutputs,
    affine::kInputBytes, // arena: the weighted intermediate
    0,                   // workspace
    reinterpret_cast<const unsigned char*>(affine::kWeights),
    sizeof(affine::kWeights),
    enqueue,
    2, // debug taps
    kTaps,
    &kBuildInfo,
    0, // GEMM chains
    0,
    0, // cooperative launches
    nullptr,
    0, // symbolic dims
    nullptr,
    nullptr,
    0, // arena slots
    nullptr,
    0,
    nullptr,
    nullptr,
};

stitch_abi_model with_fault(int fault) {
  stitch_abi_model model = kModel;
  if (fault == affine::kAbiVersion) model.abi_version = 99;
  if (fault == affine::kWrongTarget) model.target = kOtherTarget;
  if (fault == affine::kBadTable) model.inputs = kBadInputs;
  if (fault == affine::kSymbolicRows) {
    model.inputs = kSymbolicInputs;
    model.outputs = kSymbolicOutputs;
    model.num_taps = 0;
    model.taps = nullptr;
    model.num_symbols = 1;
    model.symbols = kSymbols;
    model.output_dims = symbolic_output_dims;
    model.arena_bytes = affine::kSymbolicArenaBytes;
    model.num_arena_slots = 2;
    model.arena_offsets = kSymbolicOffsets;
    model.num_arena_steps = 4;
    model.arena_steps = kSymbolicSteps;
    model.arena_slot_bytes = symbolic_slot_bytes;
  }
  return model;
}

} // namespace

extern "C" __attribute__((visibility("default"))) void affine_model_set_fault(int fault) {
  g_fault.store(fault);
}

extern "C" const stitch_abi_model* stitch_generated_model(void) {
  static const stitch_abi_model models[] = {kModel,
                                            kModel,
                                            with_fault(affine::kAbiVersion),
                                            with_fault(affine::kWrongTarget),
                                            with_fault(affine::kBadTable),
                                            kModel,
                                            with_fault(affine::kSymbolicRows)};
  const int fault = g_fault.load();
  if (fault == affine::kNullModel) return nullptr;
  return fault >= 0 && fault < 7 ? &models[fault] : &models[0];
}
