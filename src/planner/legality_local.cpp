// Local groups (kernel_fused.cpp prints them): pointwise nodes over one iteration shape, the
// shape of every output. Each element evaluates the chain in registers, reading each input at
// its broadcast index; a smaller intermediate is evaluated again for every element it feeds
// (GroupAnalysis::recomputed, which the cost model charges).
//
// A Local group may also hold movement nodes (Transpose, Slice, Expand, Concat, Pad, Trilu, and
// the generators ConstantOfShape, a Pad of nothing, and an integer Range: remapping_op; and
// Views between its nodes that add or drop axes of 1: unit_axes_view_read):
// they become index remappings (MovementRead) that their consumers read through, so that, say,
// rotary embedding's Slices, Neg, Concat, Mul and Add with the head transpose before them are
// one kernel. The analysis walks the group from its outputs as the kernel will: every value is
// asked for at coordinates that are, axis by axis, an affine function of one coordinate of the
// iteration (`Access`), so it can count the evaluations (recompute), the elements of each input
// actually read (a Slice reads part of its operand) and the reads whose consecutive elements are
// not adjacent in memory (a transposed read moves a whole sector per element).
#include <map>
#include <set>
#include <tuple>

#include "graph/infer_context.h"
#include "graph/op_params.h"
#include "planner/launch_config.h"
#include "planner/legality_internal.h"

