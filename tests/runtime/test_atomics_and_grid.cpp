// Atomics and cooperative launches on the host target: atomics from many blocks running on
// several OS threads lose no update; a cooperative kernel's stitch_grid_sync makes every block's
// first phase visible to every block's second phase (and leaving it out is visible); and grid
// barriers that cannot work (too many blocks to be resident, a non-cooperative launch, a block
// that exits early) are errors rather than hangs.
#include "stitch_cuda.h"

#include "device/stitch_grid.cuh"

#include "portable_kernels.h"
#include "runtime_test_support.h"

#include <algorithm>
#include <cmath>
#include <vector>

using stitch::test::DeviceBuffer;
using stitch::test::ScopedHostConfig;

namespace {

struct AtomicTotals {
  int count;
  float float_sum;
  int max_id;
  int min_id;
  unsigned long long cas_count;
  unsigned bits;
  unsigned wrapped;
};

__global__ void hammer_atomics(AtomicTotals* totals) {
  const int id = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  atomicAdd(&totals->count, 1);
  atomicAdd(&totals->float_sum, 1.0f);
  atomicMax(&totals->max_id, id);
  atomicMin(&totals->min_id, id);
  unsigned long long seen = totals->cas_count;
  for (;;) { // an increment through compare-and-swap
    const unsigned long long before = atomicCAS(&totals->cas_count, seen, seen + 1);
    if (before == seen) break;
    seen = before;
  }
  atomicOr(&totals->bits, 1u << (id % 32));
  atomicInc(&totals->wrapped, 9u);
}

__global__ void write_nothing_kernel() {}

__global__ void grid_sync_in_ordinary_launch(float* out) {
  out[threadIdx.x] = 1.0f;
  stitch_grid_sync();
}

// Block 0 leaves before the grid barrier every other block waits at.
__global__ void block_exits_before_grid_sync(float* out) {
  if (blockIdx.x == 0) return;
  stitch_grid_sync();
  out[blockIdx.x] = 1.0f;
}

std::vector<float> column_normalize_reference(const std::vector<float>& x, int rows, int cols) {
  std::vector<double> totals(cols, 0.0);
  for (int r = 0; r < rows; ++r)
    for (int c = 0; c < cols; ++c)
      totals[c] += x[r * cols + c];
  std::vector<float> expected(x.size());
  for (int r = 0; r < rows; ++r)
    for (int c = 0; c < cols; ++c)
      expected[r * cols + c] = static_cast<float>(x[r * cols + c] / totals[c]);
  return expected;
}

} // namespace

TEST_CASE("atomics from many blocks on several worker threads lose no update", "[runtime]") {
  ScopedHostConfig config;
  config->worker_threads = 3;
  const int blocks = 64, threads = 256, total = blocks * threads;
  const AtomicTotals initial{0, 0.0f, -1, 1 << 30, 0, 0, 0};
  DeviceBuffer<AtomicTotals> totals(std::vector<AtomicTotals>{initial});
  REQUIRE(STITCH_LAUNCH(hammer_atomics, blocks, threads, 0, nullptr, totals.get()) == cudaSuccess);
  const AtomicTotals got = totals.download()[0];
  CHECK(got.count == total);
  CHECK(got.float_sum == static_cast<float>(total)); // integers below 2^24 add exactly
  CHECK(got.max_id == total - 1);
  CHECK(got.min_id == 0);
  CHECK(got.cas_count == static_cast<unsigned long long>(total));
  CHECK(got.bits == 0xffffffffu);
  CHECK(got.wrapped == static_cast<unsigned>(total % 10));
}

TEST_CASE("an atomicAdd histogram over several blocks counts every element", "[runtime]") {
  const int count = 5000, bins = 16;
  const std::vector<float> input = stitch::test::random_floats(count, 0.0f, 1.0f, 31);
  std::vector<unsigned> expected(bins, 0);
  for (float x : input)
    ++expected[std::min(bins - 1, static_cast<int>(x * bins))];
  DeviceBuffer<float> in(input);
  DeviceBuffer<unsigned> histogram(std::vector<unsigned>(bins, 0));
  REQUIRE(stitch::test::launch_histogram(in.get(), histogram.get(), count, bins) == cudaSuccess);
  CHECK(histogram.download() == expected);
}

