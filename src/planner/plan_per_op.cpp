// plan_one_kernel_per_op, the single-node group every planner starts from, and the planner
// entry point.
#include "planner/planner.h"

#include <algorithm>

#include "graph/error.h"
#include "planner/movement_mapping.h"
#include "planner/plan_common.h"
#include "planner/reduction_mapping.h"

namespace stitch {

namespace {

// 16-byte vectors when every operand and the result are 4-byte elements and each operand is
// either the full shape or a scalar (no broadcast index math inside a vector).
int pointwise_vector_width(const Graph& g, const Node& node) {
  const Tensor& out = g.tensor(node.outputs[0]);
  if (dtype_size(out.dtype) != 4 || out.elements() < 4) return 1;
  for (TensorId t : node.inputs) {
    if (t == kNoTensor) continue;
    const Tensor& in = g.tensor(t);
    if (in.elements() == 1) continue;
    if (dtype_size(in.dtype) != 4 || in.shape != out.shape) return 1;
  }
  return 4;
}

} // namespace

GroupKind group_kind_of(const Node& node) {
  if (node.op == OpKind::View) return GroupKind::Alias;
  if (node.op == OpKind::MatMul || node.op == OpKind::Gemm) return GroupKind::GemmLibrary;
  if (node.op == OpKind::Conv || node.op == OpKind::ConvTranspose) return GroupKind::ConvLibrary;
  return GroupKind::Kernel;
}

FusionGroup single_node_group(const Graph& g, int32_t n, const DeviceParams& device) {
  const Node& node = g.nodes[n];
  FusionGroup group;
  group.nodes = {n};
  group.kind = group_kind_of(node);
  group.scheme = StitchScheme::Local;
  if (group.kind == GroupKind::Kernel) {
    const Tensor& out = g.tensor(node.outputs[0]);
    bool pointwise = !op_device_function(node.op).empty() || node.op == OpKind::Cast ||
                     node.op == OpKind::CastLike;
    int vec = pointwise ? pointwise_vector_width(g, node) : 1;
    group.mapping = ThreadMapping::Flat;
    group.launch = flat_launch(out.elements(), vec, device);
    OpCategory category = op_category(node.op);
    if (category == OpCategory::Reduction) plan_reduction_launch(g, node, device, group);
    if (category == OpCategory::Movement || category == OpCategory::Opaque)
      plan_movement_launch(g, node, device, group);
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

FusionPlan plan_one_kernel_per_op(const Graph& g, const DeviceParams& device) {
  FusionPlan plan;
  plan.planner = "none";
  for (size_t n = 0; n < g.nodes.size(); ++n) {
    FusionGroup group = single_node_group(g, static_cast<int32_t>(n), device);
    group.id = static_cast<int>(plan.groups.size());
    plan.groups.push_back(std::move(group));
  }
  return plan;
}

FusionPlan plan_fusion(const Graph& graph, const PlannerOptions& options) {
  FusionPlan plan;
  if (options.planner == "none") {
    plan = plan_one_kernel_per_op(graph, options.device);
  } else if (options.planner == "greedy") {
    plan = plan_greedy(graph, options);
  } else if (options.planner == "ilp") {
    plan = plan_ilp(graph, options);
  } else {
    user_fail({}, "unknown planner '{}' (planners: none, greedy, ilp)", options.planner);
  }
  compare_with_other_planners(graph, options, plan);
  return plan;
}

} // namespace stitch
