// __syncthreads on the host target: it orders shared-memory traffic within a block; leaving a
// needed one out gives wrong results (the emulation runs each thread until it blocks, so it
// cannot hide the race); and barriers that not every thread reaches end the launch with an error
// that says where, instead of hanging.
#include "stitch_cuda.h"

#include "runtime_test_support.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <numeric>
#include <vector>

using stitch::test::DeviceBuffer;
using stitch::test::ScopedHostConfig;

namespace {

// out[t] = in[t + shift mod n] through shared memory; `synchronize` = 0 drops the barrier.
__global__ void rotate_through_shared(const float* in, float* out, int shift, int synchronize) {
  STITCH_SHARED(float, values, 1024);
  const unsigned t = threadIdx.x, n = blockDim.x;
  values[t] = in[blockIdx.x * n + t];
  if (synchronize) __syncthreads();
  out[blockIdx.x * n + t] = values[(t + n + static_cast<unsigned>(shift)) % n];
}

// out[t] = in[t - 1] (out[0] = in[0]) through shared memory: each thread reads the value of
// the thread below it.
__global__ void read_lower_neighbour(const float* in, float* out, int synchronize) {
  STITCH_SHARED(float, values, 1024);
  const unsigned t = threadIdx.x, n = blockDim.x;
  values[t] = in[blockIdx.x * n + t];
  if (synchronize) __syncthreads();
  out[blockIdx.x * n + t] = values[t == 0 ? 0 : t - 1];
}

// A tree reduction in shared memory: one barrier per level, in a loop.
__global__ void tree_sum(const float* in, float* out) {
  STITCH_SHARED(float, partial, 1024);
  const unsigned t = threadIdx.x;
  partial[t] = in[blockIdx.x * blockDim.x + t];
  __syncthreads();
  for (unsigned stride = blockDim.x / 2; stride > 0; stride /= 2) {
    if (t < stride) partial[t] += partial[t + stride];
    __syncthreads();
  }
  if (t == 0) out[blockIdx.x] = partial[0];
}

// Threads 32 and up leave before the barrier the others wait at.
__global__ void barrier_after_early_exit(float* out) {
  if (threadIdx.x >= 32) return;
  __syncthreads();
  out[threadIdx.x] = 1.0f;
}

// Odd and even threads wait at two different barriers.
__global__ void barriers_in_both_branches(float* out) {
  if (threadIdx.x % 2 == 1) {
    out[threadIdx.x] = 1.0f;
    __syncthreads();
  } else {
    out[threadIdx.x] = 2.0f;
    __syncthreads();
  }
}

__global__ void count_even_threads(int* out) {
  const int count = __syncthreads_count(threadIdx.x % 2 == 0);
  const int all = __syncthreads_and(threadIdx.x < 1000);
  const int any = __syncthreads_or(threadIdx.x == 5);
  if (threadIdx.x == 0) {
    out[0] = count;
    out[1] = all;
    out[2] = any;
  }
}

std::vector<float> rotate(const std::vector<float>& input, int blocks, int threads, int shift,
                          bool synchronize) {
  DeviceBuffer<float> in(input), out(input.size());
  REQUIRE(STITCH_LAUNCH(rotate_through_shared, blocks, threads, 0, nullptr, in.get(), out.get(),
                        shift, synchronize ? 1 : 0) == cudaSuccess);
  return out.download();
}

std::vector<float> rotate_reference(const std::vector<float>& input, int blocks, int threads,
                                    int shift) {
  std::vector<float> expected(input.size());
  for (int b = 0; b < blocks; ++b)
    for (int t = 0; t < threads; ++t)
      expected[b * threads + t] = input[b * threads + (t + threads + shift) % threads];
  return expected;
}

} // namespace

TEST_CASE("__syncthreads orders writes and reads of shared memory", "[runtime]") {
  const int blocks = 3, threads = 256;
  const std::vector<float> input = stitch::test::random_floats(blocks * threads, -5, 5, 1);
  CHECK(rotate(input, blocks, threads, 1, true) == rotate_reference(input, blocks, threads, 1));
  CHECK(rotate(input, blocks, threads, -1, true) == rotate_reference(input, blocks, threads, -1));

  const std::vector<float> integers = stitch::test::random_integer_floats(blocks * 512, -99, 99, 2);
  DeviceBuffer<float> in(integers), sums(blocks);
  REQUIRE(STITCH_LAUNCH(tree_sum, blocks, 512, 0, nullptr, in.get(), sums.get()) == cudaSuccess);
  const std::vector<float> got = sums.download();
  for (int b = 0; b < blocks; ++b)
    CHECK(got[b] ==
          std::accumulate(integers.begin() + b * 512, integers.begin() + (b + 1) * 512, 0.0f));
}