TEST_CASE("a cooperative kernel's grid barrier orders a column sum before its consumer",
          "[runtime]") {
  const int rows = 96, cols = 70, blocks = 6;
  const std::vector<float> x = stitch::test::random_floats(rows * cols, 0.5f, 2.0f, 32);
  DeviceBuffer<float> in(x), partials(blocks * cols), out(x.size());
  REQUIRE(stitch::test::launch_column_normalize(in.get(), partials.get(), out.get(), rows, cols,
                                                blocks, true) == cudaSuccess);
  const std::vector<float> got = out.download();
  const std::vector<float> expected = column_normalize_reference(x, rows, cols);
  for (std::size_t i = 0; i < got.size(); ++i)
    REQUIRE(got[i] == Approx(expected[i]).epsilon(1e-5));
}

TEST_CASE("the same cooperative kernel without its grid barrier reads unfinished partials",
          "[runtime]") {
  const int rows = 96, cols = 70, blocks = 6;
  const std::vector<float> x = stitch::test::random_floats(rows * cols, 0.5f, 2.0f, 33);
  DeviceBuffer<float> in(x), partials(blocks * cols), out(x.size());
  REQUIRE(stitch::test::launch_column_normalize(in.get(), partials.get(), out.get(), rows, cols,
                                                blocks, false) == cudaSuccess);
  const std::vector<float> got = out.download();
  CHECK(std::any_of(got.begin(), got.end(), [](float value) { return std::isnan(value); }));
}

TEST_CASE("a cooperative grid larger than the device holds resident is refused", "[runtime]") {
  ScopedHostConfig config;
  config->multiprocessor_count = 2;
  config->max_blocks_per_multiprocessor = 4;
  DeviceBuffer<float> x(64 * 9), partials(64 * 9), out(64 * 9);
  CHECK(stitch::test::launch_column_normalize(x.get(), partials.get(), out.get(), 9, 64, 8, true) ==
        cudaSuccess);
  const cudaError_t status =
      stitch::test::launch_column_normalize(x.get(), partials.get(), out.get(), 9, 64, 9, true);
  CHECK(status == cudaErrorCooperativeLaunchTooLarge);
  CHECK_THAT(stitch::test::last_error_text(status), Catch::Contains("9 blocks exceeds the 8"));
  cudaGetLastError();

  // The occupancy API a launcher sizes persistent grids with agrees with that limit.
  int per_multiprocessor = 0, multiprocessors = 0;
  REQUIRE(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_multiprocessor, write_nothing_kernel,
                                                        64, 0) == cudaSuccess);
  REQUIRE(cudaDeviceGetAttribute(&multiprocessors, cudaDevAttrMultiProcessorCount, 0) ==
          cudaSuccess);
  CHECK(per_multiprocessor * multiprocessors == 8);
}

TEST_CASE("stitch_grid_sync outside a cooperative launch is an error", "[runtime]") {
  DeviceBuffer<float> out(32);
  const cudaError_t status =
      STITCH_LAUNCH(grid_sync_in_ordinary_launch, 2, 32, 0, nullptr, out.get());
  CHECK(status == cudaErrorLaunchFailure);
  CHECK_THAT(stitch::test::last_error_text(status), Catch::Contains("STITCH_LAUNCH_COOPERATIVE"));
  cudaGetLastError();
}

TEST_CASE("a grid barrier that an exited block never reaches is a deadlock error", "[runtime]") {
  DeviceBuffer<float> out(4);
  const cudaError_t status =
      STITCH_LAUNCH_COOPERATIVE(block_exits_before_grid_sync, 4, 32, 0, nullptr, out.get());
  CHECK(status == cudaErrorLaunchFailure);
  const std::string message = stitch::test::last_error_text(status);
  CHECK_THAT(message, Catch::Contains("96 threads wait at stitch_grid_sync"));
  CHECK_THAT(message, Catch::Contains("32 threads exited"));
  cudaGetLastError();
}
