// The planners' cost model: what one group costs, in bytes of HBM traffic (the unit every
// term is converted to; see planner.h for the model and a worked example).
//
//   bytes        the group's inputs read once plus its outputs written once (of a table only
//                Gathers read, an embedding, the rows they pick); tensors that
//                stay inside the group cost nothing; plus what the spec moves beyond that: a
//                Regional body's full-row inputs read again by later passes when it cannot
//                keep them (RowCache::None), a GEMM's fill kernel writing the result that the
//                GEMM then reads back as C, the sectors' extra bytes of reads whose adjacent
//                elements are not adjacent in memory (a transposed operand a GEMM or a Local
//                group reads through), less what a Local group's Slices leave unread, and a
//                float16/bfloat16 convolution's transforms of channels-first X, W and result
//                (a read and a write of each: the library's tensor-core kernels read
//                channels-last), and a channels-last convolution's bias and residual when its
//                epilogue has no Relu (cuDNN's identity-activation call fell back to a pass
//                over the result for each on an H100)
//   launch       one launch per group that does work (views are free; a GEMM with a fill
//                kernel is two), launch_us of stream time expressed as the bytes HBM moves in
//                that time
//   recompute    smaller intermediates evaluated again per element of the iteration space
//                (a [1,C] value feeding a [R,C] chain is computed R times)
//   parallelism  a kernel with fewer threads than it takes to saturate HBM runs slower:
//                its streamed bytes (outputs, and inputs of the largest size: a smaller
//                input is a broadcast operand served from cache) cost 1/utilization (at
//                most kMaxSlowdown) times as much
//   epilogue     a small charge per cuBLASLt epilogue node (launch_config.h says why)
//   compute      an attention group's two matrix products (2 · heads · queries · keys · (head
//                dim + value dim) operations) at its kernel's rate, FMA or tensor cores
//                (launch_config.h), over the fraction of SMs its blocks occupy, as the bytes
//                HBM moves in that time: the fused kernel is compute-bound where the scores it
//                saves are small. Library GEMMs are not charged (cuBLASLt runs them near the
//                tensor cores' peak). A GEMM chain is charged its modeled time (chain_traffic)
//                beyond streaming its bytes once and beyond the library's time for its products;
//                its blocks' occupancy is in that time, so it pays no parallelism term.
// Costs are integers so that plan costs add exactly (the exhaustive test compares sums).
#pragma once

#include <cstdint>

#include "planner/legality.h"

namespace stitch {

struct GroupCost {
  int64_t bytes = 0;
  int64_t launches = 0;
  int64_t launch = 0;
  int64_t recompute = 0;
  int64_t parallelism = 0;
  int64_t epilogue = 0;
  int64_t compute = 0;
  int64_t total() const { return bytes + launch + recompute + parallelism + epilogue + compute; }
};

// A kernel running on too few threads is at most this many times slower than at full
// bandwidth (one warp per SM still keeps several loads in flight).
constexpr double kMaxSlowdown = 8.0;

GroupCost group_cost(const FusionContext& ctx, const GroupAnalysis& group);

// A GEMM chain's problem: rows x inner -> hidden (one product, or two for a gate) -> columns, of
// `element`-byte values.
struct ChainShape {
  int64_t rows = 0, inner = 0, hidden = 0, columns = 0;
  int products = 1;
  int64_t element = 2;
};

// A chain configuration's traffic at each memory level and its modeled time (FlashFuser's
// analytic model): tiles of `tile_rows` rows, each a cluster of `cluster_blocks` blocks owning
// `slice` hidden columns apiece.
//   hbm   X and the weights once, the result once; the weights again for each later row tile
//         where they outgrow L2
//   l2    the weights again for each later row tile where they fit; X's tile rows again for
//         each 64-column step of each block's slice past the first
//   dsm   each cluster's partial output tiles (fp32) sent to the blocks that sum them
//   flops the products over whole tiles (padding rows and hidden columns included)
// time = the slowest of the levels at their bandwidths and the products at the chain's rate,
// over the share of the SMs the blocks occupy (fewer blocks pull less bandwidth and issue fewer
// products). legality_chain.cpp picks the configuration of least time; group_cost charges it.
struct ChainTraffic {
  double hbm_bytes = 0, l2_bytes = 0, dsm_bytes = 0, flops = 0;
  double busy = 0;      // the blocks over the SMs, at most 1
  double time_us = 0;   // the modeled time
  double memory_us = 0; // the levels' times added up (a tie-break: less traffic where the
                        // products decide the time)
};
ChainTraffic chain_traffic(const DeviceParams& device, const ChainShape& shape, int64_t tile_rows,
                           int64_t cluster_blocks, int64_t slice);

// The launches a planned group makes: none for an alias, two for a GEMM with a fill kernel,
// else one.
int64_t group_launches(const FusionGroup& group);

// The totals of a whole plan, for the report and the tests.
struct PlanCost {
  int64_t launches = 0;
  int64_t bytes = 0;
  int64_t cost = 0;
};

} // namespace stitch