namespace stitch::legality {

namespace {

int64_t floor_div(int64_t a, int64_t b) { // b > 0
  return a >= 0 ? a / b : -((-a + b - 1) / b);
}
int64_t ceil_div(int64_t a, int64_t b) { return -floor_div(-a, b); }

} // namespace

MovementRead movement_read(const Graph& g, int32_t n) {
  const Node& node = g.nodes[n];
  const Shape& out = g.tensor(node.outputs[0]).shape;
  const auto rank = static_cast<int32_t>(out.size());
  auto identity = [&](TensorId operand) {
    MovementRead::Part part;
    part.operand = operand;
    for (int32_t d = 0; d < rank; ++d)
      part.source.push_back(d);
    part.offset.assign(out.size(), 0);
    part.step.assign(out.size(), 1);
    return part;
  };
  NodeContext nc(g, node);
  MovementRead read;
  read.node = n;
  switch (node.op) {
  case OpKind::Transpose: {
    // Result axis d is operand axis perm[d].
    const std::vector<int64_t> perm = read_perm(nc);
    MovementRead::Part part = identity(node.inputs[0]);
    for (int32_t d = 0; d < rank; ++d)
      part.source[perm[d]] = d;
    read.parts.push_back(std::move(part));
    break;
  }
  case OpKind::Slice: {
    MovementRead::Part part = identity(node.inputs[0]);
    for (const SliceAxis& s : read_slice_params(nc)) {
      part.offset[s.axis] = s.start;
      part.step[s.axis] = s.step;
    }
    read.parts.push_back(std::move(part));
    break;
  }
  case OpKind::Expand: {
    // The operand right-aligned against the result; its size-1 axes that the result widens read
    // element 0.
    const Shape& in = g.tensor(node.inputs[0]).shape;
    const auto lead = static_cast<int32_t>(out.size() - in.size());
    MovementRead::Part part;
    part.operand = node.inputs[0];
    for (int32_t j = 0; j < static_cast<int32_t>(in.size()); ++j) {
      const bool widened = in[j] == 1 && out[j + lead] != 1;
      part.source.push_back(widened ? -1 : j + lead);
      part.offset.push_back(0);
      part.step.push_back(widened ? 0 : 1);
    }
    read.parts.push_back(std::move(part));
    break;
  }
  case OpKind::Concat: {
    read.axis = static_cast<int32_t>(nc.normalize_axis(nc.req_int("axis"), nc.rank(0)));
    int64_t at = 0;
    for (TensorId t : node.inputs) {
      if (t == kNoTensor) continue;
      const int64_t length = g.tensor(t).shape[read.axis];
      if (length == 0) continue; // covers nothing
      MovementRead::Part part = identity(t);
      part.offset[read.axis] = -at;
      part.begin = at;
      part.end = at + length;
      at += length;
      read.parts.push_back(std::move(part));
    }
    break;
  }
  case OpKind::Pad: {
    const ConstantPad pad = *constant_pad(g, node);
    MovementRead::Part part = identity(node.inputs[0]);
    if (pad.axis >= 0) {
      read.axis = pad.axis;
      read.fills = true;
      read.fill = pad.fill;
      part.offset[pad.axis] = -pad.begin;
      part.begin = pad.begin;
      part.end = pad.begin + g.tensor(node.inputs[0]).shape[pad.axis];
    }
    if (g.tensor(node.inputs[0]).elements() > 0) read.parts.push_back(std::move(part));
    break;
  }
  case OpKind::ConstantOfShape: {
    // Every element is the fill value: a Pad of nothing.
    NodeContext nc(g, node);
    read.fills = true;
    if (nc.has_attr("value")) read.fill = nc.attr_tensor("value");
    break;
  }
  case OpKind::Range: {
    // Element r is start + delta * r: it reads nothing.
    const auto [start, delta] = *range_terms(g, node);
    read.generates = true;
    read.start = start;
    read.delta = delta;
    break;
  }
  case OpKind::Trilu:
    read.parts.push_back(identity(node.inputs[0]));
    read.band = true;
    read.upper = NodeContext(g, node).attr_flag("upper", true);
    read.diagonal = *trilu_diagonal(g, node);
    break;
  default:
    break;
  }
  return read;
}

std::optional<MovementRead> unit_axes_view_read(const Graph& g, int32_t n) {
  const Node& node = g.nodes[n];
  if (node.op != OpKind::View || node.inputs.empty() || node.outputs.size() != 1) return {};
  const SymShape in = g.tensor(node.inputs[0]).sym_shape();
  const SymShape out = g.tensor(node.outputs[0]).sym_shape();
  MovementRead read;
  read.node = n;
  MovementRead::Part part;
  part.operand = node.inputs[0];
  // The operand's axes other than the constant 1, each the next such axis of the result, of
  // the same extent; its constant 1s read coordinate 0.
  size_t next = 0;
  for (const DimExpr& d : in) {
    if (is_one(d)) {
      part.source.push_back(-1);
      part.offset.push_back(0);
      part.step.push_back(0);
      continue;
    }
    while (next < out.size() && is_one(out[next]))
      ++next;
    if (next >= out.size() || out[next] != d) return {};
    part.source.push_back(static_cast<int32_t>(next++));
    part.offset.push_back(0);
    part.step.push_back(1);
  }
  for (; next < out.size(); ++next)
    if (!is_one(out[next])) return {};
  read.parts.push_back(std::move(part));
  return read;
}

namespace {

// Coordinates of a tensor asked for by the kernel, axis by axis: offset + step * c[source] of the
// iteration's coordinates c (source -1: the constant offset).
struct Axis {
  int32_t source = -1;
  int64_t offset = 0, step = 0;
  auto operator<=>(const Axis&) const = default;
};
using Access = std::vector<Axis>;

// The walk from the outputs (see the file comment).
class AccessWalk {
public:
  AccessWalk(const FusionContext& ctx, const GroupAnalysis& a,
             const std::map<int32_t, const MovementRead*>& moves)
      : ctx_(ctx), a_(a), moves_(moves) {}

  void run() {
    const Shape& it = a_.iteration;
    Access access;
    for (int32_t d = 0; d < static_cast<int32_t>(it.size()); ++d)
      access.push_back({d, 0, 1});
    for (TensorId t : a_.outputs)
      visit(t, access, it);
  }

  // Evaluations of each pointwise node beyond its result's elements.
  int64_t recomputed() const {
    int64_t extra = 0;
    for (const auto& [n, count] : evaluations_)
      extra += std::max<int64_t>(
          0, count - ctx_.graph.tensor(ctx_.graph.nodes[n].outputs[0]).elements());
    return extra;
  }

