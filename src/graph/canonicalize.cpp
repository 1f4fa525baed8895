// canonicalize: local rewrites to one spelling, then the GELU chains to Gelu (canonicalize.h).
#include "graph/canonicalize.h"

#include <algorithm>

#include <cmath>
#include <map>
#include <set>
#include <string>

#include "graph/constant.h"
#include "graph/infer_context.h"
#include "graph/op_params.h"
#include "graph/pass_builder.h"

namespace stitch {

namespace {

constexpr double kSqrt2 = 1.4142135623730951;
constexpr double kSqrt2OverPi = 0.7978845608028654;
constexpr double kTanhGeluCubic = 0.044715;

class Chains {
public:
  explicit Chains(Graph& graph)
      : graph_(graph), producer_(graph.producers()), consumers_(graph.consumers()) {}

  // The live node computing `t` with op `op`, or null.
  Node* producer(TensorId t, OpKind op) {
    if (t == kNoTensor || producer_[t] < 0) return nullptr;
    Node& n = graph_.nodes[producer_[t]];
    return !n.removed && n.op == op ? &n : nullptr;
  }
  // `t` is a computed value read by one node only (once or more), not a graph output.
  bool single_use(TensorId t) const {
    return t != kNoTensor && !graph_.tensor(t).is_constant() && consumers_[t].size() == 1 &&
           !graph_.is_graph_output(t);
  }
  // The one node reading `t` if it has op `op` (or `alt`), or null.
  Node* consumer(TensorId t, OpKind op, OpKind alt) {
    if (!single_use(t)) return nullptr;
    Node& n = graph_.nodes[consumers_[t][0]];
    return !n.removed && (n.op == op || n.op == alt) ? &n : nullptr;
  }
  // A constant float scalar equal to `v`, up to the rounding of its type.
  bool is_value(TensorId t, double v) const {
    if (t == kNoTensor) return false;
    const Tensor& c = graph_.tensor(t);
    if (!c.is_constant() || c.elements() != 1 || !dtype_is_float(c.dtype)) return false;
    const double tolerance = dtype_size(c.dtype) == 2 ? 1e-2 : 1e-5;
    return std::abs(constant_as_double(c)[0] - v) <= tolerance * std::abs(v);
  }
  // The operand of two-operand `node` other than `t`, or kNoTensor.
  static TensorId other(const Node* node, TensorId t) {
    if (node == nullptr || node->inputs.size() != 2) return kNoTensor;
    if (node->inputs[0] == t) return node->inputs[1];
    if (node->inputs[1] == t) return node->inputs[0];
    return kNoTensor;
  }

  // 1 + e, where e feeds only that Add: its result, or kNoTensor.
  TensorId one_plus(TensorId e, std::vector<Node*>& chain) {
    Node* add = consumer(e, OpKind::Add, OpKind::Sum);
    if (!is_value(other(add, e), 1.0)) return kNoTensor;
    chain.push_back(add);
    return add->outputs[0];
  }

  // 0.5 * x * p in the associations exporters write: the node computing it, or null.
  Node* half_product(TensorId x, TensorId p, std::vector<Node*>& chain) {
    Node* m1 = consumer(p, OpKind::Mul, OpKind::Mul);
    TensorId q = other(m1, p);
    if (q == kNoTensor) return nullptr;
    auto halves = [&](Node* n, TensorId v) {
      return n != nullptr &&
             ((n->op == OpKind::Mul && is_value(other(n, v), 0.5)) ||
              (n->op == OpKind::Div && n->inputs[0] == v && is_value(n->inputs[1], 2.0)));
    };
    if (q == x) { // (x * p) * 0.5
      Node* m2 = consumer(m1->outputs[0], OpKind::Mul, OpKind::Div);
      if (!halves(m2, m1->outputs[0])) return nullptr;
      chain.push_back(m1);
      return m2;
    }
    if (is_value(q, 0.5)) { // (0.5 * p) * x
      Node* m2 = consumer(m1->outputs[0], OpKind::Mul, OpKind::Mul);
      if (other(m2, m1->outputs[0]) != x) return nullptr;
      chain.push_back(m1);
      return m2;
    }
    Node* half = single_use(q) ? producer(q, OpKind::Mul) : nullptr; // (x * 0.5) * p
    if (half == nullptr && single_use(q)) half = producer(q, OpKind::Div);
    if (!halves(half, x)) return nullptr;
    chain.push_back(half);
    return m1;
  }

