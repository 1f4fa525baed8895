// The fusion plan: the planner's decision, which the emitter implements without revisiting.
//
// A plan is an ordered list of groups covering every node of the graph once. Each group is
// one unit of work on the stream: a generated kernel (one node, or several fused ones), a
// library call (cuBLASLt for Gemm-category nodes, cuDNN for convolutions), or an alias (views:
// no work at all). A kernel group carries its thread mapping and launch configuration; a
// fused group also carries the stitching scheme that passes values between its nodes.
//
// The contract between planner and emitter. Every fused group is convex (no path leaves it and
// comes back) and the groups, in plan order, respect the graph's dependences. `inputs` are the
// tensors a group reads from memory, `outputs` the ones it writes (read by a later group, or
// graph outputs); every other tensor of its nodes lives only inside the kernel and gets no
// storage. `spec` is everything legality decided about how the group runs, typed by its kind
// (group_spec.h says what each kind holds); the emitter prints it. The other fields summarize
// the spec for the reports and the memory plan: the stitching scheme, the mapping and launch,
// the row space, the scratch, the parts.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "graph/graph.h"
#include "planner/group_spec.h"

namespace stitch {

enum class GroupKind {
  Kernel,      // a kernel stitchc generates
  GemmLibrary, // a cuBLASLt matrix multiply
  ConvLibrary, // a cuDNN convolution
  Attention,   // a generated attention kernel: one pass over the keys (AttentionSpec)
  GemmChain,   // a generated GEMM chain in thread-block clusters (GemmChainSpec)
  Alias,       // views: the outputs share storage with the inputs, no work
};

// How values pass between the ops of one fused kernel (AStitch's stitching schemes).
enum class StitchScheme {
  Independent, // unrelated ops packed into one launch
  Local,       // a producer's value passed in registers (one thread produces and consumes)
  Regional,    // through shared memory within a block (a row reduction and its consumers)
  Global,      // through global memory with a grid-wide barrier in one persistent launch
};

struct LaunchConfig {
  std::array<int64_t, 3> grid = {1, 1, 1};
  std::array<int64_t, 3> block = {1, 1, 1};
  int64_t dynamic_shared_bytes = 0;
  bool cooperative = false; // all blocks resident (for a grid-wide barrier)
  // Cooperative: the blocks each SM must hold at once (grid / SMs, rounded up), which the
  // kernel's __launch_bounds__ promises so that nvcc keeps its registers within that share.
  int64_t min_blocks_per_sm = 0;
  int vector_width = 1; // elements per vectorized access
  // Blocks per thread-block cluster along x (a GEMM chain's; 1: no clusters).
  int64_t cluster = 1;
  // A kernel over symbolic dims (`--dim`): its work items (elements, or rows) as an expression
  // of the symbols, `work_per_block` of them per block and grid-stride iteration. The grid is
  // then computed per run, ceil(work / work_per_block) blocks, at least 1 and at most grid[0]
  // (sized for the symbols' maxima); the kernel takes the symbols `work` names as parameters.
  // 0: the grid above, fixed.
  DimExpr work;
  int64_t work_per_block = 0;
  // Over symbolic dims: every index the kernel forms stays below 2^31 at the symbols' maxima,
  // so its divisions by run-time extents (coordinates taken apart by the symbols) run in 32
  // bits (stitch::dims::div32), several times cheaper on a GPU than 64-bit ones.
  bool index32 = false;
};

// A bound on one extent of the run that picks a mapping variant: `value` (an expression of the
// symbols) at least `at_least` and at most `at_most`, where given. `name` is what the group
// function calls it ("rows", "length").
struct ExtentBound {
  std::string name;
  DimExpr value;
  std::optional<int64_t> at_least, at_most;
};

// Over symbolic dims, where the best thread mapping of a row kernel changes within the range of
// its rows or its row length (a block per row for few or long rows, a warp per row for many,
// a thread per row for short ones), or an attention's tile geometry within the range of its
// queries (a decode step's one query a block, a prefill's 16): the group's kernel for another
// mapping or geometry, with its own spec and launch. The group function runs the first variant
// one of whose `when` holds (every bound of it), the group's own kernel where none does.
struct MappingVariant {
  GroupSpec spec;
  ThreadMapping mapping = ThreadMapping::Flat;
  LaunchConfig launch;
  std::vector<std::vector<ExtentBound>> when;
};

struct FusionGroup {
  int id = 0;
  GroupKind kind = GroupKind::Kernel;
  std::vector<int32_t> nodes; // indices into Graph::nodes, in topological order
  StitchScheme scheme = StitchScheme::Local;
  ThreadMapping mapping = ThreadMapping::Flat;
  LaunchConfig launch;
  int64_t estimated_bytes = 0;             // HBM bytes read plus written, by the cost model
  int64_t estimated_cost = 0;              // the cost model's total, in bytes (planner.h)
  std::vector<TensorId> inputs;            // read from memory (see the contract above)
  std::vector<TensorId> outputs;           // written to memory
  int64_t rows = 0, row_length = 0;        // Regional, Global: the row space
  int64_t scratch_bytes = 0;               // Global: global-memory scratch, planned in the arena
  std::vector<std::vector<int32_t>> parts; // Independent: each part's nodes
  std::vector<int64_t> part_blocks;        // Independent: each part's blocks (sum: the grid)
  GroupSpec spec;                          // what legality decided (group_spec.h)
  std::vector<MappingVariant> variants;    // over symbolic dims: other mappings, by extent
};

// A fusion a planner considered and did not make, with the legality check's sentence (or
// the costs that decided against it), for the report.
struct RejectedFusion {
  std::vector<int32_t> nodes;
  std::string reason;
};

// A plan's totals by the cost model, for comparing planners in the report.
struct PlanTotals {
  std::string planner;
  int64_t launches = 0;
  int64_t bytes = 0; // estimated HBM bytes
  int64_t cost = 0;  // the cost model's total
};

// What the ILP solver reported (planner "ilp").
struct IlpStats {
  bool ran = false;
  std::string status;   // "optimal", "time limit", ...
  double objective = 0; // the chosen plan's modeled cost
  double bound = 0;     // a lower bound on any plan's cost over the candidates
  double gap = 0;       // (objective - bound) / objective
  double solve_seconds = 0;
  int64_t candidates = 0;  // candidate groups, singletons included
  int cycle_cuts = 0;      // constraints added to break cycles between groups
  bool exhaustive = false; // every subset of the fusible nodes was a candidate
};

// A GEMM chain's unfused plan: the groups the library runs in the chain's place on a device that
// cannot hold its thread-block clusters (before sm_90, or too little shared memory), chosen when
// the model is created. Their ids follow the plan's; the intermediates the chain keeps on chip
// get storage of their own (MemoryPlan::fallback_bytes), allocated only where a chain runs
// unfused.
struct ChainFallback {
  int chain_group = 0;             // the gemm_chain group's id
  std::vector<FusionGroup> groups; // the chain's nodes planned without chains, in order
};

struct FusionPlan {
  std::vector<FusionGroup> groups;
  std::vector<ChainFallback> fallbacks; // one per gemm_chain group, in plan order
  std::string planner;                  // which planner made it ("none", "greedy", "ilp")
  std::vector<RejectedFusion> rejected; // bounded (kMaxRejectedFusions)
  std::vector<PlanTotals> totals;       // this plan first, then the other planners'
  IlpStats ilp;
};

constexpr size_t kMaxRejectedFusions = 100;

std::string_view group_kind_name(GroupKind k);
// A kernel stitchc generates (a fused or single-op kernel, an attention, a GEMM chain): it has a
// source file, a launch and a scheme; a library call or an alias has none of them.
inline bool generated_kernel(GroupKind k) {
  return k == GroupKind::Kernel || k == GroupKind::Attention || k == GroupKind::GemmChain;
}
std::string_view scheme_name(StitchScheme s);
std::string_view mapping_name(ThreadMapping m);
std::string_view row_cache_name(RowCache c);

} // namespace stitch
