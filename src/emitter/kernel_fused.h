// Fused kernels: one kernel for a group of several nodes, following the group's stitching
// scheme (planner/fusion_plan.h holds the contract). One writer per scheme:
//
//   kernel_fused.cpp              dispatch, the kernel signature, values of pointwise chains,
//                                 and Local (a flat grid-stride loop evaluating the chain per
//                                 element in registers, 16-byte vectors where the plan says)
//   kernel_fused_regional.cpp     Regional: rows x row_length, a thread, warp or block per row,
//                                 row reductions with their pointwise producers and
//                                 consumers, the row read once from memory
//   kernel_fused_independent.cpp  Independent: unrelated parts, each on its own blocks
//   kernel_fused_global.cpp       Global: a column reduction, a grid-wide barrier, consumers
//   kernel_fused_gemv.cpp         Global: row ops, a grid-wide barrier, the one-row matrix
//                                 product their per-row values feed, its consumers
//   kernel_fused_window.cpp       Local around a window op: producers per tap, consumers per
//                                 output element
//
// A body writer gets a `BlockRange` instead of using blockIdx.x and gridDim.x directly, so
// that an Independent kernel can run several bodies side by side on disjoint ranges of blocks.
// Every value is named by stitchc (in3, x3, t5, r2, acc1); model names appear only in comments.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "emitter/emit_context.h"

namespace stitch {

// Writes the group's kernel and launch function when the group is fused (several nodes, or
// Independent parts); false for a single-node group, which the single-op emitters handle.
bool emit_fused(const GroupEmitContext& ctx, CodeWriter& out);

// A fused group refuses what it cannot implement with a user error naming the group, the
// scheme and the reason ("unsupported in code generation: fused group 3 (Regional): ...").
[[noreturn]] void refuse_fused(const GroupEmitContext& ctx, const std::string& reason);

// The kernel's parameters: one pointer per tensor read from memory (`in0`, `in1`, ...) and
// per tensor written (`out0`, ...), in the order of the group's inputs and outputs. Tensors a
// node reads that no node of the group produces count as read from memory even when the plan
// did not list them (constants); scalar float constants become literals instead.
struct FusedSignature {
  std::map<TensorId, std::string> inputs;   // tensor -> parameter name
  std::map<TensorId, std::string> outputs;  // tensor -> parameter name
  std::map<TensorId, std::string> literals; // scalar float constants -> literal
  std::vector<std::string> params;          // "const float* __restrict__ in0"
  std::vector<std::string> args;            // the pointer expressions the launch passes
  std::vector<std::string> legend;          // "in0: 'x' float32[4,8]" (comment lines)
};
FusedSignature fused_signature(const GroupEmitContext& ctx, const std::vector<int32_t>& nodes);

// The blocks a body runs on: `index` of this block within the range, `count` blocks in it.
struct BlockRange {
  std::string index = "blockIdx.x";
  std::string count = "gridDim.x";
};

// The inputs a node of a fused group reads as values: a pointwise node's operands, a row op's
// data (and scale and bias), not its axes; never kNoTensor.
std::vector<TensorId> fused_value_inputs(const Node& node);

// The tensors produced by `nodes` (indices into Graph::nodes).
std::vector<bool> produced_by(const Graph& graph, const std::vector<int32_t>& nodes);

// The values of one scope of generated code (a loop body, a vector lane), each defined once
// as `const T tN = ...;` when first asked for, after the values it depends on. Tensors
// produced by a pointwise node of `nodes` are computed here; any other tensor is a leaf, whose
// expression `leaf(t)` gives (a load, a value of an outer scope, a literal; it may write
// statements of its own and ask this scope for other values).
class ValueScope {
public:
  using Leaf = std::function<std::string(TensorId)>;
  ValueScope(const GroupEmitContext& ctx, const std::vector<int32_t>& nodes, CodeWriter& out,
             Leaf leaf);
  std::string value(TensorId t);
  CodeWriter& writer() { return out_; }
  // A fresh name "prefixN" unique within this scope.
  std::string fresh(const std::string& prefix) { return fmt::format("{}{}", prefix, next_++); }

private:
  const GroupEmitContext& ctx_;
  std::map<TensorId, int32_t> pointwise_producer_; // tensor -> node index
  CodeWriter& out_;
  Leaf leaf_;
  std::map<TensorId, std::string> defined_;
  int next_ = 0;
};

// A Local body over `nodes`: the flat grid-stride loop over the shape of their outputs.
void emit_local_body(const GroupEmitContext& ctx, const FusedSignature& sig,
                     const std::vector<int32_t>& nodes, const BlockRange& blocks, CodeWriter& out);

// A Regional body over `nodes` in rows of `row_length` (`rows` of them) with the group's
// mapping and launch.
void emit_regional_body(const GroupEmitContext& ctx, const FusedSignature& sig,
                        const std::vector<int32_t>& nodes, int64_t rows, int64_t row_length,
                        const BlockRange& blocks, CodeWriter& out);

// The scheme writers: kernel and launch function of the whole group.
void emit_fused_regional(const GroupEmitContext& ctx, CodeWriter& out);
void emit_fused_independent(const GroupEmitContext& ctx, CodeWriter& out);
void emit_fused_global(const GroupEmitContext& ctx, CodeWriter& out);
// Local around one window op (MaxPool, AveragePool, depthwise Conv): kernel_fused_window.cpp.
void emit_fused_window(const GroupEmitContext& ctx, CodeWriter& out);
bool has_window_op(const Graph& graph, const std::vector<int32_t>& nodes);
// Global around a one-row MatMul/Gemm after row ops: kernel_fused_gemv.cpp.
void emit_fused_row_gemv(const GroupEmitContext& ctx, CodeWriter& out);
bool has_matrix_product(const Graph& graph, const std::vector<int32_t>& nodes);

// The name of the group's fused kernel: "stitch_g3_regional".
std::string fused_kernel_name(const GroupEmitContext& ctx);
// The opening comments of a fused kernel: what it does, each node, each parameter.
void fused_kernel_banner(const GroupEmitContext& ctx, const FusedSignature& sig,
                         const std::vector<int32_t>& nodes, const std::string& summary,
                         CodeWriter& out);

} // namespace stitch