  // x / sqrt(2) (or x * (1 / sqrt(2))) computing `u`: x, or kNoTensor.
  TensorId erf_argument(TensorId u, std::vector<Node*>& chain) {
    if (!single_use(u)) return kNoTensor;
    if (Node* div = producer(u, OpKind::Div); div && is_value(div->inputs[1], kSqrt2)) {
      chain.push_back(div);
      return div->inputs[0];
    }
    Node* mul = producer(u, OpKind::Mul);
    if (mul == nullptr || mul->inputs.size() != 2) return kNoTensor;
    for (int i = 0; i < 2; ++i)
      if (is_value(mul->inputs[1 - i], 1.0 / kSqrt2)) {
        chain.push_back(mul);
        return mul->inputs[i];
      }
    return kNoTensor;
  }

  // x^3 computing `cube` from x: Pow(x, 3), or x * x * x in either association.
  bool is_cube(TensorId cube, TensorId x, std::vector<Node*>& chain) {
    if (!single_use(cube)) return false;
    if (Node* pow = producer(cube, OpKind::Pow);
        pow && pow->inputs[0] == x && is_value(pow->inputs[1], 3.0)) {
      chain.push_back(pow);
      return true;
    }
    Node* outer = producer(cube, OpKind::Mul);
    TensorId square = other(outer, x);
    Node* inner = single_use(square) ? producer(square, OpKind::Mul) : nullptr;
    if (inner == nullptr || inner->inputs.size() != 2 || inner->inputs[0] != x ||
        inner->inputs[1] != x)
      return false;
    chain.push_back(outer);
    chain.push_back(inner);
    return true;
  }

  // sqrt(2/pi) * (x + 0.044715 * x^3) computing `w`: x, or kNoTensor.
  TensorId tanh_argument(TensorId w, std::vector<Node*>& chain) {
    if (!single_use(w)) return kNoTensor;
    Node* scale = producer(w, OpKind::Mul);
    if (scale == nullptr || scale->inputs.size() != 2) return kNoTensor;
    TensorId s = is_value(scale->inputs[0], kSqrt2OverPi)   ? scale->inputs[1]
                 : is_value(scale->inputs[1], kSqrt2OverPi) ? scale->inputs[0]
                                                            : kNoTensor;
    if (!single_use(s)) return kNoTensor;
    Node* sum = producer(s, OpKind::Add);
    if (sum == nullptr) sum = producer(s, OpKind::Sum);
    if (sum == nullptr || sum->inputs.size() != 2) return kNoTensor;
    for (int i = 0; i < 2; ++i) {
      TensorId x = sum->inputs[i], cubic = sum->inputs[1 - i];
      Node* times = single_use(cubic) ? producer(cubic, OpKind::Mul) : nullptr;
      if (times == nullptr || times->inputs.size() != 2) continue;
      for (int j = 0; j < 2; ++j) {
        std::vector<Node*> found = {scale, sum, times};
        if (!is_value(times->inputs[1 - j], kTanhGeluCubic) || !is_cube(times->inputs[j], x, found))
          continue;
        chain.insert(chain.end(), found.begin(), found.end());
        return x;
      }
    }
    return kNoTensor;
  }

