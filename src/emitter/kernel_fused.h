// Fused kernels: one kernel for a group of several nodes, printed from the group's spec
// (planner/group_spec.h), which legality filled; one writer per spec kind:
//
//   kernel_fused.cpp              dispatch, the kernel signature, values of pointwise chains,
//                                 and LocalSpec (a flat grid-stride loop evaluating the chain per
//                                 element in registers, 16-byte vectors where the spec says)
//   kernel_fused_remapped.cpp     LocalSpec with movement nodes: values evaluated at the
//                                 coordinates their consumers remap them to
//   kernel_fused_regional.cpp     RegionalSpec: rows x row_length, a thread, warp or block per
//                                 row, row reductions with their pointwise producers and
//                                 consumers, the row read once from memory
//   kernel_fused_independent.cpp  IndependentSpec: unrelated parts, each on its own blocks
//   kernel_fused_global.cpp       ColumnSpec: a column reduction, a grid-wide barrier, consumers
//   kernel_fused_gemv.cpp         RowGemvSpec: row ops, a grid-wide barrier, the one-row matrix
//                                 product their per-row values feed, its consumers
//   kernel_fused_window.cpp       WindowSpec: producers per tap, consumers per output element
//   kernel_attention.cpp          AttentionSpec: softmax(logits(Q Kᵀ)) V, one pass over the keys
//   kernel_gemm_chain.cpp         GemmChainSpec: GEMM, pointwise, GEMM in thread-block clusters
//
// A writer prints what its spec says and decides nothing about the group's structure; a spec
// it cannot print is an internal error (GroupEmitContext::spec_error). A body writer gets a
// `BlockRange` instead of using blockIdx.x and gridDim.x directly, so that an Independent kernel
// can run several bodies side by side on disjoint ranges of blocks. Every value is named by
// stitchc (in3, x3, t5, r2, acc1); model names appear only in comments.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "emitter/emit_context.h"

namespace stitch {

// Writes the group's kernel and launch function when its spec is a fused kind; false for
// single-op, library and alias groups, which the other emitters handle.
bool emit_fused(const GroupEmitContext& ctx, CodeWriter& out);

// The kernel's parameters for a KernelInterface: one pointer per tensor read (`in0`, `in1`,
// ...) and per tensor written (`out0`, ...), in its order, and the literals.
struct FusedSignature {
  std::map<TensorId, std::string> inputs;   // tensor -> parameter name
  std::map<TensorId, std::string> outputs;  // tensor -> parameter name
  std::map<TensorId, std::string> literals; // scalar float constants -> literal
  std::vector<std::string> params;          // "const float* __restrict__ in0"
  std::vector<std::string> args;            // the pointer expressions the launch passes
  std::vector<std::string> legend;          // "in0: 'x' float32[4,8]" (comment lines)
};
FusedSignature fused_signature(const GroupEmitContext& ctx, const KernelInterface& io);
// The parameter name of `t` in `sig` (an input's or an output's); a spec error naming `what`
// when the interface lacks it.
std::string interface_name(const GroupEmitContext& ctx, const FusedSignature& sig, TensorId t,
                           const std::string& what);
// The parameter names in the kernel's order (reads, then writes): a problem struct's members.
std::vector<std::string> interface_members(const FusedSignature& sig, const KernelInterface& io);

// The names in the source of a group whose kernel is a runtime template over a problem struct
// (an attention, a GEMM chain): the kernel `stitch_g<id>_<what>`, its tile configuration
// `stitch_g<id>_tiles`, both ending with the variant's suffix (GroupEmitContext::variant_suffix)
// where the group has variants, and its problem `stitch_g<id>_problem`, one for every variant.
struct TemplateKernelNames {
  std::string kernel, tiles, problem;
};
TemplateKernelNames template_kernel_names(const GroupEmitContext& ctx, std::string_view what);

// The value of `t`, a literal or an input of `sig`, at its numpy-broadcast index into `against`
// (element `linear`, coordinates `coordinate`0, 1, ...): the literal itself, or a load into a
// `const T xN` named after the input's parameter. An internal error for a tensor that is
// neither (the spec's interface lacks it). `against_dims`: the iteration's dims over the
// symbols, for a kernel over symbolic dims (tensor_index); null: `against` itself.
std::string load_broadcast(const GroupEmitContext& ctx, const FusedSignature& sig, TensorId t,
                           const Shape& against, CodeWriter& out, const std::string& linear = "i",
                           const std::string& coordinate = "c",
                           const SymShape* against_dims = nullptr);

// The blocks a body runs on: `index` of this block within the range, `count` blocks in it.
struct BlockRange {
  std::string index = "blockIdx.x";
  std::string count = "gridDim.x";
};

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

// A LocalSpec's body: the flat grid-stride loop over its iteration shape, reading and writing
// through `sig`'s names.
void emit_local_body(const GroupEmitContext& ctx, const FusedSignature& sig, const LocalSpec& spec,
                     const BlockRange& blocks, CodeWriter& out);

// A LocalSpec's body when it holds movement nodes (kernel_fused_remapped.cpp): the flat loop,
// each value evaluated at the coordinates its consumers read it at.
void emit_remapped_local_body(const GroupEmitContext& ctx, const FusedSignature& sig,
                              const LocalSpec& spec, const BlockRange& blocks, CodeWriter& out);

// The value of `t`, computed by `nodes` (pointwise, and index remappings with their `moves`) from
// `sig`'s inputs, at coordinates `at` (one expression per axis of t), each value named once per
// coordinates as emit_remapped_local_body evaluates it (an attention's operand prologue).
std::string emit_remapped_value(const GroupEmitContext& ctx, const FusedSignature& sig,
                                const std::vector<int32_t>& nodes,
                                const std::vector<MovementRead>& moves, TensorId t,
                                const std::vector<std::string>& at, CodeWriter& out);

// A RegionalSpec's body: the loop over rows with the spec's mapping, its passes, its outputs;
// reading and writing through `sig`'s names (a RowGemvSpec's head writes its vector to scratch
// this way).
void emit_regional_body(const GroupEmitContext& ctx, const FusedSignature& sig,
                        const RegionalSpec& spec, const BlockRange& blocks, CodeWriter& out);
// One line saying how a RegionalSpec runs: "128 rows of 64 elements, a warp per row, 2 passes;
// the row inputs are kept in registers between passes."
std::string regional_summary(const RegionalSpec& spec);

// The spec writers: kernel and launch function of the whole group.
void emit_fused_regional(const GroupEmitContext& ctx, CodeWriter& out);
void emit_fused_independent(const GroupEmitContext& ctx, CodeWriter& out);
void emit_fused_global(const GroupEmitContext& ctx, CodeWriter& out);
void emit_fused_window(const GroupEmitContext& ctx, CodeWriter& out);
void emit_fused_row_gemv(const GroupEmitContext& ctx, CodeWriter& out);
void emit_attention(const GroupEmitContext& ctx, CodeWriter& out);
void emit_gemm_chain(const GroupEmitContext& ctx, CodeWriter& out);

// The name of the group's fused kernel: "stitch_g3_regional".
std::string fused_kernel_name(const GroupEmitContext& ctx);
// The opening comments of a fused kernel: what it does, each node, each parameter.
void fused_kernel_banner(const GroupEmitContext& ctx, const FusedSignature& sig,
                         const std::vector<int32_t>& nodes, const std::string& summary,
                         CodeWriter& out);

} // namespace stitch
