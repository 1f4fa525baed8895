// Local groups around one window op (kernel_fused_window.cpp prints them): pointwise producers
// of its data, evaluated again at every tap (their values never leave the kernel), the window
// op (a float32 MaxPool, AveragePool or depthwise Conv), and pointwise consumers of its result
// evaluated per output element. The iteration space is the window op's output. Also the
// window's geometry, which the single-op pooling kernels print too.
#include "graph/infer_context.h"
#include "graph/op_params.h"
#include "planner/launch_config.h"
#include "planner/legality_internal.h"

namespace stitch::legality {

WindowGeometry window_geometry(const Graph& g, const Node& node) {
  NodeContext attrs(g, node);
  const Shape& x = g.tensor(node.inputs[0]).shape;
  const Shape& y = g.tensor(node.outputs[0]).shape;
  std::vector<int64_t> kernel;
  if (node.op == OpKind::Conv && !attrs.has_attr("kernel_shape")) {
    const Shape& filter = g.tensor(node.inputs[1]).shape;
    kernel.assign(filter.begin() + 2, filter.end());
  } else {
    kernel = attrs.req_ints("kernel_shape");
  }
  const WindowParams params = read_window_params(attrs, kernel);
  WindowGeometry w;
  w.in.assign(x.begin() + 2, x.end());
  w.out.assign(y.begin() + 2, y.end());
  w.kernel = params.kernel;
  w.strides = params.strides;
  w.dilations = params.dilations;
  for (size_t i = 0; i < w.in.size(); ++i) {
    const AxisPads pads = window_pads(params, i, w.in[i], w.out[i]);
    w.pad_begin.push_back(pads.begin);
    w.pad_end.push_back(pads.end);
  }
  const SymShape x_dims = g.tensor(node.inputs[0]).sym_shape();
  const SymShape y_dims = g.tensor(node.outputs[0]).sym_shape();
  if (!is_static(SymShape(x_dims.begin() + 2, x_dims.end())) ||
      !is_static(SymShape(y_dims.begin() + 2, y_dims.end()))) {
    w.in_dims.assign(x_dims.begin() + 2, x_dims.end());
    w.out_dims.assign(y_dims.begin() + 2, y_dims.end());
    const SymbolRanges ranges = g.symbol_ranges();
    for (size_t i = 0; i < w.in.size(); ++i) {
      const SymAxisPads pads = window_pads(params, i, w.in_dims[i], w.out_dims[i], ranges);
      w.pad_begin_dims.push_back(pads.begin);
      w.pad_end_dims.push_back(pads.end);
    }
  }
  return w;
}

FusionDecision analyze_window(const FusionContext& ctx, GroupAnalysis& a) {
  const Graph& g = ctx.graph;
  int32_t window = -1;
  for (int32_t n : a.nodes) {
    NodeClass c = ctx.node_class[n];
    if (c == NodeClass::Pointwise) continue;
    if (c != NodeClass::Window)
      return FusionDecision::no(fmt::format("{} {}; a window op's group holds only pointwise "
                                            "ops besides it",
                                            ctx.describe(n), class_sentence(c)));
    if (window >= 0)
      return FusionDecision::no(fmt::format("{} and {} are two window ops in one group",
                                            ctx.describe(window), ctx.describe(n)));
    window = n;
  }
  const Node& w = g.nodes[window];
  const Shape& in = g.tensor(w.inputs[0]).shape;
  a.iteration = g.tensor(w.outputs[0]).shape;
  const int64_t elements = shape_elements(a.iteration);
  WindowSpec spec;
  spec.window = window;
  spec.geometry = window_geometry(g, w);
  const int64_t taps = spec.geometry.taps();
  for (size_t i = 1; i < w.inputs.size(); ++i)
    if (w.inputs[i] != kNoTensor && contains(a.nodes, ctx.producer[w.inputs[i]]))
      return FusionDecision::no(fmt::format("{} reads its input {} from inside the group; only "
                                            "its data may come from there",
                                            ctx.describe(window), i));
  for (int32_t n : a.nodes) {
    if (n == window) continue;
    const Tensor& r = g.tensor(g.nodes[n].outputs[0]);
    if (ctx.ancestors[window].test(n)) {
      // A producer: recomputed at each tap, so nothing after the window may read it.
      for (TensorId t : g.nodes[n].outputs) {
        if (t == kNoTensor) continue;
        bool inside = !ctx.graph_output[t];
        for (int32_t c : ctx.consumers[t])
          inside = inside && contains(a.nodes, c) &&
                   (c == window ? g.nodes[c].inputs[0] == t : ctx.ancestors[window].test(c));
        if (!inside)
          return FusionDecision::no(fmt::format(
              "{}'s result '{}' is read besides the window's data; the group recomputes it at "
              "every tap and never writes it",
              ctx.describe(n), g.tensor(t).name));
      }
      if (!broadcasts_to(r.shape, in))
        return FusionDecision::no(fmt::format("{}'s result {} does not broadcast to the window's "
                                              "input {}",
                                              ctx.describe(n), shape_str(r.shape), shape_str(in)));
      a.recomputed += std::max<int64_t>(0, elements * taps - r.elements());
      spec.producers.push_back(n);
    } else if (ctx.descendants[window].test(n)) {
      if (!broadcasts_to(r.shape, a.iteration))
        return FusionDecision::no(fmt::format("{}'s result {} does not broadcast to the window's "
                                              "output {}",
                                              ctx.describe(n), shape_str(r.shape),
                                              shape_str(a.iteration)));
      a.recomputed += elements - r.elements();
      spec.consumers.push_back(n);
    } else {
      return FusionDecision::no(fmt::format("{} is neither a producer nor a consumer of {}",
                                            ctx.describe(n), ctx.describe(window)));
    }
  }
  for (TensorId t : a.outputs)
    if (g.tensor(t).shape != a.iteration)
      return FusionDecision::no(fmt::format("the group writes '{}' {}, not of the window's output "
                                            "shape {}",
                                            g.tensor(t).name, shape_str(g.tensor(t).shape),
                                            shape_str(a.iteration)));
  a.registers = kBaseRegisters + kRegistersPerNode * static_cast<int64_t>(a.nodes.size());
  if (FusionDecision d = fits_registers(ctx, a); !d) return d;

  switch (w.op) {
  case OpKind::MaxPool:
    spec.fold = WindowFold::Max;
    break;
  case OpKind::AveragePool:
    spec.fold = WindowFold::Average;
    spec.count_include_pad = NodeContext(g, w).attr_flag("count_include_pad", false);
    break;
  default:
    spec.fold = WindowFold::Depthwise;
    spec.filter = w.inputs[1];
    if (w.inputs.size() > 2) spec.bias = w.inputs[2];
    spec.channels = in[1];
    break;
  }
  spec.io = kernel_interface(ctx, a.nodes, a.inputs, a.outputs);
  a.kind = GroupKind::Kernel;
  a.scheme = StitchScheme::Local;
  a.group.mapping = ThreadMapping::Flat;
  a.group.launch = flat_launch(elements, 1, ctx.device);
  a.group.spec = std::move(spec);
  return FusionDecision::ok();
}

} // namespace stitch::legality