TEST_CASE("omitting a needed __syncthreads gives a wrong result", "[runtime]") {
  // Each thread runs until it blocks, so in any thread order some thread reads its neighbour's
  // slot before the neighbour has written it, and gets the garbage fresh shared memory holds.
  const int blocks = 2, threads = 128;
  const std::vector<float> input = stitch::test::random_floats(blocks * threads, -5, 5, 3);
  const std::vector<float> racy = rotate(input, blocks, threads, 1, false);
  CHECK(racy != rotate_reference(input, blocks, threads, 1));
  CHECK(std::any_of(racy.begin(), racy.end(), [](float value) { return std::isnan(value); }));
}

TEST_CASE("the thread order decides which missing barrier shows; descending exposes the other",
          "[runtime]") {
  const int threads = 128;
  const std::vector<float> input = stitch::test::random_floats(threads, -5, 5, 4);
  std::vector<float> expected(threads);
  for (int t = 0; t < threads; ++t)
    expected[t] = input[t == 0 ? 0 : t - 1];
  const auto run = [&](bool synchronize) {
    DeviceBuffer<float> in(input), out(threads);
    REQUIRE(STITCH_LAUNCH(read_lower_neighbour, 1, threads, 0, nullptr, in.get(), out.get(),
                          synchronize ? 1 : 0) == cudaSuccess);
    return out.download();
  };
  // Reading the lower neighbour without a barrier happens to work in ascending order ...
  ScopedHostConfig config;
  config->thread_order = stitch::host::ThreadOrder::Ascending;
  CHECK(run(false) == expected);
  // ... and is caught in descending order (run CI under both: STITCH_HOST_THREAD_ORDER).
  config->thread_order = stitch::host::ThreadOrder::Descending;
  CHECK(run(false) != expected);
  CHECK(run(true) == expected);
  config->thread_order = stitch::host::ThreadOrder::Shuffled;
  CHECK(run(false) != expected);
  CHECK(run(true) == expected);
}

TEST_CASE("a barrier that exited threads never reach is a deadlock error, not a hang",
          "[runtime]") {
  DeviceBuffer<float> out(64);
  const auto start = std::chrono::steady_clock::now();
  const cudaError_t status = STITCH_LAUNCH(barrier_after_early_exit, 2, 64, 0, nullptr, out.get());
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(5));
  CHECK(status == cudaErrorLaunchFailure);
  const std::string message = stitch::test::last_error_text(status);
  CHECK_THAT(message, Catch::Contains("deadlock"));
  CHECK_THAT(message, Catch::Contains("threads 0-31 wait at __syncthreads (test_block_barriers"));
  CHECK_THAT(message, Catch::Contains("threads 32-63 exited"));
  cudaGetLastError();

  // The failure is confined to that launch.
  CHECK(STITCH_LAUNCH(barrier_after_early_exit, 1, 32, 0, nullptr, out.get()) == cudaSuccess);
}

TEST_CASE("threads waiting at different __syncthreads calls are reported as divergent",
          "[runtime]") {
  DeviceBuffer<float> out(64);
  const cudaError_t status = STITCH_LAUNCH(barriers_in_both_branches, 1, 64, 0, nullptr, out.get());
  CHECK(status == cudaErrorLaunchFailure);
  CHECK_THAT(stitch::test::last_error_text(status), Catch::Contains("divergent __syncthreads"));
  cudaGetLastError();
}

TEST_CASE("__syncthreads_count/_and/_or combine the block's predicates", "[runtime]") {
  DeviceBuffer<int> out(3);
  REQUIRE(STITCH_LAUNCH(count_even_threads, 1, dim3(10, 3, 2), 0, nullptr, out.get()) ==
          cudaSuccess);
  // threadIdx.x runs 0..9 in each of the 6 rows: 5 even per row.
  CHECK(out.download() == std::vector<int>{30, 1, 1});
}
