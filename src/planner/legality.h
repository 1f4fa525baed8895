// Fusion legality: may a set of nodes run as one group, and if so as which kind of group
// (a generated kernel with a stitching scheme, or a cuBLASLt call with epilogue nodes)?
//
// `analyze_group` is a flat list of early returns. Each refusal is a `FusionDecision` with a
// sentence naming the nodes and the rule, kept in the plan report's rejected fusions. A legal
// group comes with its spec (group_spec.h): every structural decision, made here once, which
// the emitter prints. The analysis of each kind is its own file, as the emitter's writers are:
// legality_local.cpp, _window, _regional, _global (column reductions), _gemv, _independent,
// _library (cuBLASLt and cuDNN calls), _single (a node alone). The rules:
//   - every node can be fused at all (movement, convolution and opaque ops run alone);
//   - the group is convex: no path leaves it and comes back (else no order of groups runs it);
//   - a MatMul/Gemm leads a chain of epilogue nodes cuBLASLt applies (bias, residual,
//     activation), and nothing else; a Conv likewise leads the epilogue cuDNN's fused
//     convolution applies (a residual add, then Relu);
//   - the shapes share one thread mapping: Local (pointwise, one iteration shape, or one
//     window op with pointwise producers recomputed per tap and pointwise consumers), Regional
//     (row ops over one row space plus pointwise producers and consumers), Global (a column
//     reduction and its pointwise consumers; or a Regional head whose per-row values, through
//     views, are the vector of a one-row float32 MatMul/Gemm, and that product's pointwise
//     consumers), Independent (unrelated Local or Regional parts);
//   - the group fits the block's resources (shared memory, registers, global scratch).
// Acyclicity of the whole plan (a cycle through several groups) is the planners' job: the ILP
// cuts such cycles, greedy checks before each merge.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "graph/graph.h"
#include "planner/fusion_plan.h"
#include "planner/launch_config.h"

namespace stitch {

// What a node can be inside a fused group, from its op category and shapes.
enum class NodeClass {
  Alone,           // runs as its own group (views, movement, conv, opaque, other reductions)
  Pointwise,       // elementwise or broadcast op with a device expression
  RowOp,           // reduces or normalizes the trailing contiguous axes (Regional)
  ColumnReduction, // reduces the leading axes, keeping the trailing ones (Global)
  Window,          // a float32 MaxPool, AveragePool or depthwise Conv: a window per output
                   // element, evaluated in registers with its pointwise producers (per tap)
                   // and consumers (Local)
  Gemm,            // MatMul/Gemm: a cuBLASLt call that may take epilogue nodes, or the
                   // matrix-vector product of a Global group after row ops
  Conv,            // a Conv or ConvTranspose of a library dtype other than a window op: a
                   // cuDNN call that may read and write through channels-last Transposes
                   // and (a biased Conv) take a residual add and a Relu as its epilogue
  View,            // a view (reshape): alone an alias; in a group only on the path from row
                   // ops' per-row values to the matrix-vector product reading them
  Layout,          // a Transpose of a library dtype: alone a kernel; in a group as the
                   // layout a MatMul's library call reads A or B or writes its result through,
                   // or a Conv's channels-last X, W and result, or as a Movement node
  Movement,        // a Transpose (of another dtype), Slice, Expand or Concat: alone a kernel;
                   // in a Local group an index remapping its consumers read through
  Gather,          // a Gather (an embedding lookup): alone a kernel; in a Regional group a
                   // row of its data loaded per row where its consumers read it
};

// A set of node indices as bits.
class NodeSet {
public:
  explicit NodeSet(size_t n = 0) : words_((n + 63) / 64, 0) {}
  void set(int32_t i) { words_[i >> 6] |= uint64_t{1} << (i & 63); }
  bool test(int32_t i) const { return (words_[i >> 6] >> (i & 63)) & 1; }
  void merge(const NodeSet& o) {
    for (size_t w = 0; w < words_.size(); ++w)
      words_[w] |= o.words_[w];
  }
  // The first index in (*this & a & ~b), or -1.
  int32_t first_common_outside(const NodeSet& a, const NodeSet& b) const;

private:
  std::vector<uint64_t> words_;
};

// Everything the legality checks and the cost model read about the graph, computed once.
// --attention and --gemm-chain: auto (the cost model decides between an attention group or a
// GEMM chain and the unfused products), fused (every one that can be one group is one),
// unfused (none).
enum class FusionMode { Auto, Fused, Unfused };

struct FusionContext {
  // `no_fuse` names nodes kept out of every fusion (PlannerOptions::no_fuse); a composite's
  // name covers the nodes it was lowered into ("NAME/..."), which may fuse only with each other.
  FusionContext(const Graph& graph, const DeviceParams& device,
                const std::vector<std::string>& no_fuse = {},
                FusionMode attention = FusionMode::Auto, FusionMode gemm_chain = FusionMode::Auto);

  const Graph& graph;
  DeviceParams device;
  FusionMode attention = FusionMode::Auto;
  FusionMode gemm_chain = FusionMode::Auto;
  std::vector<int32_t> producer;                  // per tensor: the node writing it, or -1
  std::vector<std::vector<int32_t>> consumers;    // per tensor: the nodes reading it
  std::vector<std::vector<int32_t>> preds, succs; // per node: distinct neighbour nodes
  std::vector<NodeSet> descendants, ancestors;    // per node, itself excluded
  std::vector<NodeClass> node_class;
  std::vector<int> no_fuse_unit;  // per node: the --no-fuse entry that names it, or -1
  std::vector<bool> graph_output; // per tensor

