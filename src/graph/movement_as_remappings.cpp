// movement-as-remappings (movement_as_remappings.h).
#include "graph/movement_as_remappings.h"

#include <algorithm>
#include <optional>

#include <fmt/format.h>

#include "graph/constant.h"
#include "graph/infer_context.h"
#include "graph/pass_builder.h"
#include "graph/topo_sort.h"

namespace stitch {

namespace {

// Positions start + step * i, i in [0, count).
struct Progression {
  int64_t start = 0, step = 1, count = 0;
};

// The progression `positions` are, when they are one with step >= 1.
std::optional<Progression> progression(const std::vector<int64_t>& positions) {
  if (positions.empty()) return std::nullopt;
  Progression p;
  p.start = positions[0];
  p.count = static_cast<int64_t>(positions.size());
  if (positions.size() > 1) p.step = positions[1] - positions[0];
  if (p.step < 1) return std::nullopt;
  for (size_t i = 0; i < positions.size(); ++i)
    if (positions[i] != p.start + p.step * static_cast<int64_t>(i)) return std::nullopt;
  return p;
}

// A Tile of an axis into more copies than this stays a Tile (a Concat of that many parts would
// branch too much per element).
constexpr int64_t kMaxCopies = 8;

// Positions computed from their coordinates over the symbols: offset + Σ coeff[d] * c_d over
// the axes of the tensor's shape.
struct AffinePositions {
  DimExpr offset;
  std::vector<DimExpr> coeff;
  bool uniform() const {
    return std::all_of(coeff.begin(), coeff.end(), [](const DimExpr& c) { return c == 0; });
  }
};

// The one value of an integer tensor of one element: a constant, or an expression of the
// symbols (sym_values: a dim read by Shape and what is computed from it).
std::optional<DimExpr> scalar_value(const Tensor& t) {
  if (!dtype_is_integer(t.dtype) || t.is_dynamic() || t.elements() != 1) return std::nullopt;
  if (t.sym_values.size() == 1) return t.sym_values[0];
  if (t.is_constant()) return DimExpr(constant_as_int64(t)[0]);
  return std::nullopt;
}

class Rewriter {
public:
  explicit Rewriter(Graph& g) : g_(g), build_(g), producer_(g.tensors.size(), -1) {
    for (size_t n = 0; n < g.nodes.size(); ++n)
      for (TensorId t : g.nodes[n].outputs)
        if (t != kNoTensor) producer_[static_cast<size_t>(t)] = static_cast<int32_t>(n);
  }

  // Gather(data, indices, axis): the positions along `axis`.
  bool gather(Node& node) {
    NodeContext nc(g_, node);
    const Shape& shape = g_.tensor(node.inputs[0]).shape;
    if (shape.empty()) return false;
    const int64_t axis = nc.normalize_axis(nc.attr_int("axis", 0), nc.rank(0));
    if (!g_.tensor(node.inputs[0]).dim_is(static_cast<size_t>(axis), shape[axis]))
      return false; // a symbolic axis: its positions are not known before the run
    const int64_t dim = shape[static_cast<size_t>(axis)];
    std::vector<int64_t> positions = constant_as_int64(g_.tensor(node.inputs[1]));
    for (int64_t& p : positions) {
      if (p < 0) p += dim;
      if (p < 0 || p >= dim) return false;
    }
    const std::optional<Progression> p = progression(positions);
    if (!p) return false;
    replace(node, node.inputs[0], axis, *p);
    return true;
  }

  // Gather(data, indices, axis) with indices computed from the symbols: where they are every
  // position of the axis in order at every value of the symbols (affine_positions: 0 at the
  // first index, each axis of the indices stepping by the elements after it, as many indices as
  // positions), the Gather is a Reshape of the data. Exporters index a flattened mask by
  // Range(batch) * seq + Range(seq) so.
  bool gather_in_order(Node& node) {
    NodeContext nc(g_, node);
    const SymShape data = g_.tensor(node.inputs[0]).sym_shape();
    if (data.empty()) return false;
    const auto axis = static_cast<size_t>(nc.normalize_axis(nc.attr_int("axis", 0), nc.rank(0)));
    const SymShape indices = g_.tensor(node.inputs[1]).sym_shape();
    const std::optional<AffinePositions> a = affine_positions(node.inputs[1], 0);
    if (!a || a->offset != 0) return false;
    DimExpr stride = 1; // the elements after axis j of the indices
    for (size_t j = indices.size(); j-- > 0;) {
      if (indices[j] != 1 && a->coeff[j] != stride) return false;
      stride = stride * indices[j];
    }
    if (stride != data[axis]) return false;
    const TensorId result = node.outputs[0];
    const SymShape out = g_.tensor(result).sym_shape();
    added_.push_back(build_.node(OpKind::Reshape, node.name + "/reshape",
                                 {node.inputs[0], build_.shape_value(node.name + "/shape", out)},
                                 result));
    node.removed = true;
    return true;
  }

