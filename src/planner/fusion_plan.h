// The fusion plan: the planner's decision, which the emitter implements without revisiting.
//
// A plan is an ordered list of groups covering every node of the graph once. Each group is
// one unit of work on the stream: a generated kernel (one node, or several fused ones), a
// library call (cuBLASLt for Gemm-category nodes, cuDNN for convolutions), or an alias (views:
// no work at all). A kernel group carries its thread mapping and launch configuration; a
// fused group also carries the stitching scheme that passes values between its nodes.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "graph/graph.h"

namespace stitch {

enum class GroupKind {
  Kernel,      // a kernel stitchc generates
  GemmLibrary, // a cuBLASLt matrix multiply
  ConvLibrary, // a cuDNN convolution
  Alias,       // views: the outputs share storage with the inputs, no work
};

// How values pass between the ops of one fused kernel (AStitch's stitching schemes).
enum class StitchScheme {
  Independent, // unrelated ops packed into one launch
  Local,       // a producer's value passed in registers (one thread produces and consumes)
  Regional,    // through shared memory within a block (a row reduction and its consumers)
  Global,      // through global memory with a grid-wide barrier in one persistent launch
};

// How threads cover a kernel's iteration space.
enum class ThreadMapping {
  Flat,        // one thread per element (or per vector of elements), grid-stride
  WarpPerRow,  // a reduction row per warp, several rows per block
  BlockPerRow, // a reduction row per block
};

struct LaunchConfig {
  std::array<int64_t, 3> grid = {1, 1, 1};
  std::array<int64_t, 3> block = {1, 1, 1};
  int64_t dynamic_shared_bytes = 0;
  bool cooperative = false; // all blocks resident (for a grid-wide barrier)
  int vector_width = 1;     // elements per vectorized access
};

struct FusionGroup {
  int id = 0;
  GroupKind kind = GroupKind::Kernel;
  std::vector<int32_t> nodes; // indices into Graph::nodes, in topological order
  StitchScheme scheme = StitchScheme::Local;
  ThreadMapping mapping = ThreadMapping::Flat;
  LaunchConfig launch;
  int64_t estimated_bytes = 0; // HBM bytes read plus written, by the cost model
};

struct FusionPlan {
  std::vector<FusionGroup> groups;
  std::string planner; // which planner made it ("none", ...)
};

std::string_view group_kind_name(GroupKind k);
std::string_view scheme_name(StitchScheme s);
std::string_view mapping_name(ThreadMapping m);

} // namespace stitch
