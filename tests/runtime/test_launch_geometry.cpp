// Launches on the host target: every thread of a 3-D grid sees the right built-in indices,
// shared memory (static and dynamic) is per block and starts as garbage, and launches the CUDA
// runtime would refuse come back as error codes with a message instead of running or aborting.
#include "stitch_cuda.h"

#include "portable_kernels.h"
#include "runtime_test_support.h"

#include <cmath>
#include <string>
#include <vector>

using stitch::test::DeviceBuffer;

namespace {

// Each thread records its block and thread indices and the launch dimensions at its global
// linear position.
__global__ void record_indices(unsigned* out) {
  const unsigned block = blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
  const unsigned threads = blockDim.x * blockDim.y * blockDim.z;
  const unsigned thread = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
  unsigned* slot = out + 12 * (block * threads + thread);
  const unsigned values[12] = {blockIdx.x,  blockIdx.y,  blockIdx.z, threadIdx.x,
                               threadIdx.y, threadIdx.z, blockDim.x, blockDim.y,
                               blockDim.z,  gridDim.x,   gridDim.y,  gridDim.z};
  for (int i = 0; i < 12; ++i)
    slot[i] = values[i];
}

__global__ void read_uninitialized_shared(float* out) {
  STITCH_SHARED(float, never_written, 64);
  out[threadIdx.x] = never_written[threadIdx.x];
}

__global__ void read_uninitialized_dynamic_shared(float* out) {
  STITCH_DYNAMIC_SHARED(float, never_written);
  out[threadIdx.x] = never_written[threadIdx.x];
}

// 13 000 floats is 52 000 bytes of static shared memory, over CUDA's 48 KiB.
__global__ void too_much_static_shared(float* out) {
  STITCH_SHARED(float, huge, 13000);
  huge[threadIdx.x] = 1.0f;
  out[threadIdx.x] = huge[threadIdx.x];
}

__global__ void touch_dynamic_shared(float* out) {
  STITCH_DYNAMIC_SHARED(unsigned char, bytes);
  bytes[threadIdx.x] = 1;
  out[threadIdx.x] = bytes[threadIdx.x];
}

__global__ void write_one(float* out) { out[threadIdx.x] = 1.0f; }

template <int kScale> __global__ void scale_by(const float* in, float* out, long long count) {
  const long long i = threadIdx.x;
  if (i < count) out[i] = in[i] * kScale;
}

__constant__ float kOffsets[4];

// Kernel parameters are each thread's own copy: changing one does not affect other threads.
__global__ void add_constant_offsets(float* out, int step) {
  step *= static_cast<int>(threadIdx.x);
  out[threadIdx.x] = kOffsets[threadIdx.x % 4] + static_cast<float>(step);
}

__global__ void launch_from_device(float* out, int* status) {
  *status = STITCH_LAUNCH(write_one, 1, 1, 0, nullptr, out);
}

} // namespace

TEST_CASE("every thread of a 3-D grid sees its own blockIdx, threadIdx, blockDim and gridDim",
          "[runtime]") {
  const dim3 grid(3, 2, 2), block(4, 3, 2);
  const unsigned blocks = 12, threads = 24;
  DeviceBuffer<unsigned> out(12 * blocks * threads);
  REQUIRE(STITCH_LAUNCH(record_indices, grid, block, 0, nullptr, out.get()) == cudaSuccess);
  const std::vector<unsigned> recorded = out.download();
  for (unsigned bz = 0; bz < 2; ++bz)
    for (unsigned by = 0; by < 2; ++by)
      for (unsigned bx = 0; bx < 3; ++bx)
        for (unsigned tz = 0; tz < 2; ++tz)
          for (unsigned ty = 0; ty < 3; ++ty)
            for (unsigned tx = 0; tx < 4; ++tx) {
              const unsigned b = bx + 3 * (by + 2 * bz), t = tx + 4 * (ty + 3 * tz);
              const std::vector<unsigned> expected = {bx, by, bz, tx, ty, tz, 4, 3, 2, 3, 2, 2};
              const std::vector<unsigned> got(recorded.begin() + 12 * (b * threads + t),
                                              recorded.begin() + 12 * (b * threads + t + 1));
              REQUIRE(got == expected);
            }
}

TEST_CASE("template kernels launch in parentheses; arguments convert to parameter types",
          "[runtime]") {
  const std::vector<float> input = stitch::test::random_floats(32, -1, 1, 12);
  DeviceBuffer<float> in(input), out(32);
  const int count = 32; // an int argument for a long long parameter
  REQUIRE(STITCH_LAUNCH((scale_by<3>), 1, 32, 0, nullptr, in.get(), out.get(), count) ==
          cudaSuccess);
  const std::vector<float> got = out.download();
  for (int i = 0; i < 32; ++i)
    CHECK(got[i] == input[i] * 3);
}

TEST_CASE("__constant__ data set with cudaMemcpyToSymbol is visible to kernels", "[runtime]") {
  const float offsets[4] = {0.5f, 1.5f, 2.5f, 3.5f};
  REQUIRE(cudaMemcpyToSymbol(kOffsets, offsets, sizeof offsets) == cudaSuccess);
  DeviceBuffer<float> out(8);
  REQUIRE(STITCH_LAUNCH(add_constant_offsets, 1, 8, 0, nullptr, out.get(), 10) == cudaSuccess);
  const std::vector<float> got = out.download();
  for (int t = 0; t < 8; ++t)
    CHECK(got[t] == offsets[t % 4] + 10.0f * t);
}

