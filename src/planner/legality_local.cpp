// Local groups (kernel_fused.cpp prints them): pointwise nodes over one iteration shape, the
// shape of every output. Each element evaluates the chain in registers, reading each input at
// its broadcast index; a smaller intermediate is evaluated again for every element it feeds
// (GroupAnalysis::recomputed, which the cost model charges).
#include "planner/launch_config.h"
#include "planner/legality_internal.h"

namespace stitch::legality {

FusionDecision analyze_local(const FusionContext& ctx, GroupAnalysis& a) {
  const Graph& g = ctx.graph;
  for (int32_t n : a.nodes)
    if (ctx.node_class[n] != NodeClass::Pointwise)
      return FusionDecision::no(fmt::format("{} is not pointwise", ctx.describe(n)));
  if (a.outputs.empty())
    return FusionDecision::no("the group writes nothing"); // a dead set: nothing reads it
  a.iteration = g.tensor(a.outputs[0]).shape;
  for (TensorId t : a.outputs)
    if (g.tensor(t).shape != a.iteration)
      return FusionDecision::no(fmt::format(
          "the group writes results of different shapes, {} ('{}') and {} ('{}'): no single "
          "iteration space",
          shape_str(a.iteration), g.tensor(a.outputs[0]).name, shape_str(g.tensor(t).shape),
          g.tensor(t).name));
  const int64_t elements = shape_elements(a.iteration);
  for (int32_t n : a.nodes) {
    const Tensor& r = g.tensor(g.nodes[n].outputs[0]);
    if (!broadcasts_to(r.shape, a.iteration))
      return FusionDecision::no(fmt::format("{}'s result {} does not broadcast to the iteration "
                                            "shape {}",
                                            ctx.describe(n), shape_str(r.shape),
                                            shape_str(a.iteration)));
    for (TensorId t : present_operands(g.nodes[n]))
      if (!broadcasts_to(g.tensor(t).shape, a.iteration) && !is_scalar_float_literal(g.tensor(t)))
        return FusionDecision::no(fmt::format("{} reads '{}' {}, which does not broadcast to the "
                                              "iteration shape {}",
                                              ctx.describe(n), g.tensor(t).name,
                                              shape_str(g.tensor(t).shape),
                                              shape_str(a.iteration)));
    a.recomputed += elements - r.elements(); // a smaller intermediate, evaluated per element
  }
  a.registers = kBaseRegisters + kRegistersPerNode * static_cast<int64_t>(a.nodes.size());
  if (FusionDecision d = fits_registers(ctx, a); !d) return d;

  LocalSpec spec;
  spec.nodes = a.nodes;
  spec.iteration = a.iteration;
  spec.io = kernel_interface(ctx, a.nodes, a.inputs, a.outputs);
  spec.vector_width = vector_width_for(g, spec.io.reads, spec.io.writes, a.iteration);
  a.kind = GroupKind::Kernel;
  a.scheme = StitchScheme::Local;
  a.group.mapping = ThreadMapping::Flat;
  a.group.launch = flat_launch(elements, spec.vector_width, ctx.device);
  a.group.spec = std::move(spec);
  return FusionDecision::ok();
}

} // namespace stitch::legality