  size_t size() const { return graph.nodes.size(); }
  std::string describe(int32_t node) const; // "'name' (Op)"
};

// True when a --no-fuse NAME covers the node: it is NAME, or one of the nodes lowering made
// of the composite NAME ("NAME/ReduceMean", ...).
bool names_node_or_its_parts(const std::string& name, const std::string& node_name);

struct FusionDecision {
  bool legal = true;
  std::string reason; // why not, when refused

  static FusionDecision ok() { return {}; }
  static FusionDecision no(std::string why) { return {false, std::move(why)}; }
  explicit operator bool() const { return legal; }
};

// What a legal group is: everything the cost model and the plan need. `group` is the planned
// group, its spec (group_spec.h) included; the other fields are what the cost model and the
// planners read.
struct GroupAnalysis {
  GroupKind kind = GroupKind::Kernel;
  StitchScheme scheme = StitchScheme::Local;
  std::vector<int32_t> nodes; // topological order
  std::vector<TensorId> inputs, outputs;
  Shape iteration; // Local and Global: the shape the threads cover
  int64_t rows = 0, row_length = 0;
  std::vector<std::vector<int32_t>> parts; // Independent
  int64_t cached_rows = 0;                 // Regional: full-row inputs kept between passes
  int64_t shared_bytes = 0;                // Regional: dynamic shared memory for the cached rows
  int64_t registers = 0;                   // per thread, estimated
  int64_t recomputed = 0;                  // element evaluations of smaller intermediates, repeated
  int epilogue_nodes = 0;                  // GemmLibrary, ConvLibrary: nodes after the call's node
  FusionGroup group;                       // the planned group (mapping, launch, spec), id unset
};

// What a caller may impose on a group instead of legality's own choice (tests exercise each
// mapping this way); legality still checks that the result is sound.
struct AnalysisOverrides {
  std::optional<ThreadMapping> row_mapping; // Regional groups and parts
};

// The product `node` computes, or a refusal saying why it is not a matrix-vector product.
FusionDecision matrix_vector(const Graph& graph, const Node& node, MatrixVector& out);

// Decides whether `nodes` (sorted ascending) can be one group; fills `out` when they can. A
// single node is always a group: its own kernel or library call (single_node_group).
FusionDecision analyze_group(const FusionContext& ctx, const std::vector<int32_t>& nodes,
                             GroupAnalysis& out, const AnalysisOverrides& overrides = {});

// The group of one node alone, as every planner starts from: views become aliases, MatMul/Gemm
// cuBLASLt calls, Conv/ConvTranspose cuDNN calls, any other node one kernel with the mapping
// its shapes call for (legality_single.cpp). An internal error for a node that no group can
// hold (check_code_generation refuses those before planning).
FusionGroup single_node_group(const Graph& graph, int32_t node, const DeviceParams& device);

// The nodes of the attention whose P·V is the MatMul `product` (legality_attention.cpp): the
// softmax and the Casts before it, the logit nodes back to the MatMul of the scores, the Slices,
// Transposes, Views and scalar Muls and Divs Q, Kᵀ and V are read through and a Transpose of
// the output; sorted. Empty when `product` reads no softmax of a product. The planners offer it
// as one candidate group (analyze_group decides whether it is legal). `read_through`, when
// given, gets the nodes on the operands' and the output's ways (the candidate without them is
// worth offering too); `prologues`, when given, Q's, K's and V's prologues, the nodes computing
// each that the kernel could evaluate as it loads it (rotary embedding, say; empty where none:
// the candidate with any of them is worth offering too).
std::vector<int32_t> attention_candidate(const FusionContext& ctx, int32_t product,
                                         std::vector<int32_t>* read_through = nullptr,
                                         std::vector<std::vector<int32_t>>* prologues = nullptr);
// The nodes of the GEMM chain whose second product is `second` (legality_chain.cpp): the
// pointwise nodes back from its A to the first products (one, two of the same X, or the Slices
// of a merged one), those products, and the chain of pointwise nodes after it (each the only
// reader of the last one's result); sorted. Empty when `second` reads no pointwise function of
// a product. `epilogue`, when given, gets the nodes after the second product (the candidate
// without them is worth offering too).
std::vector<int32_t> gemm_chain_candidate(const FusionContext& ctx, int32_t second,
                                          std::vector<int32_t>* epilogue = nullptr);
GroupKind group_kind_of(const Node& node);

namespace legality {
// For a graph with symbolic dims (Graph::symbols): whether `group`, its spec decided, runs over
// every shape in range (legality_symbolic.cpp), its launch then sized for the symbols' maxima
// and covering each run's work (LaunchConfig::work), its spec given the extents that depend on
// the symbols. Always ok for a graph without symbols.
FusionDecision symbolic_support(const Graph& graph, FusionGroup& group, const DeviceParams& device);
// symbolic_support of node `node`'s group alone (check_code_generation asks before planning).
FusionDecision single_node_symbolic_support(const Graph& graph, int32_t node,
                                            const DeviceParams& device);
} // namespace legality

} // namespace stitch