TEST_CASE("shared memory a kernel reads before writing is garbage (NaN), static or dynamic",
          "[runtime]") {
  DeviceBuffer<float> out(64);
  REQUIRE(STITCH_LAUNCH(read_uninitialized_shared, 1, 64, 0, nullptr, out.get()) == cudaSuccess);
  for (float value : out.download())
    CHECK(std::isnan(value));
  REQUIRE(STITCH_LAUNCH(read_uninitialized_dynamic_shared, 1, 64, 64 * sizeof(float), nullptr,
                        out.get()) == cudaSuccess);
  for (float value : out.download())
    CHECK(std::isnan(value));
}

TEST_CASE("dynamic shared memory holds the launch's byte count per block", "[runtime]") {
  const int blocks = 5, threads = 96;
  const std::vector<float> input = stitch::test::random_floats(blocks * threads, -1, 1, 11);
  DeviceBuffer<float> in(input), out(input.size());
  REQUIRE(stitch::test::launch_reverse_in_dynamic_shared(in.get(), out.get(), blocks, threads) ==
          cudaSuccess);
  const std::vector<float> reversed = out.download();
  for (int b = 0; b < blocks; ++b)
    for (int t = 0; t < threads; ++t)
      REQUIRE(reversed[b * threads + t] == input[b * threads + threads - 1 - t]);
}

TEST_CASE("launches CUDA would refuse return an error code and a message", "[runtime]") {
  DeviceBuffer<float> out(2048);
  struct Case {
    const char* what;
    dim3 grid, block;
    std::size_t shared;
    cudaError_t expected;
    const char* message;
  };
  const Case cases[] = {
      {"1025 threads per block", 1, 1025, 0, cudaErrorInvalidConfiguration, "exceeds 1024"},
      {"block z of 65", 1, dim3(1, 1, 65), 0, cudaErrorInvalidConfiguration, "exceeds 1024"},
      {"32 x 64 threads", 1, dim3(32, 64), 0, cudaErrorInvalidConfiguration, "exceeds 1024"},
      {"empty grid", dim3(0), 32, 0, cudaErrorInvalidConfiguration, "grid (0,1,1)"},
      {"grid y of 65536", dim3(1, 65536), 32, 0, cudaErrorInvalidConfiguration, "too large"},
      {"49 KiB dynamic shared without opt-in", 1, 32, 49 * 1024, cudaErrorInvalidValue,
       "cudaFuncSetAttribute"},
  };
  for (const Case& c : cases) {
    INFO(c.what);
    const cudaError_t status =
        STITCH_LAUNCH(write_one, c.grid, c.block, c.shared, nullptr, out.get());
    CHECK(status == c.expected);
    CHECK_THAT(stitch::test::last_error_text(status), Catch::Contains(c.message));
    CHECK_THAT(stitch::test::last_error_text(status), Catch::Contains("write_one"));
    CHECK(cudaGetLastError() == c.expected);  // recorded as the last error ...
    CHECK(cudaGetLastError() == cudaSuccess); // ... and cleared by reading it
  }
}

TEST_CASE("dynamic shared memory over 48 KiB needs cudaFuncSetAttribute, up to 227 KiB",
          "[runtime]") {
  DeviceBuffer<float> out(32);
  const std::size_t bytes = 100 * 1024;
  CHECK(STITCH_LAUNCH(touch_dynamic_shared, 1, 32, bytes, nullptr, out.get()) ==
        cudaErrorInvalidValue);
  REQUIRE(cudaFuncSetAttribute(touch_dynamic_shared, cudaFuncAttributeMaxDynamicSharedMemorySize,
                               static_cast<int>(bytes)) == cudaSuccess);
  CHECK(STITCH_LAUNCH(touch_dynamic_shared, 1, 32, bytes, nullptr, out.get()) == cudaSuccess);
  CHECK(cudaFuncSetAttribute(touch_dynamic_shared, cudaFuncAttributeMaxDynamicSharedMemorySize,
                             228 * 1024) == cudaErrorInvalidValue);
}

TEST_CASE("static shared memory over 48 KiB fails the launch", "[runtime]") {
  DeviceBuffer<float> out(32);
  const cudaError_t status = STITCH_LAUNCH(too_much_static_shared, 1, 32, 0, nullptr, out.get());
  CHECK(status == cudaErrorLaunchOutOfResources);
  CHECK_THAT(stitch::test::last_error_text(status), Catch::Contains("too_much_static_shared"));
}

TEST_CASE("a kernel launching a kernel is refused (dynamic parallelism is not emulated)",
          "[runtime]") {
  DeviceBuffer<float> out(1);
  DeviceBuffer<int> status(1);
  REQUIRE(STITCH_LAUNCH(launch_from_device, 1, 1, 0, nullptr, out.get(), status.get()) ==
          cudaSuccess);
  CHECK(status.download()[0] == cudaErrorNotSupported);
}

TEST_CASE("cudaMalloc'd memory starts as garbage and a bad cudaFree is an error", "[runtime]") {
  float* memory = nullptr;
  REQUIRE(cudaMalloc(&memory, 16 * sizeof(float)) == cudaSuccess);
  CHECK(std::isnan(memory[0]));
  CHECK(std::isnan(memory[15]));
  REQUIRE(cudaFree(memory) == cudaSuccess);
  CHECK(cudaFree(memory) == cudaErrorInvalidValue);
  int local = 0;
  CHECK(cudaFree(&local) == cudaErrorInvalidValue);
  cudaGetLastError();
}
