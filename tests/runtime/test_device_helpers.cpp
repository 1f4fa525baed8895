// The device helpers (src/runtime/device/*.cuh) run on the host target through the kernels of
// portable_kernels.cu: block reductions match a double-precision reference for every block
// size and shape and are deterministic; Welford variance stays accurate where the naive formula
// cancels; float4 loads and stores give the scalar result on aligned and misaligned pointers and
// ragged tails; the activations match double-precision formulas, also at extreme inputs. It
// ends with the emulation's speed on a plain elementwise kernel.
#include "stitch_cuda.h"

#include "portable_kernels.h"
#include "runtime_test_support.h"

#include <algorithm>
#include <cmath>
#include <ctime>
#include <vector>

using stitch::test::Activation;
using stitch::test::DeviceBuffer;
using stitch::test::ScopedHostConfig;

namespace {

struct BlockResults {
  std::vector<float> sums, maxes, mins;
};

BlockResults reduce_blocks(const std::vector<float>& input, int blocks, dim3 threads,
                           int per_block) {
  DeviceBuffer<float> in(input), sums(blocks), maxes(blocks), mins(blocks);
  REQUIRE(stitch::test::launch_block_reductions(in.get(), sums.get(), maxes.get(), mins.get(),
                                                blocks, threads, per_block) == cudaSuccess);
  return {sums.download(), maxes.download(), mins.download()};
}

__global__ void scale_add(const float* in, float* out, float scale, float offset, int count) {
  const int i = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (i < count) out[i] = in[i] * scale + offset;
}

} // namespace

TEST_CASE("block_reduce_sum/max/min match a reference for every block size and shape",
          "[runtime]") {
  const int blocks = 3, per_block = 3000;
  const std::vector<float> input = stitch::test::random_floats(blocks * per_block, -1, 1, 41);
  const dim3 shapes[] = {
      1, 7, 31, 32, 33, 64, 100, 128, 255, 256, 512, 1000, 1024, dim3(8, 4, 3), dim3(5, 7)};
  for (const dim3& shape : shapes) {
    INFO("block " << shape.x << "x" << shape.y << "x" << shape.z);
    const BlockResults got = reduce_blocks(input, blocks, shape, per_block);
    for (int b = 0; b < blocks; ++b) {
      const auto first = input.begin() + b * per_block, last = first + per_block;
      double sum = 0, magnitude = 0;
      for (auto it = first; it != last; ++it)
        sum += *it, magnitude += std::fabs(*it);
      CHECK(std::fabs(got.sums[b] - sum) <= 1e-5 * magnitude);
      CHECK(got.maxes[b] == *std::max_element(first, last));
      CHECK(got.mins[b] == *std::min_element(first, last));
    }
  }
}

TEST_CASE("block reductions are bitwise deterministic across runs and worker counts", "[runtime]") {
  const int blocks = 16, per_block = 4097;
  const std::vector<float> input = stitch::test::random_floats(blocks * per_block, -3, 3, 42);
  const BlockResults first = reduce_blocks(input, blocks, 256, per_block);
  CHECK(reduce_blocks(input, blocks, 256, per_block).sums == first.sums);
  ScopedHostConfig config;
  config->worker_threads = 1;
  CHECK(reduce_blocks(input, blocks, 256, per_block).sums == first.sums);
  config->worker_threads = 3;
  CHECK(reduce_blocks(input, blocks, 256, per_block).sums == first.sums);
}

TEST_CASE("Welford variance of [40000, 40001, 40002, 40003] is accurate", "[runtime]") {
  const std::vector<float> input = {40000.0f, 40001.0f, 40002.0f, 40003.0f};
  // The naive fp32 formula E[x^2] - E[x]^2 loses everything to cancellation here ...
  float sum = 0, sum_of_squares = 0;
  for (float x : input)
    sum += x, sum_of_squares += x * x;
  const float naive = sum_of_squares / 4 - (sum / 4) * (sum / 4);
  CHECK(std::fabs(naive - 1.25f) > 0.5f);
  // ... while Welford gets it, whether one thread pushes all four values or four threads (or a
  // warp with idle lanes) merge theirs.
  for (int threads : {1, 4, 32, 128}) {
    INFO(threads << " threads");
    DeviceBuffer<float> in(input), mean(1), variance(1);
    REQUIRE(stitch::test::launch_block_welford(in.get(), mean.get(), variance.get(), 1, threads,
                                               4) == cudaSuccess);
    CHECK(mean.download()[0] == 40001.5f);
    CHECK(variance.download()[0] == Approx(1.25).epsilon(1e-6));
  }
}

