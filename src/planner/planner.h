// The planners: Graph -> FusionPlan. `plan_fusion` picks one by name:
//   none    one group per node (every op its own kernel or library call)
//   greedy  XLA-style producer-consumer fusion: a pointwise producer joins its consumer's
//           group when all its consumers are there; reductions and window ops (pools, a
//           depthwise Conv) only take producers (never join their consumers); MatMul/Gemm
//           take their epilogue chain first (so a row reduction and the one-row product
//           reading it stay two launches: the ILP's Global group makes them one)
//   ilp     FusionStitching's global search: candidate groups, then a GLPK integer program
//           picking the set partition of the nodes of least modeled cost (plan_ilp.cpp)
// Every planner uses the same legality checks (legality.h) and the same cost model.
//
// THE COST MODEL (cost_model.h). A group costs, in bytes of HBM traffic:
//   bytes        inputs read + outputs written; tensors internal to the group are free
//   + launch     launch_us * HBM bandwidth per launch (3 us * 3.35 TB/s = 10,050,000 on H100)
//   + recompute  repeated evaluations of smaller intermediates * 0.25
//   + parallelism  streamed bytes * (1/utilization - 1), utilization = the kernel's threads
//                over the 135,168 (132 SMs * 2048 / 2) it takes to saturate HBM, capped at
//                8x; streamed = outputs and full-size inputs (broadcast operands are cached)
//   + epilogue   1 KiB per cuBLASLt epilogue node (a tie-break toward generated kernels)
//   + compute    an attention kernel's matrix products at its measured rate (fp32 FMA 12,
//                tensor cores 20 TFLOP/s on an H100) in bytes of HBM time; a GEMM chain's
//                modeled time (cost_model.h chain_traffic: bytes per memory level, products at
//                the chain's rate, over the SMs its blocks occupy) beyond its bytes and beyond
//                cuBLASLt's time for the same products
//   + layouts    a library call reading or writing through a Transpose (GemmSpec::layout_*),
//                or a Local group reading through one (LocalSpec::moves), moves whole 32-byte
//                sectors: where the adjacent run of an operand is r < 32 bytes, its bytes *
//                (32 - r) / r more; and a loop of calls over batch axes no one stride
//                describes is a launch per call
//   - unread     the part of an input a Local group's Slices never read
// A plan costs the sum of its groups. Example: the expanded LayerNorm of x[4096,1024] fp32
// (16 MiB), ReduceMean, Sub, Pow, ReduceMean, Add(eps), Sqrt, Div, Mul(gamma), Add(beta):
//   none: 9 kernels; the full-row ones read 1 or 2 and write one 16 MiB tensor:
//         201,465,864 bytes + 9 * 10,050,000 launch = 291,915,864 (+ small parallelism
//         charges for the two warp-per-row reductions, 4,096 warps = 97% of saturation)
//   ilp:  one Regional group, a warp per row (1,024 floats, 32 per lane in registers: the two
//         rows kept across the reductions, x and x - mean, fit): reads x, gamma, beta and
//         two scalars, writes y: 33,562,632 bytes + 10,050,000 launch + 3% parallelism
//         (1,048,832) = 44,661,464, 6.5x less.
//   greedy: reductions do not absorb their consumers, so the chain splits into 4 kernels:
//         {mean}, {sub}, {pow, var}, {eps, sqrt, div, gamma, beta}.
// Example with layouts: attention scores Q K^T with Q, K [B=2, S=128, H=12, D=64] fp32 (768 KiB
// each) read as [B,H,S,D] and [B,H,D,S] through two Transposes; the scores [2,12,128,128] are
// 1.5 MiB:
//   copies: two transpose kernels, each reading and writing 786,432 bytes, and one batched call
//         reading both copies and writing the scores: 2 * (1,572,864 + 10,050,000) + 3,145,728
//         + 10,050,000 = 36,441,456
//   in place: Q's rows 3,072 bytes apart with 256 adjacent (no sector overhead), the 12 heads
//         one stride (64 floats), B a loop of 2 calls: 3,145,728 + 2 * 10,050,000 = 23,245,728,
//         chosen. At B = 32 the loop is 32 launches (371,931,648 in all against the copies'
//         130,813,296) and the copies win; with D = 4 floats (16-byte runs) the strided reads
//         would cost twice their bytes.
// Example with index remappings: rotary embedding of Q [B=1, S=2048, H=32, D=128] fp32 (32 MiB)
// read as [B,H,S,D] through a Transpose: x * cos + rotate_half(x) * sin, rotate_half = Concat(
// Neg(Slice(x, D/2..D)), Slice(x, 0..D/2)), cos and sin [S,D] (1 MiB each):
//   copies: 8 kernels (Transpose, 2 Slices, Neg, Concat, 2 Muls, Add), 505,413,632 bytes +
//         8 * 10,050,000 = 585,813,632
//   one Local group with the four movement nodes as index remappings (LocalSpec::moves):
//         reads x, cos and sin once and writes the result: 69,206,016 + 10,050,000 =
//         79,256,016, 7.4x less. D stays the innermost axis, so every read is coalesced.
//   A read through a transpose of the innermost axes (K^T) is not: consecutive elements of
//   the iteration read elements a row apart, a 32-byte sector each, so the group is charged
//   the read's bytes * (32 - e) / e more (e the element size; 7x for fp32), more than a tiled
//   copy kernel costs once the tensor passes a few MiB; there the transpose stays a copy or a
//   library call's layout. A Slice that leaves part of its operand unread is charged only
//   the part it reads (LocalSpec::unread_bytes).
//
// The ILP (plan_ilp.cpp): a binary x_c per candidate group c; minimize sum cost_c x_c
// subject to each node covered exactly once. Candidates are the singletons, the groups
// greedy picks, and the legal convex sets grown from each node along producer-consumer
// edges (every subset when the graph is small). A plan whose groups form a cycle (each
// group is convex, but A feeds B and B feeds A) is cut off by a constraint "not all of
// these groups together" and the program is solved again, until the plan is acyclic.
#pragma once

