// Kernels that exercise every device helper and stitchc macro, written as generated code is:
// one .cu source that nvcc compiles for sm_90 (the stitch_runtime_nvcc_portable_kernels test)
// and that the host target compiles as C++ and runs (test_device_helpers.cpp).
#include "stitch_cuda.h"

#include "device/stitch_grid.cuh"
#include "device/stitch_math.cuh"
#include "device/stitch_reduce.cuh"
#include "device/stitch_vector.cuh"

#include "portable_kernels.h"

namespace stitch::test {
namespace {

__global__ void block_reductions_kernel(const float* __restrict__ in, float* __restrict__ sums,
                                        float* __restrict__ maxes, float* __restrict__ mins,
                                        int per_block) {
  const float* row = in + static_cast<std::size_t>(blockIdx.x) * per_block;
  const int thread = static_cast<int>(linear_thread_index());
  const int threads = static_cast<int>(block_thread_count());
  float sum = 0.0f, maximum = -INFINITY, minimum = INFINITY;
  for (int i = thread; i < per_block; i += threads) {
    sum += row[i];
    maximum = fmaxf(maximum, row[i]);
    minimum = fminf(minimum, row[i]);
  }
  sum = block_reduce_sum(sum);
  maximum = block_reduce_max(maximum);
  minimum = block_reduce_min(minimum);
  if (thread == 0) {
    sums[blockIdx.x] = sum;
    maxes[blockIdx.x] = maximum;
    mins[blockIdx.x] = minimum;
  }
}

__global__ void block_welford_kernel(const float* __restrict__ in, float* __restrict__ means,
                                     float* __restrict__ variances, int per_block) {
  const float* row = in + static_cast<std::size_t>(blockIdx.x) * per_block;
  WelfordStats stats = welford_empty();
  for (int i = static_cast<int>(threadIdx.x); i < per_block; i += static_cast<int>(blockDim.x))
    stats = welford_push(stats, row[i]);
  stats = block_welford(stats);
  if (threadIdx.x == 0) {
    means[blockIdx.x] = stats.mean;
    variances[blockIdx.x] = welford_variance(stats);
  }
}

__global__ void vector_affine_kernel(const float* __restrict__ in, float* __restrict__ out,
                                     std::size_t count) {
  const std::size_t index = (std::size_t{blockIdx.x} * blockDim.x + threadIdx.x) * kFloatsPerVector;
  if (index >= count) return;
  const float4 value = load_float4(in, index, count);
  store_float4(out, index, count, map_float4(value, [](float x) { return 2.0f * x + 1.0f; }));
}

__global__ void transform_gelu_kernel(const float* __restrict__ in, float* __restrict__ out,
                                      std::size_t count) {
  transform_elements(in, out, count, [](float x) { return gelu_erf(x); });
}

__global__ void activation_kernel(Activation activation, const float* __restrict__ in,
                                  float* __restrict__ out, int count) {
  const int i = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (i >= count) return;
  const float x = in[i];
  switch (activation) {
  case Activation::GeluErf:
    out[i] = gelu_erf(x);
    break;
  case Activation::GeluTanh:
    out[i] = gelu_tanh(x);
    break;
  case Activation::Sigmoid:
    out[i] = sigmoid(x);
    break;
  case Activation::Softplus:
    out[i] = softplus(x);
    break;
  case Activation::Mish:
    out[i] = mish(x);
    break;
  case Activation::Silu:
    out[i] = silu(x);
    break;
  case Activation::Elu:
    out[i] = elu(x);
    break;
  case Activation::Selu:
    out[i] = selu(x);
    break;
  case Activation::HardSwish:
    out[i] = hard_swish(x);
    break;
  }
}

// Every function here must exist with the same spelling under nvcc and on the host target.
__global__ void math_functions_kernel(const float* __restrict__ in, float* __restrict__ out,
                                      int count) {
  const int i = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (i >= count) return;
  const float x = in[i], y = in[i] * 0.5f + 1.0f;
  const float results[kMathFunctionCount] = {
      expf(x),     logf(fabsf(x)),  sqrtf(fabsf(x)),  rsqrtf(fabsf(x)),  tanhf(x),  erff(x),
      fmaxf(x, y), fminf(x, y),     fabsf(x),         powf(fabsf(x), y), floorf(x), ceilf(x),
      rintf(x),    truncf(x),       log1pf(fabsf(x)), expm1f(x),         sinf(x),   cosf(x),
      exp2f(x),    log2f(fabsf(x)), fmodf(x, y),      erfcf(x),          max(x, y), __saturatef(x)};
  for (int k = 0; k < kMathFunctionCount; ++k)
    out[i * kMathFunctionCount + k] = results[k];
}

constexpr int kTile = 32;

// 32 x 8 threads move a 32 x 32 tile; the +1 column keeps shared-memory banks apart.
__global__ void transpose_kernel(const float* __restrict__ in, float* __restrict__ out, int rows,
                                 int cols) {
  STITCH_SHARED_2D(float, tile, kTile, kTile + 1);
  const int tile_col = static_cast<int>(blockIdx.x) * kTile;
  const int tile_row = static_cast<int>(blockIdx.y) * kTile;
  for (int r = static_cast<int>(threadIdx.y); r < kTile; r += static_cast<int>(blockDim.y)) {
    const int row = tile_row + r, col = tile_col + static_cast<int>(threadIdx.x);
    if (row < rows && col < cols) tile[r][threadIdx.x] = in[row * cols + col];
  }
  __syncthreads();
  for (int c = static_cast<int>(threadIdx.y); c < kTile; c += static_cast<int>(blockDim.y)) {
    const int col = tile_col + c, row = tile_row + static_cast<int>(threadIdx.x);
    if (row < rows && col < cols) out[col * rows + row] = tile[threadIdx.x][c];
  }
}

__global__ void column_normalize_kernel(const float* __restrict__ x, float* __restrict__ partials,
                                        float* __restrict__ out, int rows, int cols,
                                        bool synchronize_grid) {
  const int blocks = static_cast<int>(gridDim.x);
  const int rows_per_block = (rows + blocks - 1) / blocks;
  const int first_row = static_cast<int>(blockIdx.x) * rows_per_block;
  const int last_row = min(rows, first_row + rows_per_block);
  for (int c = static_cast<int>(threadIdx.x); c < cols; c += static_cast<int>(blockDim.x)) {
    float sum = 0.0f;
    for (int r = first_row; r < last_row; ++r)
      sum += x[r * cols + c];
    partials[blockIdx.x * cols + c] = sum;
  }
  if (synchronize_grid) stitch_grid_sync();
  for (int c = static_cast<int>(threadIdx.x); c < cols; c += static_cast<int>(blockDim.x)) {
    float total = 0.0f;
    for (int b = 0; b < blocks; ++b)
      total += partials[b * cols + c]; // fixed order
    for (int r = first_row; r < last_row; ++r)
      out[r * cols + c] = x[r * cols + c] / total;
  }
}

__global__ void reverse_in_dynamic_shared_kernel(const float* __restrict__ in,
                                                 float* __restrict__ out) {
  STITCH_DYNAMIC_SHARED(float, values);
  const unsigned t = threadIdx.x, n = blockDim.x;
  values[t] = in[blockIdx.x * n + t];
  __syncthreads();
  out[blockIdx.x * n + t] = values[n - 1 - t];
}

__global__ void histogram_kernel(const float* __restrict__ in, unsigned* histogram, int count,
                                 int bins) {
  const int i = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (i >= count) return;
  const int bin = min(bins - 1, static_cast<int>(in[i] * static_cast<float>(bins)));
  atomicAdd(&histogram[bin], 1u);
}

} // namespace

cudaError_t launch_block_reductions(const float* in, float* sums, float* maxes, float* mins,
                                    int blocks, dim3 threads, int per_block) {
  return STITCH_LAUNCH(block_reductions_kernel, blocks, threads, 0, nullptr, in, sums, maxes, mins,
                       per_block);
}

cudaError_t launch_block_welford(const float* in, float* means, float* variances, int blocks,
                                 int threads, int per_block) {
  return STITCH_LAUNCH(block_welford_kernel, blocks, threads, 0, nullptr, in, means, variances,
                       per_block);
}

cudaError_t launch_vector_affine(const float* in, float* out, std::size_t count) {
  const std::size_t threads = (count + kFloatsPerVector - 1) / kFloatsPerVector;
  const unsigned blocks = static_cast<unsigned>((threads + 127) / 128);
  return STITCH_LAUNCH(vector_affine_kernel, blocks, 128, 0, nullptr, in, out, count);
}

cudaError_t launch_transform_gelu(const float* in, float* out, std::size_t count) {
  return STITCH_LAUNCH(transform_gelu_kernel, 3, 64, 0, nullptr, in, out, count);
}

cudaError_t launch_activation(Activation activation, const float* in, float* out, int count) {
  return STITCH_LAUNCH(activation_kernel, (count + 255) / 256, 256, 0, nullptr, activation, in, out,
                       count);
}

cudaError_t launch_math_functions(const float* in, float* out, int count) {
  return STITCH_LAUNCH(math_functions_kernel, (count + 127) / 128, 128, 0, nullptr, in, out, count);
}

cudaError_t launch_transpose(const float* in, float* out, int rows, int cols) {
  const dim3 grid((cols + kTile - 1) / kTile, (rows + kTile - 1) / kTile);
  return STITCH_LAUNCH(transpose_kernel, grid, dim3(kTile, 8), 0, nullptr, in, out, rows, cols);
}

cudaError_t launch_column_normalize(const float* x, float* partials, float* out, int rows, int cols,
                                    int blocks, bool synchronize_grid) {
  return STITCH_LAUNCH_COOPERATIVE(column_normalize_kernel, blocks, 64, 0, nullptr, x, partials,
                                   out, rows, cols, synchronize_grid);
}

cudaError_t launch_reverse_in_dynamic_shared(const float* in, float* out, int blocks, int threads) {
  return STITCH_LAUNCH(reverse_in_dynamic_shared_kernel, blocks, threads,
                       sizeof(float) * static_cast<std::size_t>(threads), nullptr, in, out);
}

cudaError_t launch_histogram(const float* in, unsigned* histogram, int count, int bins) {
  return STITCH_LAUNCH(histogram_kernel, (count + 255) / 256, 256, 0, nullptr, in, histogram, count,
                       bins);
}

} // namespace stitch::test