  // Bytes of the inputs no read reaches, and the sectors' extra bytes of non-adjacent reads.
  void read_bytes(int64_t& unread, int64_t& uncoalesced) const {
    const Graph& g = ctx_.graph;
    const Shape& it = a_.iteration;
    int32_t inner = -1; // the innermost iteration axis with more than one element
    for (int32_t d = static_cast<int32_t>(it.size()); d-- > 0;)
      if (it[d] > 1) {
        inner = d;
        break;
      }
    std::map<TensorId, int64_t> reached;
    for (const Read& r : reads_) {
      const Tensor& t = g.tensor(r.tensor);
      const Shape strides = row_major_strides(t.shape);
      int64_t elements = 1, stride = 0;
      for (size_t j = 0; j < r.access.size(); ++j) {
        const Axis& x = r.access[j];
        if (x.source < 0) continue;
        elements *= r.extent[x.source];
        if (x.source == inner) stride += x.step * strides[j];
      }
      reached[r.tensor] += elements;
      // Consecutive elements of the iteration read elements `stride` apart: a run of one
      // element unless the stride is 1 (or 0, one element served from cache).
      if (stride != 0 && stride != 1)
        uncoalesced += sector_overhead(elements * dtype_size(t.dtype), dtype_size(t.dtype));
    }
    for (const auto& [t, elements] : reached) {
      const Tensor& x = g.tensor(t);
      unread += std::max<int64_t>(0, x.elements() - elements) * dtype_size(x.dtype);
    }
  }

private:
  struct Read {
    TensorId tensor;
    Access access;
    Shape extent; // of each iteration axis, within the Concat parts on the way
  };

  void visit(TensorId t, const Access& access, const Shape& extent) {
    const Graph& g = ctx_.graph;
    const int32_t p = ctx_.producer[t];
    if (p < 0 || !contains(a_.nodes, p)) {
      if (!is_scalar_float_literal(g.tensor(t))) reads_.push_back({t, access, extent});
      return;
    }
    if (!seen_.insert({t, access, extent}).second) return; // evaluated once per coordinates
    const Node& node = g.nodes[p];
    if (auto move = moves_.find(p); move != moves_.end()) {
      for (const MovementRead::Part& part : move->second->parts) {
        Shape within = extent;
        if (move->second->axis >= 0 && !restrict(access[move->second->axis], part, within))
          continue;
        Access operand;
        for (size_t j = 0; j < part.source.size(); ++j) {
          if (part.source[j] < 0) {
            operand.push_back({-1, part.offset[j], 0});
            continue;
          }
          const Axis& r = access[part.source[j]];
          operand.push_back(
              {r.source, part.offset[j] + part.step[j] * r.offset, part.step[j] * r.step});
        }
        visit(part.operand, operand, within);
      }
      return;
    }
    int64_t count = 1;
    for (int64_t e : extent)
      count *= e;
    evaluations_[p] += count;
    const Shape& result = g.tensor(node.outputs[0]).shape;
    for (TensorId operand : present_operands(node)) {
      const Shape& s = g.tensor(operand).shape;
      const size_t lead = result.size() - s.size();
      Access a;
      for (size_t j = 0; j < s.size(); ++j)
        a.push_back(s[j] == 1 && result[j + lead] != 1 ? Axis{-1, 0, 0} : access[j + lead]);
      visit(operand, a, extent);
    }
  }

  // Narrows `extent` to the iteration coordinates whose Concat coordinate `x` falls in the
  // part; false when none does.
  static bool restrict(const Axis& x, const MovementRead::Part& part, Shape& extent) {
    if (x.source < 0) return x.offset >= part.begin && x.offset < part.end;
    // The c in [0, n) with begin <= offset + step * c < end.
    const int64_t n = extent[x.source];
    int64_t lo = 0, hi = n;
    if (x.step > 0) {
      lo = ceil_div(part.begin - x.offset, x.step);
      hi = ceil_div(part.end - x.offset, x.step);
    } else if (x.step < 0) {
      lo = floor_div(x.offset - part.end, -x.step) + 1;
      hi = floor_div(x.offset - part.begin, -x.step) + 1;
    } else if (x.offset < part.begin || x.offset >= part.end) {
      hi = 0;
    }
    const int64_t count = std::max<int64_t>(0, std::min(hi, n) - std::max<int64_t>(lo, 0));
    extent[x.source] = count;
    return count > 0;
  }