#include <string>

#include "planner/fusion_plan.h"
#include "planner/launch_config.h"
#include "planner/legality.h" // single_node_group, the group every planner starts from

namespace stitch {

struct PlannerOptions {
  std::string planner = "ilp"; // stitchc's default
  DeviceParams device;
  double ilp_time_limit_s = 10.0; // --ilp-time-limit: the best plan found by then
  // Graphs with at most this many fusible nodes get every subset as a candidate (exact);
  // larger ones get sets grown along edges, capped below.
  int exhaustive_candidates_up_to = 12;
  int max_group_nodes = 16; // grown candidates, at most this many nodes
  int max_candidates_per_seed = 256;
  // --no-fuse: nodes (by ONNX name) every planner keeps in a group of their own, to bisect
  // a wrong result to one fusion.
  std::vector<std::string> no_fuse;
  bool tf32 = false; // --precision tf32: GEMMs and convolutions may use TF32 tensor cores
  // --attention: whether attentions run as one kernel by the cost model, always or never.
  FusionMode attention = FusionMode::Auto;
  // --gemm-chain: whether GEMM chains run as one kernel by the cost model, always or never.
  FusionMode gemm_chain = FusionMode::Auto;
};

FusionPlan plan_fusion(const Graph& graph, const PlannerOptions& options);

// Records the library calls' math in their specs (GemmSpec/ConvSpec::math): TF32 for every
// float32 GEMM and convolution when `tf32` (--precision tf32), strict fp32 otherwise; float16
// and bfloat16 calls are always fp32-accumulated (legality_library.cpp). plan_fusion calls it.
void choose_library_math(FusionPlan& plan, bool tf32);

// One group per node: views become aliases, Gemm-category ops cuBLASLt calls, convolutions
// cuDNN calls, and every other node one kernel with a mapping chosen from its shapes.
FusionPlan plan_one_kernel_per_op(const Graph& graph, const DeviceParams& device);
FusionPlan plan_greedy(const Graph& graph, const PlannerOptions& options);
FusionPlan plan_ilp(const Graph& graph, const PlannerOptions& options);

// The unfused plan of a gemm_chain group (greedy fusion of its nodes without chains), its
// groups numbered from `first_id`. plan_fusion adds one per chain.
ChainFallback plan_chain_fallback(const Graph& graph, const PlannerOptions& options,
                                  const FusionGroup& chain, int first_id);

} // namespace stitch