TEST_CASE("block Welford matches a double reference on offset data", "[runtime]") {
  const int blocks = 4, per_block = 5000;
  std::vector<float> input = stitch::test::random_floats(blocks * per_block, -1, 1, 43);
  for (float& x : input)
    x += 1000.0f;
  DeviceBuffer<float> in(input), means(blocks), variances(blocks);
  REQUIRE(stitch::test::launch_block_welford(in.get(), means.get(), variances.get(), blocks, 256,
                                             per_block) == cudaSuccess);
  for (int b = 0; b < blocks; ++b) {
    double mean = 0, m2 = 0;
    for (int i = 0; i < per_block; ++i)
      mean += input[b * per_block + i];
    mean /= per_block;
    for (int i = 0; i < per_block; ++i)
      m2 += std::pow(input[b * per_block + i] - mean, 2);
    CHECK(means.download()[b] == Approx(mean).epsilon(1e-6));
    CHECK(variances.download()[b] == Approx(m2 / per_block).epsilon(1e-3));
  }
}

TEST_CASE("float4 loads and stores equal scalar code on any alignment and length", "[runtime]") {
  const std::vector<float> input = stitch::test::random_floats(1100, -4, 4, 44);
  DeviceBuffer<float> in(input), out(input.size());
  for (std::size_t misalignment : {0u, 1u, 3u}) {
    for (std::size_t count : {1u, 3u, 4u, 5u, 13u, 1001u, 1024u}) {
      INFO("misaligned by " << misalignment << " floats, " << count << " elements");
      REQUIRE(cudaMemset(out.get(), 0xFF, out.size() * sizeof(float)) == cudaSuccess);
      REQUIRE(stitch::test::launch_vector_affine(in.get() + misalignment, out.get() + misalignment,
                                                 count) == cudaSuccess);
      const std::vector<float> got = out.download();
      for (std::size_t i = 0; i < count; ++i)
        REQUIRE(got[misalignment + i] == 2.0f * input[misalignment + i] + 1.0f);
      CHECK(std::isnan(got[misalignment + count])); // nothing written past the end
    }
  }
}

TEST_CASE("transform_elements applies gelu on aligned and misaligned data", "[runtime]") {
  const std::vector<float> input = stitch::test::random_floats(1010, -6, 6, 45);
  DeviceBuffer<float> in(input), out(input.size());
  for (std::size_t misalignment : {0u, 2u}) {
    const std::size_t count = 1003;
    REQUIRE(stitch::test::launch_transform_gelu(in.get() + misalignment, out.get() + misalignment,
                                                count) == cudaSuccess);
    const std::vector<float> got = out.download();
    for (std::size_t i = 0; i < count; ++i) {
      const double x = input[misalignment + i];
      const double expected = 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0)));
      REQUIRE(got[misalignment + i] == Approx(expected).epsilon(1e-5).margin(1e-6));
    }
  }
}

TEST_CASE("activations match double-precision formulas, extreme inputs included", "[runtime]") {
  std::vector<float> input = stitch::test::random_floats(600, -12, 12, 46);
  for (float extreme : {-100.0f, -30.0f, -0.0f, 0.0f, 30.0f, 100.0f})
    input.push_back(extreme);
  const int count = static_cast<int>(input.size());
  struct Case {
    Activation activation;
    double (*reference)(double);
  };
  const Case cases[] = {
      {Activation::GeluErf, [](double x) { return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0))); }},
      {Activation::GeluTanh,
       [](double x) {
         return 0.5 * x * (1 + std::tanh(std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x)));
       }},
      {Activation::Sigmoid, [](double x) { return 1.0 / (1.0 + std::exp(-x)); }},
      {Activation::Softplus,
       [](double x) { return std::max(x, 0.0) + std::log1p(std::exp(-std::fabs(x))); }},
      {Activation::Mish,
       [](double x) {
         return x * std::tanh(std::max(x, 0.0) + std::log1p(std::exp(-std::fabs(x))));
       }},
      {Activation::Silu, [](double x) { return x / (1.0 + std::exp(-x)); }},
      {Activation::Elu, [](double x) { return x > 0 ? x : std::expm1(x); }},
      {Activation::Selu,
       [](double x) {
         return 1.0507009873554805 * (x > 0 ? x : 1.6732632423543772 * std::expm1(x));
       }},
      {Activation::HardSwish,
       [](double x) { return x * std::min(1.0, std::max(0.0, x / 6 + 0.5)); }},
  };
  DeviceBuffer<float> in(input), out(input.size());
  for (const Case& c : cases) {
    INFO("activation " << static_cast<int>(c.activation));
    REQUIRE(stitch::test::launch_activation(c.activation, in.get(), out.get(), count) ==
            cudaSuccess);
    const std::vector<float> got = out.download();
    for (int i = 0; i < count; ++i) {
      INFO("x = " << input[i]);
      REQUIRE(std::isfinite(got[i]));
      REQUIRE(got[i] == Approx(c.reference(input[i])).epsilon(2e-5).margin(1e-6));
    }
  }
}