  // The positions `t` holds, as an affine function of its coordinates, where the nodes computing
  // it are Ranges (start and delta one value each), integer Casts, Reshapes and Unsqueezes that
  // only add or drop axes of one element, sums and differences, and products by one value; nullopt
  // otherwise.
  std::optional<AffinePositions> affine_positions(TensorId t, int depth) {
    const Tensor& x = g_.tensor(t);
    const SymShape shape = x.sym_shape();
    if (!dtype_is_integer(x.dtype) || depth > kMaxDepth) return std::nullopt;
    if (const std::optional<DimExpr> v = scalar_value(x))
      return AffinePositions{*v, std::vector<DimExpr>(shape.size(), DimExpr(0))};
    const int32_t p = static_cast<size_t>(t) < producer_.size() ? producer_[t] : -1;
    if (p < 0) return std::nullopt;
    const Node& n = g_.nodes[static_cast<size_t>(p)];
    switch (n.op) {
    case OpKind::Range: {
      const std::optional<DimExpr> start = scalar_value(g_.tensor(n.inputs[0]));
      const std::optional<DimExpr> delta = scalar_value(g_.tensor(n.inputs[2]));
      if (!start || !delta || shape.size() != 1) return std::nullopt;
      return AffinePositions{*start, {*delta}};
    }
    case OpKind::Cast:
    case OpKind::Identity:
    case OpKind::Reshape:
    case OpKind::Unsqueeze:
    case OpKind::Squeeze:
    case OpKind::Flatten: {
      // The same axes of more than one element, in order.
      const std::optional<AffinePositions> a = affine_positions(n.inputs[0], depth + 1);
      if (!a) return std::nullopt;
      const SymShape from = g_.tensor(n.inputs[0]).sym_shape();
      AffinePositions r{a->offset, std::vector<DimExpr>(shape.size(), DimExpr(0))};
      size_t i = 0;
      auto skip_units = [&] {
        while (i < from.size() && from[i] == 1)
          ++i;
      };
      for (size_t j = 0; j < shape.size(); ++j) {
        if (shape[j] == 1) continue;
        skip_units();
        if (i == from.size() || from[i] != shape[j]) return std::nullopt;
        r.coeff[j] = a->coeff[i++];
      }
      skip_units();
      if (i != from.size()) return std::nullopt;
      return r;
    }
    case OpKind::Add:
    case OpKind::Sub:
    case OpKind::Mul: {
      std::optional<AffinePositions> side[2];
      for (size_t k = 0; k < 2; ++k) {
        const std::optional<AffinePositions> a = affine_positions(n.inputs[k], depth + 1);
        const SymShape operand = g_.tensor(n.inputs[k]).sym_shape();
        if (!a || operand.size() > shape.size()) return std::nullopt;
        // Right-aligned; an axis of one element broadcasts (its coordinate is 0).
        side[k] = AffinePositions{a->offset, std::vector<DimExpr>(shape.size(), DimExpr(0))};
        const size_t lead = shape.size() - operand.size();
        for (size_t j = 0; j < operand.size(); ++j)
          if (operand[j] != 1) side[k]->coeff[lead + j] = a->coeff[j];
      }
      if (n.op == OpKind::Mul) {
        if (!side[0]->uniform() && !side[1]->uniform()) return std::nullopt;
        const size_t scaled = side[0]->uniform() ? 1 : 0;
        const DimExpr factor = side[1 - scaled]->offset;
        AffinePositions r{side[scaled]->offset * factor, side[scaled]->coeff};
        for (DimExpr& c : r.coeff)
          c = c * factor;
        return r;
      }
      const DimExpr sign = n.op == OpKind::Sub ? -1 : 1;
      AffinePositions r{side[0]->offset + sign * side[1]->offset, side[0]->coeff};
      for (size_t j = 0; j < shape.size(); ++j)
        r.coeff[j] = r.coeff[j] + sign * side[1]->coeff[j];
      return r;
    }
    default:
      return std::nullopt;
    }
  }

