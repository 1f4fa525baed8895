// Launchers for the kernels in portable_kernels.cu, which use every device helper and stitchc
// macro and compile both with nvcc (sm_90) and for the host target. Pointers are device
// pointers (plain host memory on the host target). Each returns the launch's status.
#pragma once

#include "stitch_cuda.h"

#include <cstddef>

namespace stitch::test {

// Block b reduces in[b * per_block, (b + 1) * per_block) into sums[b], maxes[b], mins[b].
cudaError_t launch_block_reductions(const float* in, float* sums, float* maxes, float* mins,
                                    int blocks, dim3 threads, int per_block);

// Block b computes the population mean and variance of its per_block values with Welford.
cudaError_t launch_block_welford(const float* in, float* means, float* variances, int blocks,
                                 int threads, int per_block);

// out[i] = 2 in[i] + 1 through load_float4 / store_float4, thread t handling [4t, 4t + 4).
cudaError_t launch_vector_affine(const float* in, float* out, std::size_t count);

// out[i] = gelu_erf(in[i]) through transform_elements (float4 body, scalar tail).
cudaError_t launch_transform_gelu(const float* in, float* out, std::size_t count);

enum class Activation { GeluErf, GeluTanh, Sigmoid, Softplus, Mish, Silu, Elu, Selu, HardSwish };

cudaError_t launch_activation(Activation activation, const float* in, float* out, int count);

// out (cols x rows) = transpose of in (rows x cols) through a padded STITCH_SHARED_2D tile.
cudaError_t launch_transpose(const float* in, float* out, int rows, int cols);

// Cooperative: out[r][c] = x[r][c] / (sum over all rows of column c). Each block writes its
// column partial sums to partials[block][c], waits at stitch_grid_sync (unless
// synchronize_grid is false, which is a bug the tests expect to see), then divides.
cudaError_t launch_column_normalize(const float* x, float* partials, float* out, int rows, int cols,
                                    int blocks, bool synchronize_grid);

// Per block, reverses its blockDim.x values through dynamic shared memory.
cudaError_t launch_reverse_in_dynamic_shared(const float* in, float* out, int blocks, int threads);

// The CUDA math functions generated code may call, applied to x = in[i] (and y = in[i] / 2 + 1
// as a second operand): out[i * kMathFunctionCount + k] is function k in the order listed in
// portable_kernels.cu.
inline constexpr int kMathFunctionCount = 24;
cudaError_t launch_math_functions(const float* in, float* out, int count);

// histogram[bin(in[i])] += 1 with atomicAdd, over `bins` equal bins of [0, 1).
cudaError_t launch_histogram(const float* in, unsigned* histogram, int count, int bins);

} // namespace stitch::test
