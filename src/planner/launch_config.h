// Thread mappings and launch dimensions from shapes. The device is a parameter (Hopper's
// H100 SXM by default): the grid is sized to fill its SMs, blocks to its limits.
#pragma once

#include <cstdint>
#include <vector>

#include "planner/fusion_plan.h"

namespace stitch {

struct DeviceParams {
  int sm_count = 132; // H100 SXM
  int max_threads_per_sm = 2048;
  int max_threads_per_block = 1024;
  int64_t max_shared_per_block = 227 * 1024;
  int waves = 4; // blocks per SM a flat grid aims for before grid-striding
  // SMs whose resident blocks a cooperative (grid-barrier) launch may fill: 0 means sm_count.
  // The host target sets kHostTargetMultiprocessors, what its CUDA emulation keeps resident.
  int cooperative_sm_count = 0;
  // The cost model's parameters (cost_model.h), Hopper's by default.
  int registers_per_sm = 65536;
  int max_registers_per_thread = 255;
  double hbm_bytes_per_us = 3.35e6; // 3.35 TB/s of HBM3
  double launch_us = 3.0;           // one launch's fixed cost on the stream
  // Threads resident on the whole device for a memory-bound kernel to reach full bandwidth;
  // fewer than this and the kernel runs latency-bound (half the SMs' thread slots).
  int64_t saturating_threads() const { return int64_t{sm_count} * max_threads_per_sm / 2; }
  // A launch's cost in bytes of HBM traffic that would take the same time.
  int64_t launch_cost_bytes() const { return static_cast<int64_t>(launch_us * hbm_bytes_per_us); }
  int64_t max_global_scratch = 256 << 20; // a Global group's scratch, at most
  // Evaluating one pointwise op once more, in bytes of HBM time: an H100 does ~20 FP32
  // operations in the time it moves one byte, and an op costs a few.
  double recompute_bytes_per_element = 0.25;
  // A cuBLASLt epilogue node: the epilogue variants narrow the algorithms cuBLASLt may pick,
  // so where a generated kernel would do the same work at the same traffic, it gets it.
  int64_t epilogue_node_bytes = 1024;
  // The oldest GPU architecture the library is built for (--arch: sm_80 is 80): warp-level
  // matrix products of bfloat16 (attention on tensor cores) need 80.
  int min_compute_capability = 90;
  // The newest: a GEMM chain's clusters need 90 there (older devices run its unfused plan).
  int max_compute_capability = 90;
  // An attention kernel's matrix products, in floating-point operations per microsecond: the
  // rates at which the planner takes an attention group over its unfused products and softmax
  // where the H100 measurements of docs/benchmarks.md (scripts/gpu/attention_bench.py) found it
  // faster. fp32 FMA (stitch::attention::FlashConfig) ran 14 to 17 TFLOP/s at sequence 512 and
  // 2048 (fifth visit); 16-bit tensor cores (FlashMmaConfig) 42 at 512 and 68 at 2048, but only
  // 10 at 128 and on a decode step, where each block's first tiles' latency, which this term
  // does not model, dominates: 20 keeps those unfused (fused was 1.2 to 1.7 times slower there).
  double fma_flops_per_us = 12e6;
  double tensor_core_flops_per_us = 20e6;
  // A GEMM chain's products (stitch::chain: mma.sync tiles from shared memory, the building
  // blocks of FlashMmaConfig) at the rate the attention kernel reached where its products were
  // the bottleneck (68 TFLOP/s at 2048², fifth visit), scaled by the share of SMs the chain's
  // blocks occupy; it pays, on top of its bytes, the time beyond what the library's 16-bit GEMMs
  // (cuBLASLt on tensor cores, ~600 TFLOP/s at large shapes on an H100) would take. Neither is
  // measured for the chain itself yet: the next GPU visit calibrates both.
  double chain_tensor_flops_per_us = 68e6;
  double library_tensor_flops_per_us = 600e6;
  // The other memory levels a GEMM chain's configuration moves data through (its analytic model,
  // cost_model.h chain_traffic): the L2 cache that serves its weights again to later row tiles
  // while they fit (50 MB on an H100 SXM, about 5.5 TB/s), and distributed shared memory, over
  // which a cluster's blocks sum their partial output tiles (about 3.3 TB/s across the device,
  // as published for the H100; neither measured by stitchc yet).
  int64_t l2_bytes = 50'000'000;
  double l2_bytes_per_us = 5.5e6;
  double dsm_bytes_per_us = 3.3e6;
};

// The dynamic shared memory a block may opt in to on a GPU of this compute capability (CUDA's
// per-architecture limits): 227 KiB on sm_90 and sm_100, 163 KiB on sm_80 and sm_87, 99 KiB on
// sm_86, sm_89 and sm_120, 96 KiB on sm_70, 64 KiB on sm_75; 48 KiB for anything else.
inline int64_t max_shared_per_block_of(int capability) {
  switch (capability) {
  case 90:
  case 100:
  case 103:
    return 227 * 1024;
  case 80:
  case 87:
    return 163 * 1024;
  case 86:
  case 89:
  case 120:
  case 121:
    return 99 * 1024;
  case 70:
  case 72:
    return 96 * 1024;
  case 75:
    return 64 * 1024;
  default:
    return 48 * 1024;
  }
}

// The multiprocessors the host target's CUDA emulation makes resident for a cooperative
// launch (src/runtime/host/host_config.h, multiprocessor_count): a Global group planned for
// the host target sizes its grid to them, so that every block is resident at the barrier.
constexpr int kHostTargetMultiprocessors = 4;

// One thread per `vector_width` elements, 256-thread blocks, grid-stride beyond `waves` full
// waves of the device.
LaunchConfig flat_launch(int64_t elements, int vector_width, const DeviceParams& device);

// The one mapping rule for `rows` independent rows of `row_length` contiguous elements, for a
// single row op and a Regional group alike: a thread per row when rows hold at most 16
// elements; a block per row when they are longer than 1024, or at least 256 long and too few to
// give each SM 8 warps; otherwise a warp per row (several rows per block).
ThreadMapping row_mapping(int64_t rows, int64_t row_length, const DeviceParams& device);
// A box of row counts and row lengths, bounds included, over which row_mapping gives `mapping`.
struct MappingRegion {
  DimBounds rows, length;
  ThreadMapping mapping{};
};
// row_mapping over every row count in `rows` and row length in `length` (both bounds at least
// 1): boxes covering them, one mapping in each, adjacent boxes of one mapping merged where they
// make a box. One box where the rule does not switch within them.
std::vector<MappingRegion> row_mapping_regions(DimBounds rows, DimBounds length,
                                               const DeviceParams& device);
// The threads that share one row under `mapping` in blocks of `block` threads: 1, 32, or the
// block.
int64_t threads_per_row(ThreadMapping mapping, int64_t block);
// The launch of that mapping: flat for a thread per row, 8 warps per block for a warp per row,
// and for a block per row enough threads for the row (a multiple of a warp, at most 1024).
LaunchConfig row_launch(int64_t rows, int64_t row_length, ThreadMapping mapping,
                        const DeviceParams& device);

} // namespace stitch