  // GatherND(data, indices [..., q]) with batch_dims 0: each tuple's row-major position in the
  // data's first q axes, sliced from the data viewed as [positions, rest...].
  bool gather_nd(Node& node) {
    NodeContext nc(g_, node);
    if (nc.attr_int("batch_dims", 0) != 0) return false;
    const Tensor& data = g_.tensor(node.inputs[0]);
    const Tensor& indices = g_.tensor(node.inputs[1]);
    if (indices.shape.empty() || data.is_dynamic()) return false;
    const auto q = static_cast<size_t>(indices.shape.back());
    if (q < 1 || q > data.shape.size()) return false;
    const std::vector<int64_t> values = constant_as_int64(indices);
    std::vector<int64_t> positions;
    for (size_t t = 0; t + q <= values.size(); t += q) {
      int64_t position = 0;
      for (size_t j = 0; j < q; ++j) {
        int64_t v = values[t + j];
        if (v < 0) v += data.shape[j];
        if (v < 0 || v >= data.shape[j]) return false;
        position = position * data.shape[j] + v;
      }
      positions.push_back(position);
    }
    const std::optional<Progression> p = progression(positions);
    if (!p) return false;
    SymShape flat = {1};
    for (size_t j = 0; j < data.shape.size(); ++j)
      if (j < q)
        flat[0] = flat[0] * data.shape[j];
      else
        flat.push_back(data.shape[j]);
    const TensorId viewed = build_.reshape(added_, node.inputs[0], flat, node.name + "/positions");
    replace(node, viewed, 0, *p);
    return true;
  }

  // Split: output i is the Slice [offset_i, offset_i + size_i) of the axis, the sizes those
  // shape inference gave the outputs.
  bool split(Node& node) {
    NodeContext nc(g_, node);
    const int64_t axis = nc.normalize_axis(nc.attr_int("axis", 0), nc.rank(0));
    const Tensor& data = g_.tensor(node.inputs[0]);
    if (!data.dim_is(static_cast<size_t>(axis), data.shape[static_cast<size_t>(axis)]))
      return false; // a symbolic axis splits into parts of symbolic sizes
    int64_t offset = 0;
    std::vector<Node> slices;
    for (size_t i = 0; i < node.outputs.size(); ++i) {
      const TensorId out = node.outputs[i];
      if (out == kNoTensor) return false;
      const int64_t size = g_.tensor(out).shape[static_cast<size_t>(axis)];
      slices.push_back(build_.slice(fmt::format("{}/part{}", node.name, i), node.inputs[0], offset,
                                    offset + size, axis, out));
      offset += size;
    }
    for (Node& slice : slices)
      added_.push_back(std::move(slice));
    node.removed = true;
    return true;
  }

