// Thread mappings of the Movement-category kernels whose best launch is not a flat loop over
// output 0's elements, and the layout analysis both the planner and the emitter read:
//
//   - Permuting copies (Transpose, and DepthToSpace/SpaceToDepth, which are transposes of a
//     6-D view) are first reduced to a canonical form: size-1 axes dropped and axes that stay
//     adjacent merged, so [0,2,1,3] on [B,S,H,D] stays rank 4 while perm [0,1,3,2] on
//     [1,8,64,32] becomes perm [0,2,1] on [8,64,32]. When the input's contiguous
//     axis is not the output's, the copy goes through shared-memory tiles (reads and writes
//     both coalesced): a tile is 32 rows of the output's contiguous axis by enough columns of
//     the input's contiguous axis to span 32 elements, each column carrying `vector` elements
//     of a trailing run both sides keep contiguous ([0,2,1,3]: the run is D). Otherwise a
//     plain gather, one thread per output element.
//   - Split reads its input once: a flat loop over the input's elements.
//   - TopK: a block per row (sorting in shared memory).
//   - ScatterND: unless its indices are constant and distinct, a block per update row, which
//     first checks whether other rows address the same slice (see kernel_movement_index.cpp).
//
// Every kernel these feed loops grid-stride (over tiles, rows or elements) and uses any block
// size, so the flat launch is also correct, only slower.
#pragma once

#include <cstdint>
#include <vector>

#include "planner/fusion_plan.h"
#include "planner/launch_config.h"

namespace stitch {

// A permuting copy's canonical form (PermutedCopy).
PermutedCopy canonical_permutation(const Shape& in, const std::vector<int64_t>& perm);

// The canonical copy a permuting node performs (Transpose, DepthToSpace, SpaceToDepth).
PermutedCopy node_permutation(const Graph& graph, const Node& node);
// The same copy over symbolic dims, not canonicalized (a symbolic axis may be 1 at the planning
// binding): the input viewed as `dims` (DepthToSpace and SpaceToDepth: their 6-D view) and the
// permutation; axis j of the output view is axis perm[j] of `dims`.
struct SymbolicPermutation {
  SymShape dims;
  std::vector<int64_t> perm;
};
SymbolicPermutation symbolic_permutation(const Graph& graph, const Node& node);

// The shared-memory tiling of a canonical permuted copy, when it pays (TransposeTiling).
TransposeTiling transpose_tiling(const PermutedCopy& copy);

// TopK's per-row selection (TopKPlan).
TopKPlan topk_plan(const Graph& graph, const Node& node);
// The selection's shared buffer for rows of `length` (at most): the row padded to a power of two
// where that fits, else the largest buffer streaming the row where k fits half of it, else 0
// (ranks counted).
int64_t topk_capacity(int64_t length, int64_t k);
// The threads of the block that selects one row.
int64_t topk_threads(const TopKPlan& plan);

// ScatterND's update rows address distinct slices, as far as compile time can tell: its
// indices are constant (or there is a single row) and no two rows name the same slice.
bool scatter_rows_distinct(const Graph& graph, const Node& node);

// Sets group.mapping and group.launch for a Movement-category or TopK node whose kernel
// wants another launch than the flat one over output 0; leaves others as they are.
void plan_movement_launch(const Graph& graph, const Node& node, const DeviceParams& device,
                          FusionGroup& group);

} // namespace stitch
