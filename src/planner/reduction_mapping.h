// Thread mapping and launch configuration for the kernel of one Reduction-category node
// (Reduce*, ArgMax/ArgMin, CumSum, global pools; softmax and the normalizations reach the
// planner lowered to these by lower-composites).
//
// Every such node reduces (or scans) its input along some axes. Its iteration
// space, `ReductionSpace`, is the input's shape with size-1 axes dropped and neighbouring axes
// of the same kind (reduced or kept) merged: [4,1,6,8] reducing axes {2,3} becomes [4,48] with
// the second dim reduced, 4 independent "lines" of 48 elements. The planner picks the mapping
// from it; the emitter indexes by it (both call `reduction_space`, so they cannot disagree).
//
//   lines of contiguous elements (rows):  launch_config.h's row_mapping, the rule Regional
//       groups use too: a thread per row for rows of at most 16 elements, a block per row when
//       they are long (past 1024 elements) or too few to fill the device with warps, else a
//       warp per row.
//   anything else (a reduced block with kept axes inside it, non-contiguous axes): flat, one
//       thread per output element with an inner loop over its reduced elements; consecutive
//       threads take consecutive outputs, so their loads are coalesced whenever the innermost
//       kept axis is contiguous.
//   CumSum: a warp per row, scanning chunks of 32, when the scanned axis is the innermost one
//       and at least 32 long; otherwise a thread per line, scanning sequentially.
//
#pragma once

#include <functional>

#include "graph/graph.h"
#include "planner/fusion_plan.h"
#include "planner/launch_config.h"

namespace stitch {

// The axes `node`, a Reduction-category node, reduces (or scans), per axis of its input.
std::vector<bool> reduced_axes(const Graph& graph, const Node& node);
// The iteration space of `node`, a Reduction-category node.
ReductionSpace reduction_space(const Graph& graph, const Node& node);

// Sets group.mapping and group.launch for `node`'s kernel.
void plan_reduction_launch(const Graph& graph, const Node& node, const DeviceParams& device,
                           FusionGroup& group);

// Over symbolic dims, a row kernel of `rows` rows of `length` elements (expressions of the
// symbols, either may be constant) whose best mapping changes within their ranges: for each
// mapping other than group.mapping that row_mapping gives somewhere in them, the variant `make`
// builds (its spec and launch) goes into group.variants, taken where the rule gives its mapping
// (row_mapping_regions). `make` gets the mapping, the row length to size a launch by (the
// planning length, clamped into the variant's lengths) and the longest row the variant runs.
// Where it returns false the group's own kernel runs those shapes, only slower.
using MakeVariant =
    std::function<bool(ThreadMapping, int64_t length, int64_t longest, MappingVariant&)>;
void add_mapping_variants(const Graph& graph, const DimExpr& rows, const DimExpr& length,
                          int64_t planned_length, const DeviceParams& device, FusionGroup& group,
                          const MakeVariant& make);

} // namespace stitch