  // Tile: each axis repeated with more than one element is a Concat of that many copies along
  // it (at most kMaxCopies); the axes of one element repeated are broadcast, one Expand.
  bool tile(Node& node) {
    if (g_.tensor(node.inputs[0]).is_dynamic()) return false; // stays a Tile
    const Shape in = g_.tensor(node.inputs[0]).shape;
    const std::vector<int64_t> repeats = constant_as_int64(g_.tensor(node.inputs[1]));
    if (repeats.size() != in.size()) return false;
    for (size_t j = 0; j < in.size(); ++j)
      if (in[j] > 1 && repeats[j] > kMaxCopies) return false;
    const DType dtype = g_.tensor(node.inputs[0]).dtype;
    const TensorId result = node.outputs[0];
    const Shape out = g_.tensor(result).shape;
    std::vector<size_t> copied; // axes of more than one element repeated
    bool broadcast = false;
    for (size_t j = 0; j < in.size(); ++j) {
      if (repeats[j] == 1) continue;
      if (in[j] == 1)
        broadcast = true;
      else
        copied.push_back(j);
    }
    TensorId at = node.inputs[0];
    Shape shape = in;
    for (size_t j : copied) {
      shape[j] *= repeats[j];
      const std::string name = fmt::format("{}/copies{}", node.name, j);
      const bool last = j == copied.back() && !broadcast;
      const TensorId copies = last ? result : build_.tensor(name, dtype, shape);
      Node concat = build_.node(OpKind::Concat, name,
                                std::vector<TensorId>(static_cast<size_t>(repeats[j]), at), copies);
      concat.attrs["axis"] = Attribute{static_cast<int64_t>(j)};
      added_.push_back(std::move(concat));
      at = copies;
    }
    if (broadcast)
      added_.push_back(build_.node(OpKind::Expand, node.name + "/broadcast",
                                   {at, build_.ints(node.name + "/shape", out)}, result));
    else if (at != result) // every repeat 1
      added_.push_back(build_.node(OpKind::Identity, node.name + "/identity", {at}, result));
    node.removed = true;
    return true;
  }

  // Rewrites `node` when it is one of the ops above, of a tensor that is not a constant
  // (fold-constants folds those) with constant parameters; true when it did.
  bool rewrite(Node& node) {
    if (node.removed || node.inputs.empty() || node.inputs[0] == kNoTensor) return false;
    const Tensor& data = g_.tensor(node.inputs[0]);
    if (data.is_constant() || data.elements() == 0) return false;
    if (node.op == OpKind::Split) return split(node);
    if (node.op == OpKind::Gather && node.inputs.size() == 2 && node.inputs[1] != kNoTensor &&
        !g_.tensor(node.inputs[1]).is_constant() && node.outputs.size() == 1)
      return gather_in_order(node);
    // A parameter computed from symbolic dims (sym_values) is not known before the run.
    const bool constant_operand =
        node.inputs.size() == 2 && node.inputs[1] != kNoTensor &&
        g_.tensor(node.inputs[1]).is_constant() && g_.tensor(node.inputs[1]).sym_values.empty() &&
        node.outputs.size() == 1 && g_.tensor(node.outputs[0]).elements() > 0;
    if (!constant_operand) return false;
    switch (node.op) {
    case OpKind::Tile:
      return tile(node);
    case OpKind::Gather:
      return gather(node);
    case OpKind::GatherND:
      return gather_nd(node);
    default:
      return false;
    }
  }

  std::vector<Node> added_;

private:
  // `node`'s result as positions `p` of `source`'s axis `axis`: a Slice unless they are the
  // whole axis in order, then a Reshape writing the result.
  void replace(Node& node, TensorId source, int64_t axis, const Progression& p) {
    Shape shape = g_.tensor(source).shape; // copies: adding tensors moves them
    const DType dtype = g_.tensor(source).dtype;
    TensorId picked = source;
    if (!(p.start == 0 && p.step == 1 && p.count == shape[static_cast<size_t>(axis)])) {
      shape[static_cast<size_t>(axis)] = p.count;
      const std::string name = node.name + "/slice";
      picked = build_.tensor(name, dtype, shape);
      added_.push_back(build_.slice(name, source, p.start, p.start + p.step * (p.count - 1) + 1,
                                    axis, picked, p.step));
    }
    const TensorId result = node.outputs[0];
    const SymShape out = g_.tensor(result).sym_shape();
    added_.push_back(build_.node(OpKind::Reshape, node.name + "/reshape",
                                 {picked, build_.shape_value(node.name + "/shape", out)}, result));
    node.removed = true;
  }

  static constexpr int kMaxDepth = 32; // nodes followed back from a Gather's indices

  Graph& g_;
  PassBuilder build_;
  std::vector<int32_t> producer_; // per tensor of the graph as the pass found it
};

} // namespace

bool movement_as_remappings(Graph& g) {
  Rewriter rewrite(g);
  bool changed = false;
  for (Node& node : g.nodes)
    changed = rewrite.rewrite(node) || changed;
  if (!changed) return false;
  for (Node& node : rewrite.added_)
    g.nodes.push_back(std::move(node));
  g.compact();
  topo_sort(g);
  return true;
}

} // namespace stitch
