// check_code_generation: the node-level limits of code generation (code_generation_support.h),
// in one place, ahead of planning.
#include "planner/code_generation_support.h"

#include <fmt/format.h>

#include "graph/error.h"
#include "graph/infer_context.h"
#include "planner/launch_config.h"
#include "planner/legality_internal.h"

namespace stitch {

namespace {

// The ops whose only form is a composite that lower-composites rewrites, and the ops constant
// folding always removes: no kernel generates them.
bool has_kernel(OpKind op) {
  switch (op) {
  case OpKind::Softmax:
  case OpKind::LogSoftmax:
  case OpKind::LayerNormalization:
  case OpKind::InstanceNormalization:
  case OpKind::GroupNormalization:
  case OpKind::RMSNormalization:
  case OpKind::RotaryEmbedding:
  case OpKind::Attention:
  case OpKind::BatchNormalization:
  case OpKind::Shape:
  case OpKind::Size:
  case OpKind::Constant:
    return false;
  default:
    return true;
  }
}

bool resize_coordinates_supported(const std::string& mode) {
  for (const char* known : {"half_pixel", "pytorch_half_pixel", "align_corners", "asymmetric",
                            "tf_crop_and_resize", "half_pixel_symmetric"})
    if (mode == known) return true;
  return false;
}

bool resize_nearest_supported(const std::string& mode) {
  for (const char* known : {"round_prefer_floor", "round_prefer_ceil", "floor", "ceil"})
    if (mode == known) return true;
  return false;
}

// Why `node` cannot be generated, or "" when it can.
std::string refusal(const Graph& g, const Node& node) {
  if (node.op == OpKind::View) return ""; // an alias: no code
  if (!has_kernel(node.op)) return fmt::format("no kernel for op {} yet", op_name(node.op));
  NodeContext nc(g, node);
  switch (node.op) {
  case OpKind::MatMul:
  case OpKind::Gemm: {
    GemmSpec spec;
    if (FusionDecision d = legality::gemm_spec(g, {static_cast<int32_t>(&node - g.nodes.data())},
                                               DeviceParams{}, spec);
        !d)
      return d.reason;
    return "";
  }
  case OpKind::Conv:
  case OpKind::ConvTranspose: {
    ConvSpec spec;
    if (FusionDecision d =
            legality::conv_spec(g, {static_cast<int32_t>(&node - g.nodes.data())}, spec);
        !d)
      return d.reason;
    return "";
  }
  case OpKind::AveragePool:
    if (!dtype_is_float(g.tensor(node.inputs[0]).dtype))
      return fmt::format("AveragePool on {}", dtype_name(g.tensor(node.inputs[0]).dtype));
    return "";
  case OpKind::TopK:
    if (node.outputs.size() < 2 || node.outputs[0] == kNoTensor || node.outputs[1] == kNoTensor)
      return "TopK without both its values and indices outputs";
    return "";
  case OpKind::Resize: {
    if (nc.opset() < 11) return ""; // opset 10 resizes as Upsample did
    const std::string coordinates = nc.attr_string("coordinate_transformation_mode", "half_pixel");
    if (!resize_coordinates_supported(coordinates))
      return fmt::format("Resize coordinate_transformation_mode \"{}\"", coordinates);
    const std::string nearest = nc.attr_string("nearest_mode", "round_prefer_floor");
    if (!resize_nearest_supported(nearest))
      return fmt::format("Resize nearest_mode \"{}\"", nearest);
    if (coordinates == "tf_crop_and_resize") {
      if (!nc.has_input(1) || nc.input(1).elements() == 0)
        return "Resize tf_crop_and_resize without a roi input";
      int64_t axes = nc.rank(0);
      if (nc.opset() >= 18 && nc.has_attr("axes"))
        axes = static_cast<int64_t>(nc.attr_ints("axes").size());
      if (nc.input(1).elements() != 2 * axes)
        return fmt::format("Resize roi with {} values for {} axes", nc.input(1).elements(), axes);
    }
    return "";
  }
  default:
    return "";
  }
}

// The passes keep a graph's symbolic dims (derive_dims after each), but the planner and the
// emitter take shapes as numbers: a graph that keeps symbolic dims stops after the passes
// (--print-after shows its shapes). Planning checks it too (plan_fusion), for every caller.
void refuse_symbolic_graph(const Graph& graph) {
  if (graph.symbols.empty()) return;
  std::vector<std::string> symbols;
  for (const SymbolicDim& d : graph.symbols)
    symbols.push_back(fmt::format("{} ({}..{})", d.name, d.min, d.max));
  user_fail({graph.source_file, "", ""},
            "the model keeps the symbolic dims {}: stitchc infers its shapes over them and its "
            "graph passes keep them (see --print-after all), but does not yet plan and "
            "generate code for a range of shapes; bind each with --dim NAME=VALUE",
            fmt::join(symbols, ", "));
}

} // namespace

void check_code_generation(const Graph& graph) {
  refuse_symbolic_graph(graph);
  for (const Node& node : graph.nodes) {
    const std::string why = refusal(graph, node);
    if (!why.empty())
      throw UserError(node_error_site(graph, node), "unsupported in code generation: " + why);
  }
}

} // namespace stitch
