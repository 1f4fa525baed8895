// Warp shuffles and votes on the host target: they are exact and follow CUDA's lane rules
// (width segments, clamped up/down shifts, lanes that exited or are not in the mask give
// garbage), a wrong shuffle gives a wrong answer, a missing __syncwarp is visible, and masks
// that break CUDA's rules are launch errors.
#include "stitch_cuda.h"

#include "runtime_test_support.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

using stitch::test::DeviceBuffer;

namespace {

constexpr unsigned kFull = 0xffffffffu;

__global__ void warp_sum_butterfly(const float* in, float* out) {
  const unsigned t = blockIdx.x * blockDim.x + threadIdx.x;
  float value = in[t];
  for (int offset = 16; offset > 0; offset /= 2)
    value += __shfl_xor_sync(kFull, value, offset);
  out[t] = value;
}

// The classic tree into lane 0; starting below 16 leaves half of the warp out.
__global__ void warp_sum_down(const float* in, float* out, int first_offset) {
  const unsigned t = blockIdx.x * blockDim.x + threadIdx.x;
  float value = in[t];
  for (int offset = first_offset; offset > 0; offset /= 2)
    value += __shfl_down_sync(kFull, value, static_cast<unsigned>(offset));
  if (t % 32 == 0) out[t / 32] = value;
}

__global__ void shuffle_patterns(const float* in, float* out) {
  const unsigned t = threadIdx.x, n = blockDim.x, lane = t % 32;
  const float value = in[t];
  out[0 * n + t] = __shfl_sync(kFull, value, 5);
  out[1 * n + t] = __shfl_sync(kFull, value, static_cast<int>(lane) + 3, 16);
  out[2 * n + t] = __shfl_up_sync(kFull, value, 2, 8);
  out[3 * n + t] = __shfl_down_sync(kFull, value, 3, 8);
  out[4 * n + t] = __shfl_xor_sync(kFull, value, 1);
}

__global__ void votes(unsigned* out) {
  const unsigned lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const unsigned ballot = __ballot_sync(kFull, lane % 3 == 0);
  const int any = __any_sync(kFull, lane == 7);
  const int all = __all_sync(kFull, lane < 32);
  const int not_all = __all_sync(kFull, lane < 31);
  if (lane == 0) {
    out[4 * warp + 0] = ballot;
    out[4 * warp + 1] = static_cast<unsigned>(any);
    out[4 * warp + 2] = static_cast<unsigned>(all);
    out[4 * warp + 3] = static_cast<unsigned>(not_all);
  }
}

// Lanes 16..31 exit; the full-mask shuffle waits only for lanes that have not exited, and
// reading an exited lane's value, or one outside the mask, yields garbage.
__global__ void shuffle_from_exited_lanes(const float* in, float* out) {
  const unsigned lane = threadIdx.x;
  if (lane >= 16) return;
  out[lane] = __shfl_down_sync(kFull, in[lane], 16);
  out[16 + lane] = __shfl_down_sync(0x0000ffffu, in[lane], 8);
}

__global__ void mask_without_caller(float* out) { out[threadIdx.x] = __shfl_sync(0x1u, 1.0f, 0); }

__global__ void ballot_and_any_together(unsigned* out) {
  if (threadIdx.x < 16)
    out[threadIdx.x] = __ballot_sync(kFull, 1);
  else
    out[threadIdx.x] = static_cast<unsigned>(__any_sync(kFull, 1));
}

// Each lane writes its slot and reads the mirrored lane's; `synchronize` = 0 drops __syncwarp.
__global__ void mirror_through_shared(const float* in, float* out, int synchronize) {
  STITCH_SHARED(float, slots, 32);
  const unsigned lane = threadIdx.x;
  slots[lane] = in[lane];
  if (synchronize) __syncwarp();
  out[lane] = slots[31 - lane];
}

// Two half-warp reductions in flight at once, each with its own mask.
__global__ void half_warp_sums(const float* in, float* out) {
  const unsigned lane = threadIdx.x;
  const unsigned mask = lane < 16 ? 0x0000ffffu : 0xffff0000u;
  float value = in[lane];
  for (int offset = 8; offset > 0; offset /= 2)
    value += __shfl_xor_sync(mask, value, offset);
  out[lane] = value;
}

// A 40-thread block: warp 1 has 8 lanes, and lanes that do not exist count as exited.
__global__ void partial_warp_sums(const float* in, float* out) {
  float value = in[threadIdx.x];
  for (int offset = 4; offset > 0; offset /= 2)
    value += __shfl_xor_sync(kFull, value, offset);
  out[threadIdx.x] = value;
}

__global__ void shuffle_wide_types(double* doubles, long long* integers) {
  const unsigned lane = threadIdx.x;
  doubles[lane] = __shfl_sync(kFull, 1e300 + static_cast<double>(lane), 31);
  integers[lane] = __shfl_xor_sync(kFull, (1ll << 40) + static_cast<long long>(lane), 2);
}

cudaError_t launch_and_expect_failure(cudaError_t status, const char* fragment) {
  CHECK(status == cudaErrorLaunchFailure);
  CHECK_THAT(stitch::test::last_error_text(status), Catch::Contains(fragment));
  return cudaGetLastError();
}

} // namespace