  const FusionContext& ctx_;
  const GroupAnalysis& a_;
  const std::map<int32_t, const MovementRead*>& moves_;
  std::set<std::tuple<TensorId, Access, Shape>> seen_;
  std::map<int32_t, int64_t> evaluations_;
  std::vector<Read> reads_;
};

// A Local group holding movement nodes: the walk measures what it costs. (Every part reads a
// non-empty operand: Concat and Pad drop empty ones, and the other movement ops with a
// non-empty result read a non-empty operand.)
void measure_remapping(const FusionContext& ctx, GroupAnalysis& a, LocalSpec& spec) {
  std::map<int32_t, const MovementRead*> moves;
  for (const MovementRead& m : spec.moves)
    moves[m.node] = &m;
  AccessWalk walk(ctx, a, moves);
  walk.run();
  a.recomputed = walk.recomputed();
  walk.read_bytes(spec.unread_bytes, spec.uncoalesced_bytes);
}

} // namespace

FusionDecision analyze_local(const FusionContext& ctx, GroupAnalysis& a) {
  const Graph& g = ctx.graph;
  LocalSpec spec;
  for (int32_t n : a.nodes) {
    const NodeClass c = ctx.node_class[n];
    if (c == NodeClass::View) {
      // A View between two of the group's nodes that only adds or drops axes of 1 (an
      // Unsqueeze, a Squeeze) is read through as an index remapping. A View of the group's
      // input stays an alias outside (the kernel reads its result as stored, at no cost), and
      // one whose result is read outside the group would need storage of its own.
      const Node& view = g.nodes[n];
      const int32_t p = ctx.producer[view.inputs[0]];
      if (p < 0 || !contains(a.nodes, p))
        return FusionDecision::no(fmt::format("{} views the group's input '{}': the kernel reads "
                                              "the view as stored",
                                              ctx.describe(n), g.tensor(view.inputs[0]).name));
      if (contains(a.outputs, view.outputs[0]))
        return FusionDecision::no(fmt::format("{}'s result is read outside the group: a view is "
                                              "stored as its operand",
                                              ctx.describe(n)));
      std::optional<MovementRead> read = unit_axes_view_read(g, n);
      if (!read)
        return FusionDecision::no(
            fmt::format("{} reshapes {} to {}, more than adding or dropping "
                        "axes of 1",
                        ctx.describe(n), sym_shape_to_string(g.tensor(view.inputs[0]).sym_shape()),
                        sym_shape_to_string(g.tensor(view.outputs[0]).sym_shape())));
      spec.moves.push_back(std::move(*read));
    } else if ((c == NodeClass::Movement || c == NodeClass::Layout) &&
               remapping_op(g, g.nodes[n])) {
      spec.moves.push_back(movement_read(g, n));
    } else if (c != NodeClass::Pointwise) {
      return FusionDecision::no(fmt::format("{} is not pointwise", ctx.describe(n)));
    }
  }
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
  if (!spec.moves.empty()) {
    measure_remapping(ctx, a, spec);
  } else {
    for (int32_t n : a.nodes) {
      const Tensor& r = g.tensor(g.nodes[n].outputs[0]);
      if (!broadcasts_to(r.shape, a.iteration))
        return FusionDecision::no(fmt::format("{}'s result {} does not broadcast to the "
                                              "iteration shape {}",
                                              ctx.describe(n), shape_str(r.shape),
                                              shape_str(a.iteration)));
      for (TensorId t : present_operands(g.nodes[n]))
        if (!broadcasts_to(g.tensor(t).shape, a.iteration) && !is_scalar_float_literal(g.tensor(t)))
          return FusionDecision::no(fmt::format("{} reads '{}' {}, which does not broadcast to "
                                                "the iteration shape {}",
                                                ctx.describe(n), g.tensor(t).name,
                                                shape_str(g.tensor(t).shape),
                                                shape_str(a.iteration)));
      a.recomputed += elements - r.elements(); // a smaller intermediate, evaluated per element
    }
  }
  a.registers = kBaseRegisters + kRegistersPerNode * static_cast<int64_t>(a.nodes.size());
  if (FusionDecision d = fits_registers(ctx, a); !d) return d;

  spec.nodes = a.nodes;
  spec.iteration = a.iteration;
  spec.io = kernel_interface(ctx, a.nodes, a.inputs, a.outputs);
  // A remapped read is not one vector of adjacent elements per thread.
  spec.vector_width =
      spec.moves.empty() ? vector_width_for(g, spec.io.reads, spec.io.writes, a.iteration) : 1;
  a.kind = GroupKind::Kernel;
  a.scheme = StitchScheme::Local;
  a.group.mapping = ThreadMapping::Flat;
  a.group.launch = flat_launch(elements, spec.vector_width, ctx.device);
  a.group.spec = std::move(spec);
  return FusionDecision::ok();
}

} // namespace stitch::legality