TEST_CASE("the CUDA math functions generated code uses behave like the C library's", "[runtime]") {
  const std::vector<float> input = stitch::test::random_floats(200, -3, 3, 49);
  const int count = static_cast<int>(input.size());
  DeviceBuffer<float> in(input), out(input.size() * stitch::test::kMathFunctionCount);
  REQUIRE(stitch::test::launch_math_functions(in.get(), out.get(), count) == cudaSuccess);
  const std::vector<float> got = out.download();
  for (int i = 0; i < count; ++i) {
    const double x = input[i], y = input[i] * 0.5f + 1.0f, a = std::fabs(x);
    const double expected[stitch::test::kMathFunctionCount] = {
        std::exp(x),       std::log(a),    std::sqrt(a),
        1 / std::sqrt(a),  std::tanh(x),   std::erf(x),
        std::max(x, y),    std::min(x, y), a,
        std::pow(a, y),    std::floor(x),  std::ceil(x),
        std::nearbyint(x), std::trunc(x),  std::log1p(a),
        std::expm1(x),     std::sin(x),    std::cos(x),
        std::exp2(x),      std::log2(a),   std::fmod(x, y),
        std::erfc(x),      std::max(x, y), std::clamp(x, 0.0, 1.0)};
    for (int k = 0; k < stitch::test::kMathFunctionCount; ++k) {
      INFO("function " << k << " at x = " << x);
      CHECK(got[i * stitch::test::kMathFunctionCount + k] ==
            Approx(expected[k]).epsilon(1e-5).margin(1e-6));
    }
  }
}

TEST_CASE("a padded STITCH_SHARED_2D tile transposes a ragged matrix", "[runtime]") {
  const int rows = 70, cols = 45;
  const std::vector<float> input = stitch::test::random_floats(rows * cols, -1, 1, 47);
  DeviceBuffer<float> in(input), out(input.size());
  REQUIRE(stitch::test::launch_transpose(in.get(), out.get(), rows, cols) == cudaSuccess);
  const std::vector<float> got = out.download();
  for (int r = 0; r < rows; ++r)
    for (int c = 0; c < cols; ++c)
      REQUIRE(got[c * rows + r] == input[r * cols + c]);
}

TEST_CASE("an elementwise block of 256 threads runs in well under a millisecond", "[runtime]") {
  const int blocks = 512, threads = 256, count = blocks * threads;
  const std::vector<float> input = stitch::test::random_floats(count, -1, 1, 48);
  DeviceBuffer<float> in(input), out(count);
  const auto launch = [&] {
    return STITCH_LAUNCH(scale_add, blocks, threads, 0, nullptr, in.get(), out.get(), 3.0f, 0.5f,
                         count);
  };
  REQUIRE(launch() == cudaSuccess); // warm the fiber stacks and worker threads
  // Processor time of all threads, so a loaded CI machine does not make it flaky.
  const std::clock_t start = std::clock();
  REQUIRE(launch() == cudaSuccess);
  const double per_block = static_cast<double>(std::clock() - start) / CLOCKS_PER_SEC / blocks;
  INFO("processor seconds per 256-thread block: " << per_block);
  // About 17 microseconds in an optimized build on the development machine, 0.4 ms in a debug
  // build with AddressSanitizer; the bound holds for both.
  CHECK(per_block < 1e-3);
  CHECK(out.download()[count - 1] == input[count - 1] * 3.0f + 0.5f);
}