  // The GELU chain through the Erf or Tanh node `core`, rewritten to one Gelu node.
  bool raise_gelu(Node& core) {
    std::vector<Node*> chain = {&core};
    const bool tanh = core.op == OpKind::Tanh;
    TensorId x = tanh ? tanh_argument(core.inputs[0], chain) : erf_argument(core.inputs[0], chain);
    if (x == kNoTensor) return false;
    TensorId p = one_plus(core.outputs[0], chain);
    if (p == kNoTensor) return false;
    Node* result = half_product(x, p, chain);
    if (result == nullptr) return false;
    const Tensor& y = graph_.tensor(result->outputs[0]);
    if (!y.same_shape_as(graph_.tensor(x)) || y.dtype != graph_.tensor(x).dtype) return false;
    for (Node* n : chain)
      n->removed = true;
    result->op = OpKind::Gelu;
    result->opset = std::max(result->opset, 20); // Gelu's opset: a later shape inference checks it
    result->inputs = {x};
    result->attrs.clear();
    if (tanh) result->attrs["approximate"] = Attribute{std::string("tanh")};
    return true;
  }

private:
  Graph& graph_;
  std::vector<int32_t> producer_;
  std::vector<std::vector<int32_t>> consumers_;
};

// Pow(x, 2) -> Mul(x, x), Sum(a, b) -> Add(a, b), Mul(a, Reciprocal(b)) -> Div(a, b).
bool respell(Graph& graph, Chains& chains, Node& node) {
  const Tensor& out = graph.tensor(node.outputs[0]);
  if (node.op == OpKind::Sum && node.inputs.size() == 2) {
    node.op = OpKind::Add;
    return true;
  }
  if (node.op == OpKind::Transpose)
    if (Node* inner = chains.producer(node.inputs[0], OpKind::Transpose)) {
      // y = Transpose(x, p1) has axis j of x's axis p1[j]; z = Transpose(y, p2) then has axis
      // j of x's axis p1[p2[j]].
      const std::vector<int64_t> p1 = read_perm(NodeContext(graph, *inner));
      const std::vector<int64_t> p2 = read_perm(NodeContext(graph, node));
      std::vector<int64_t> composed(p2.size());
      bool identity = true;
      for (size_t j = 0; j < p2.size(); ++j) {
        composed[j] = p1[static_cast<size_t>(p2[j])];
        identity = identity && composed[j] == static_cast<int64_t>(j);
      }
      node.inputs = {inner->inputs[0]};
      node.attrs.clear();
      if (identity)
        node.op = OpKind::Identity;
      else
        node.attrs["perm"] = Attribute{composed};
      return true;
    }
  if (!dtype_is_float(out.dtype) || node.inputs.size() != 2) return false;
  if (node.op == OpKind::Pow && chains.is_value(node.inputs[1], 2.0) &&
      graph.tensor(node.inputs[1]).shape.size() <= graph.tensor(node.inputs[0]).shape.size() &&
      constant_as_double(graph.tensor(node.inputs[1]))[0] == 2.0) {
    node.op = OpKind::Mul;
    node.inputs[1] = node.inputs[0];
    return true;
  }
  if (node.op != OpKind::Mul || node.inputs[0] == node.inputs[1]) return false;
  for (int i = 1; i >= 0; --i)
    if (Node* reciprocal = chains.producer(node.inputs[i], OpKind::Reciprocal)) {
      node.op = OpKind::Div;
      node.inputs = {node.inputs[1 - i], reciprocal->inputs[0]};
      return true;
    }
  return false;
}

} // namespace

bool raise_gelu(Graph& graph) {
  bool changed = false;
  Chains chains(graph);
  for (Node& node : graph.nodes)
    if (!node.removed && (node.op == OpKind::Erf || node.op == OpKind::Tanh))
      changed = chains.raise_gelu(node) || changed;
  graph.compact();
  return changed;
}

namespace {

// Gemm's constant float32 C as the library's epilogue takes it: beta folded into its values
// (beta * C rounds as the epilogue's float32 product does: a double product of two floats is
// exact), and a C that broadcasts along M ([], [1], [1, 1], [N], [1, N]) a row of N, the bias.
// Over symbolic rows the epilogue takes nothing else; at fixed shapes it saves a fill kernel.
bool fold_gemm_beta(Graph& graph) {
  std::set<std::string> names;
  bool changed = false;
  for (Node& node : graph.nodes) {
    if (node.removed || node.op != OpKind::Gemm || node.inputs.size() < 3 ||
        node.inputs[2] == kNoTensor)
      continue;
    const Tensor& c = graph.tensor(node.inputs[2]);
    const Tensor& y = graph.tensor(node.outputs[0]);
    if (!c.is_constant() || c.dtype != DType::Float32 || y.dtype != DType::Float32 ||
        y.shape.size() != 2 || c.shape.size() > 2)
      continue;
    const SymShape out = y.sym_shape();
    if (!out[1].is_constant() || out[1].constant_value() < 1) continue;
    const int64_t n = out[1].constant_value();
    const double beta = NodeContext(graph, node).attr_float("beta", 1.0);
    if (beta == 0.0) continue; // C is not read (not even an inf or NaN in it)
    const bool along_m = c.elements() == 1 || (c.shape.back() == n && c.elements() == n);
    const bool full = !along_m && c.sym_shape() == out;
    if (!along_m && !full) continue;
    if (beta == 1.0 && (full || c.elements() == n)) continue; // already as the epilogue takes it
    std::vector<double> values = constant_as_double(c);
    if (along_m && values.size() == 1) values.assign(static_cast<size_t>(n), values[0]);
    for (double& v : values)
      v = static_cast<double>(static_cast<float>(beta)) * v;
    if (names.empty())
      for (const Tensor& t : graph.tensors)
        names.insert(t.name);
    Tensor scaled; // c and y refer into graph.tensors, which add_tensor may move: read first
    scaled.name = fresh_name(names, c.name + (beta == 1.0 ? "/row" : "/scaled"));
    scaled.dtype = DType::Float32;
    scaled.shape = along_m ? Shape{n} : c.shape;
    scaled.typed = true;
    scaled.constant = make_constant_from_double(DType::Float32, values);
    node.inputs[2] = graph.add_tensor(std::move(scaled));
    node.attrs["beta"] = Attribute{1.0};
    changed = true;
  }
  return changed;
}

// A Conv of one image (N = 1) whose every spatial extent is 1 in X and in its kernel (no
// padding, group 1, a float type the libraries take): a squeeze-and-excitation block's 1 x 1
// convolutions after its global pool, a classifier head written as a convolution. The output
// is then one dot product of X's channels with each row of W: a Linear layer, X [1, C, 1, ...]
// viewed as [1, C] times W [C', C] (the same bytes, one tensor per W) transposed, plus the
// bias, viewed back as [1, C', 1, ...]. As a one-row Gemm it is a matrix-vector product the
// planner stitches to the pool before it and the activation after it in one kernel. At N > 1
// the convolution stays: cuDNN's call also adds a residual of the pixels' shape, which a
// product's epilogue cannot read through the View.
bool convs_as_gemms(Graph& graph) {
  std::vector<int32_t> convs;
  for (size_t n = 0; n < graph.nodes.size(); ++n) {
    const Node& node = graph.nodes[n];
    if (node.removed || node.op != OpKind::Conv || node.inputs.size() < 2 ||
        node.outputs.size() != 1)
      continue;
    const Tensor &x = graph.tensor(node.inputs[0]), &w = graph.tensor(node.inputs[1]);
    const Tensor& y = graph.tensor(node.outputs[0]);
    if (!w.is_constant() || w.view_of != kNoTensor || x.shape.size() < 3 ||
        w.shape.size() != x.shape.size() || y.shape.size() != x.shape.size() ||
        w.dtype != x.dtype || y.dtype != x.dtype ||
        (x.dtype != DType::Float32 && x.dtype != DType::Float16 && x.dtype != DType::BFloat16))
      continue;
    const NodeContext ctx(graph, node);
    if (ctx.attr_int("group", 1) != 1) continue;
    const SymShape xs = x.sym_shape(), ys = y.sym_shape();
    bool ones = xs[0] == DimExpr(1) && w.shape[1] == x.shape[1] && xs[1].is_constant();
    for (size_t d = 2; d < xs.size(); ++d)
      ones = ones && xs[d] == DimExpr(1) && ys[d] == DimExpr(1) && w.shape[d] == 1;
    if (!ones) continue;
    const WindowParams window =
        read_window_params(ctx, std::vector<int64_t>(w.shape.begin() + 2, w.shape.end()));
    if (window.auto_pad == AutoPad::NotSet &&
        std::any_of(window.pads.begin(), window.pads.end(), [](int64_t p) { return p != 0; }))
      continue;
    if (node.inputs.size() > 2 && node.inputs[2] != kNoTensor) {
      const Tensor& b = graph.tensor(node.inputs[2]);
      if (b.dtype != x.dtype || b.shape != Shape{w.shape[0]}) continue;
    }
    convs.push_back(static_cast<int32_t>(n));
  }
  if (convs.empty()) return false;
  PassBuilder build(graph);
  std::map<TensorId, TensorId> matrix_of; // W -> its bytes as [C', C], one per W
  std::vector<std::vector<Node>> replacing(graph.nodes.size());
  for (int32_t n : convs) {
    const Node conv = graph.nodes[n];
    const std::string name = conv.name.empty() ? graph.tensor(conv.outputs[0]).name : conv.name;
    const SymShape xs = graph.tensor(conv.inputs[0]).sym_shape();
    const Shape ws = graph.tensor(conv.inputs[1]).shape;
    const TensorId y = conv.outputs[0];
    std::vector<Node>& added = replacing[static_cast<size_t>(n)];
    const TensorId rows = build.reshape(added, conv.inputs[0], {xs[0], xs[1]}, name + "/rows");
    auto [known, fresh] = matrix_of.emplace(conv.inputs[1], kNoTensor);
    if (fresh) {
      Tensor weight = graph.tensor(conv.inputs[1]); // the same bytes as [C', C]
      const TensorId matrix = build.tensor(weight.name + "/matrix", weight.dtype, {ws[0], ws[1]});
      graph.tensor(matrix).constant = weight.constant;
      known->second = matrix;
    }
    std::vector<TensorId> inputs = {rows, known->second};
    if (conv.inputs.size() > 2 && conv.inputs[2] != kNoTensor) inputs.push_back(conv.inputs[2]);
    const TensorId product =
        build.sym_tensor(name + "/product", graph.tensor(y).dtype, {xs[0], DimExpr(ws[0])});
    Node gemm = build.node(OpKind::Gemm, name, std::move(inputs), product);
    gemm.attrs["transB"] = Attribute{int64_t{1}};
    added.push_back(std::move(gemm));
    const TensorId target = build.shape_value(name + "/pixels", graph.tensor(y).sym_shape());
    added.push_back(build.node(OpKind::Reshape, name + "/pixels", {product, target}, y));
  }
  std::vector<Node> nodes;
  nodes.reserve(graph.nodes.size() + 3 * convs.size());
  for (size_t n = 0; n < graph.nodes.size(); ++n) {
    if (replacing[n].empty()) {
      nodes.push_back(std::move(graph.nodes[n]));
      continue;
    }
    for (Node& node : replacing[n])
      nodes.push_back(std::move(node));
  }
  graph.nodes = std::move(nodes);
  graph.compact();
  return true;
}
} // namespace

bool canonicalize(Graph& graph) {
  bool changed = convs_as_gemms(graph);
  changed = fold_gemm_beta(graph) || changed;
  {
    Chains chains(graph);
    for (Node& node : graph.nodes)
      changed = respell(graph, chains, node) || changed;
  }
  return raise_gelu(graph) || changed; // on the respelled graph's producers and consumers
}

} // namespace stitch