TEST_CASE("a butterfly shuffle reduction is exact and leaves the sum in every lane", "[runtime]") {
  const std::vector<float> input = stitch::test::random_integer_floats(128, -1000, 1000, 21);
  DeviceBuffer<float> in(input), out(128);
  REQUIRE(STITCH_LAUNCH(warp_sum_butterfly, 2, 64, 0, nullptr, in.get(), out.get()) == cudaSuccess);
  const std::vector<float> got = out.download();
  for (int warp = 0; warp < 4; ++warp) {
    const float sum =
        std::accumulate(input.begin() + 32 * warp, input.begin() + 32 * warp + 32, 0.0f);
    for (int lane = 0; lane < 32; ++lane)
      CHECK(got[32 * warp + lane] == sum);
  }
}

TEST_CASE("a shuffle reduction with a wrong first offset gives a wrong sum", "[runtime]") {
  const std::vector<float> input = stitch::test::random_integer_floats(64, 1, 1000, 22);
  DeviceBuffer<float> in(input), out(2);
  REQUIRE(STITCH_LAUNCH(warp_sum_down, 1, 64, 0, nullptr, in.get(), out.get(), 16) == cudaSuccess);
  const float warp0 = std::accumulate(input.begin(), input.begin() + 32, 0.0f);
  CHECK(out.download()[0] == warp0);
  REQUIRE(STITCH_LAUNCH(warp_sum_down, 1, 64, 0, nullptr, in.get(), out.get(), 8) == cudaSuccess);
  CHECK(out.download()[0] == std::accumulate(input.begin(), input.begin() + 16, 0.0f));
  CHECK(out.download()[0] != warp0);
}

TEST_CASE("shuffles follow CUDA's source-lane rules for widths and shifts", "[runtime]") {
  const int n = 64;
  const std::vector<float> input = stitch::test::random_floats(n, -10, 10, 23);
  DeviceBuffer<float> in(input), out(5 * n);
  REQUIRE(STITCH_LAUNCH(shuffle_patterns, 1, n, 0, nullptr, in.get(), out.get()) == cudaSuccess);
  const std::vector<float> got = out.download();
  for (int t = 0; t < n; ++t) {
    const int warp_base = t / 32 * 32, lane = t % 32;
    const int segment16 = lane / 16 * 16, segment8 = lane / 8 * 8;
    INFO("thread " << t);
    CHECK(got[0 * n + t] == input[warp_base + 5]);
    CHECK(got[1 * n + t] == input[warp_base + segment16 + (lane + 3) % 16]);
    CHECK(got[2 * n + t] == input[warp_base + (lane - 2 >= segment8 ? lane - 2 : lane)]);
    CHECK(got[3 * n + t] == input[warp_base + (lane + 3 < segment8 + 8 ? lane + 3 : lane)]);
    CHECK(got[4 * n + t] == input[warp_base + (lane ^ 1)]);
  }
}

TEST_CASE("ballot, any and all vote over the lanes of each warp", "[runtime]") {
  DeviceBuffer<unsigned> out(8);
  REQUIRE(STITCH_LAUNCH(votes, 1, 64, 0, nullptr, out.get()) == cudaSuccess);
  const std::vector<unsigned> got = out.download();
  unsigned every_third = 0;
  for (int lane = 0; lane < 32; lane += 3)
    every_third |= 1u << lane;
  for (int warp = 0; warp < 2; ++warp)
    CHECK(std::vector<unsigned>(got.begin() + 4 * warp, got.begin() + 4 * warp + 4) ==
          std::vector<unsigned>{every_third, 1, 1, 0});
}

