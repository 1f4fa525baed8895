// check_code_generation: the node-level limits of code generation (code_generation_support.h),
// in one place, ahead of planning.
#include "planner/code_generation_support.h"

#include <algorithm>
#include <map>

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
    if (FusionDecision d = legality::conv_spec(g, {static_cast<int32_t>(&node - g.nodes.data())},
                                               DeviceParams{}, spec);
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

// Over symbolic dims, each node must run alone for every shape in range (the planners fuse it
// only where that holds too). The first node that cannot is refused with its reason, and the
// message counts the others by op, so that one message tells how far the model is.
void refuse_symbolic_nodes(const Graph& graph) {
  if (graph.symbols.empty()) return;
  const Node* first = nullptr;
  std::string reason;
  std::map<std::string, int> others; // op -> nodes after the first that cannot run
  for (size_t n = 0; n < graph.nodes.size(); ++n) {
    const Node& node = graph.nodes[n];
    const FusionDecision d =
        legality::single_node_symbolic_support(graph, static_cast<int32_t>(n), DeviceParams{});
    if (d) continue;
    if (first == nullptr) {
      first = &node;
      reason = d.reason;
    } else {
      ++others[std::string(op_name(node.op))];
    }
  }
  // An output holding values computed from the symbols (a Shape or Size of a symbolic input):
  // its planning bytes in the weights would be wrong at every other shape.
  for (TensorId out : graph.outputs) {
    TensorId root = out;
    while (graph.tensor(root).view_of != kNoTensor)
      root = graph.tensor(root).view_of;
    for (TensorId t : {out, root}) {
      const Tensor& x = graph.tensor(t);
      if (x.has_symbolic_values())
        user_fail({graph.source_file, "", ""},
                  "graph output '{}' holds {}, values computed from the symbolic dims: a library "
                  "over symbolic dims cannot return them yet; bind each dim with --dim "
                  "NAME=VALUE",
                  graph.tensor(out).name, sym_shape_to_string(x.sym_values));
    }
  }
  if (first == nullptr) return;
  std::vector<std::string> symbols;
  for (const SymbolicDim& s : graph.symbols)
    symbols.push_back(fmt::format("{} ({}..{})", s.name, s.min, s.max));
  std::string rest;
  if (!others.empty()) {
    int count = 0;
    std::vector<std::string> ops;
    for (const auto& [op, n] : others) {
      count += n;
      ops.push_back(fmt::format("{} {}", n, op));
    }
    rest = fmt::format(" ({} more node{} cannot either: {})", count, count == 1 ? "" : "s",
                       fmt::join(ops, ", "));
  }
  throw UserError(node_error_site(graph, *first),
                  fmt::format("cannot generate code over the symbolic dims {} here: {}{}. Over "
                              "symbolic dims stitchc generates pointwise ops, row reductions, "
                              "normalizations of fixed rows, attention, matrix products and "
                              "convolutions (over symbolic images and spatial extents) through "
                              "the libraries, pooling windows and depthwise convolutions, "
                              "Gathers, "
                              "GatherElements, Transposes, Slices, Concats, Ranges, Trilus, "
                              "fills, views, Einsums, TopK over "
                              "symbolic rows, Pads, Resizes, DepthToSpace, SpaceToDepth, and "
                              "Tiles so far; bind each dim with "
                              "--dim NAME=VALUE",
                              fmt::join(symbols, ", "), reason, rest));
}

} // namespace

void check_code_generation(const Graph& graph) {
  for (const Node& node : graph.nodes) {
    const std::string why = refusal(graph, node);
    if (!why.empty())
      throw UserError(node_error_site(graph, node), "unsupported in code generation: " + why);
  }
  refuse_symbolic_nodes(graph);
}

} // namespace stitch
