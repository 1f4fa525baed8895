// The group of one node alone (legality.h): every planner's starting point, and the whole plan
// of `--planner none`. Views become aliases, MatMul/Gemm cuBLASLt calls, Conv/ConvTranspose
// cuDNN calls, and any other node one kernel of its op's single-op emitter, with the mapping
// and launch its shapes call for.
#include "graph/error.h"
#include "graph/reductions.h"
#include "planner/legality_internal.h"
#include "planner/movement_mapping.h"
#include "planner/reduction_mapping.h"

namespace stitch {

namespace {

// 16-byte vectors by the fused Local rule (legality::vector_width_for): every operand is the
// result's shape or a scalar, all of one element size.
int pointwise_vector_width(const Graph& g, const Node& node) {
  std::vector<TensorId> operands = value_operands(node);
  std::erase(operands, kNoTensor);
  const Tensor& out = g.tensor(node.outputs[0]);
  return legality::vector_width_for(g, operands, {node.outputs[0]}, out.shape);
}

// The reductions whose kernels walk a ReductionSpace (the composites are lowered first).
bool reduction_space_of_op(OpKind op) {
  return reduction_rule(op) != nullptr || op == OpKind::ArgMax || op == OpKind::ArgMin ||
         op == OpKind::CumSum;
}

} // namespace

GroupKind group_kind_of(const Node& node) {
  if (node.op == OpKind::View) return GroupKind::Alias;
  if (node.op == OpKind::MatMul || node.op == OpKind::Gemm) return GroupKind::GemmLibrary;
  if (node.op == OpKind::Conv || node.op == OpKind::ConvTranspose) return GroupKind::ConvLibrary;
  return GroupKind::Kernel;
}

namespace {

FusionGroup build_single_node_group(const Graph& g, int32_t n, const DeviceParams& device) {
  const Node& node = g.nodes[n];
  FusionGroup group;
  group.nodes = {n};
  group.kind = group_kind_of(node);
  group.scheme = StitchScheme::Local;
  switch (group.kind) {
  case GroupKind::Alias:
    group.spec = AliasSpec{};
    break;
  case GroupKind::Attention: // two products and a softmax: never one node
    internal_fail("node '{}' ({}) is no attention by itself", node.name, op_name(node.op));
  case GroupKind::GemmChain: // two products: never one node
    internal_fail("node '{}' ({}) is no GEMM chain by itself", node.name, op_name(node.op));
  case GroupKind::GemmLibrary: {
    GemmSpec spec;
    if (FusionDecision d = legality::gemm_spec(g, {n}, device, spec); !d)
      internal_fail("node '{}' ({}) reached planning without a library call: {}", node.name,
                    op_name(node.op), d.reason);
    group.spec = std::move(spec);
    break;
  }
  case GroupKind::ConvLibrary: {
    ConvSpec spec;
    if (FusionDecision d = legality::conv_spec(g, {n}, device, spec); !d)
      internal_fail("node '{}' ({}) reached planning without a library call: {}", node.name,
                    op_name(node.op), d.reason);
    group.scratch_bytes = spec.scratch_bytes();
    group.spec = std::move(spec);
    break;
  }
  case GroupKind::Kernel: {
    const Tensor& out = g.tensor(node.outputs[0]);
    const int vec = op_is_pointwise(node.op) ? pointwise_vector_width(g, node) : 1;
    group.mapping = ThreadMapping::Flat;
    group.launch = flat_launch(out.elements(), vec, device);
    const OpCategory category = op_category(node.op);
    if (category == OpCategory::Reduction) plan_reduction_launch(g, node, device, group);
    if (category == OpCategory::Movement || category == OpCategory::Opaque)
      plan_movement_launch(g, node, device, group);
    OpSpec spec;
    spec.node = n;
    if (category == OpCategory::Reduction && reduction_space_of_op(node.op))
      spec.reduction = reduction_space(g, node);
    if (node.op == OpKind::Transpose || node.op == OpKind::DepthToSpace ||
        node.op == OpKind::SpaceToDepth) {
      spec.permutation = node_permutation(g, node);
      spec.tiling = transpose_tiling(*spec.permutation);
    }
    if (node.op == OpKind::TopK) spec.topk = topk_plan(g, node);
    if (node.op == OpKind::ScatterND) spec.scatter_distinct = scatter_rows_distinct(g, node);
    if (node.op == OpKind::MaxPool || node.op == OpKind::AveragePool)
      spec.window = legality::window_geometry(g, node);
    if (node.op == OpKind::MaxPool && node.outputs.size() > 1 && node.outputs[1] != kNoTensor) {
      const TensorId indices = node.outputs[1];
      spec.write_indices = g.is_graph_output(indices);
      for (const Node& reader : g.nodes)
        for (TensorId t : reader.inputs)
          spec.write_indices = spec.write_indices || t == indices;
    }
    group.spec = std::move(spec);
    break;
  }
  }
  for (TensorId t : node.inputs)
    if (t != kNoTensor &&
        std::find(group.inputs.begin(), group.inputs.end(), t) == group.inputs.end())
      group.inputs.push_back(t);
  for (TensorId t : node.outputs)
    if (t != kNoTensor) group.outputs.push_back(t);
  if (group.kind != GroupKind::Alias) {
    for (TensorId t : node.inputs)
      if (t != kNoTensor) group.estimated_bytes += g.tensor(t).bytes();
    for (TensorId t : node.outputs)
      if (t != kNoTensor) group.estimated_bytes += g.tensor(t).bytes();
  }
  return group;
}

} // namespace

FusionGroup single_node_group(const Graph& g, int32_t n, const DeviceParams& device) {
  FusionGroup group = build_single_node_group(g, n, device);
  if (FusionDecision d = legality::symbolic_support(g, group, device); !d)
    internal_fail("node '{}' ({}) reached planning but cannot run over symbolic dims: {}",
                  g.nodes[n].name, op_name(g.nodes[n].op), d.reason);
  return group;
}

FusionDecision legality::single_node_symbolic_support(const Graph& g, int32_t n,
                                                      const DeviceParams& device) {
  FusionGroup group = build_single_node_group(g, n, device);
  return symbolic_support(g, group, device);
}

} // namespace stitch