TEST_CASE("shuffles do not wait for exited lanes, and reading one yields garbage", "[runtime]") {
  const std::vector<float> input = stitch::test::random_floats(32, -1, 1, 24);
  DeviceBuffer<float> in(input), out(32);
  REQUIRE(STITCH_LAUNCH(shuffle_from_exited_lanes, 1, 32, 0, nullptr, in.get(), out.get()) ==
          cudaSuccess);
  const std::vector<float> got = out.download();
  for (int lane = 0; lane < 16; ++lane) {
    CHECK(std::isnan(got[lane])); // lane + 16 exited
    if (lane < 8)
      CHECK(got[16 + lane] == input[lane + 8]);
    else
      CHECK(std::isnan(got[16 + lane])); // lane + 8 is outside the 16-lane mask
  }
}

TEST_CASE("a missing __syncwarp between writing and reading shared memory is visible",
          "[runtime]") {
  const std::vector<float> input = stitch::test::random_floats(32, -1, 1, 25);
  std::vector<float> mirrored(input.rbegin(), input.rend());
  DeviceBuffer<float> in(input), out(32);
  REQUIRE(STITCH_LAUNCH(mirror_through_shared, 1, 32, 0, nullptr, in.get(), out.get(), 1) ==
          cudaSuccess);
  CHECK(out.download() == mirrored);
  REQUIRE(STITCH_LAUNCH(mirror_through_shared, 1, 32, 0, nullptr, in.get(), out.get(), 0) ==
          cudaSuccess);
  const std::vector<float> racy = out.download();
  CHECK(std::any_of(racy.begin(), racy.end(), [](float value) { return std::isnan(value); }));
}

TEST_CASE("half-warp collectives with different masks run side by side", "[runtime]") {
  const std::vector<float> input = stitch::test::random_integer_floats(32, -50, 50, 26);
  DeviceBuffer<float> in(input), out(32);
  REQUIRE(STITCH_LAUNCH(half_warp_sums, 1, 32, 0, nullptr, in.get(), out.get()) == cudaSuccess);
  const float low = std::accumulate(input.begin(), input.begin() + 16, 0.0f);
  const float high = std::accumulate(input.begin() + 16, input.end(), 0.0f);
  const std::vector<float> got = out.download();
  for (int lane = 0; lane < 32; ++lane)
    CHECK(got[lane] == (lane < 16 ? low : high));
}

TEST_CASE("the partial last warp of a block shuffles among the lanes that exist", "[runtime]") {
  const std::vector<float> input = stitch::test::random_integer_floats(40, -50, 50, 27);
  DeviceBuffer<float> in(input), out(40);
  REQUIRE(STITCH_LAUNCH(partial_warp_sums, 1, 40, 0, nullptr, in.get(), out.get()) == cudaSuccess);
  const float tail = std::accumulate(input.begin() + 32, input.end(), 0.0f);
  const std::vector<float> got = out.download();
  for (int t = 32; t < 40; ++t)
    CHECK(got[t] == tail);
}

TEST_CASE("shuffles move 8-byte values intact", "[runtime]") {
  DeviceBuffer<double> doubles(32);
  DeviceBuffer<long long> integers(32);
  REQUIRE(STITCH_LAUNCH(shuffle_wide_types, 1, 32, 0, nullptr, doubles.get(), integers.get()) ==
          cudaSuccess);
  const std::vector<double> d = doubles.download();
  const std::vector<long long> i = integers.download();
  for (int lane = 0; lane < 32; ++lane) {
    CHECK(d[lane] == 1e300 + 31.0);
    CHECK(i[lane] == (1ll << 40) + (lane ^ 2));
  }
}

TEST_CASE("warp collectives that break CUDA's mask rules fail the launch", "[runtime]") {
  DeviceBuffer<float> out(32);
  launch_and_expect_failure(STITCH_LAUNCH(mask_without_caller, 1, 32, 0, nullptr, out.get()),
                            "does not include the calling lane");
  DeviceBuffer<unsigned> votes_out(32);
  launch_and_expect_failure(
      STITCH_LAUNCH(ballot_and_any_together, 1, 32, 0, nullptr, votes_out.get()),
      "lanes of the same mask 0xffffffff already wait in");
}
