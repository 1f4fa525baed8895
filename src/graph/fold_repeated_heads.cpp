// fold-repeated-heads (fold_repeated_heads.h).
#include "graph/fold_repeated_heads.h"

#include <algorithm>

#include <fmt/format.h>

#include "graph/infer_context.h"
#include "graph/op_params.h"
#include "graph/pass_builder.h"
#include "graph/topo_sort.h"

namespace stitch {

namespace {

class FoldRepeatedHeads {
public:
  explicit FoldRepeatedHeads(Graph& graph) : g_(graph), build_(graph) {
    producer_ = g_.producers();
    consumers_ = g_.consumers();
    for (TensorId t : g_.outputs)
      graph_output_.insert(t);
  }

  bool run() {
    bool changed = false;
    const size_t count = g_.nodes.size();
    for (size_t n = 0; n < count; ++n)
      changed = fold(static_cast<int32_t>(n)) || changed;
    if (!changed) return false;
    g_.compact();
    topo_sort(g_);
    return true;
  }

private:
  const Node* producer(TensorId t, OpKind op) const {
    const int32_t p = t == kNoTensor ? -1 : producer_[t];
    if (p < 0 || g_.nodes[p].op != op || g_.nodes[p].outputs.size() != 1) return nullptr;
    return &g_.nodes[p];
  }

  struct Scaling {
    Node node;
    size_t operand; // the input that is scaled (the other is the scalar)
  };

  // The scalar Muls and Divs (by one element of the same type) `b` is read through, each read
  // alone, appended from `b` back; `b` becomes the tensor they scale. False when one of them is
  // read by more than the next.
  bool take_scalings(TensorId& b, std::vector<Scaling>& scalings) const {
    for (;;) {
      const int32_t p = producer_[b];
      if (p < 0) return true;
      const Node& node = g_.nodes[p];
      if ((node.op != OpKind::Mul && node.op != OpKind::Div) || node.inputs.size() != 2 ||
          node.outputs.size() != 1)
        return true;
      auto scalar = [&](TensorId c) {
        const Tensor& t = g_.tensor(c);
        return !t.is_dynamic() && t.elements() == 1 && t.dtype == g_.tensor(b).dtype;
      };
      size_t operand = 2;
      if (scalar(node.inputs[1]))
        operand = 0;
      else if (node.op == OpKind::Mul && scalar(node.inputs[0]))
        operand = 1;
      if (operand == 2 || !g_.tensor(node.inputs[operand]).same_shape_as(g_.tensor(b))) return true;
      if (consumers_[b].size() != 1 || graph_output_.count(b)) return false;
      scalings.push_back({node, operand});
      b = node.inputs[operand];
    }
  }

  // Folds MatMul `n` when its B is a repeat of key-value heads (read directly or through a
  // Transpose of its last two axes, and scalar Muls and Divs, which move onto the key-value
  // heads' operand: a scalar times a repeated element is the repeat of the scaled one).
  bool fold(int32_t n) {
    const Node mm = g_.nodes[n];
    if (mm.op != OpKind::MatMul || mm.inputs.size() != 2 || mm.outputs.size() != 1) return false;
    TensorId b = mm.inputs[1];
    std::vector<Scaling> scalings; // from the product back
    if (!take_scalings(b, scalings)) return false;
    bool transposed = false;
    if (const Node* t = producer(b, OpKind::Transpose)) {
      const std::vector<int64_t> perm = read_perm(NodeContext(g_, *t));
      const auto r = static_cast<int64_t>(perm.size());
      for (int64_t i = 0; i < r; ++i)
        if (perm[i] != (i < r - 2 ? i : (i == r - 2 ? r - 1 : r - 2))) return false;
      if (consumers_[b].size() != 1 || graph_output_.count(b)) return false;
      transposed = true;
      b = t->inputs[0];
      if (!take_scalings(b, scalings)) return false;
    }
    const Node* merge = producer(b, OpKind::Reshape);
    if (merge == nullptr) return false;
    const Node* expand = producer(merge->inputs[0], OpKind::Expand);
    if (expand == nullptr) return false;
    // Copies: the tensors move as the pass adds more. The shapes are compared as expressions,
    // so that dims equal only at the planning values of symbolic dims do not pass.
    const SymShape heads = g_.tensor(b).sym_shape();                     // [..., KV * rep, S, D]
    const SymShape repeated = g_.tensor(expand->outputs[0]).sym_shape(); // [..., KV, rep, S, D]
    const SymShape single = g_.tensor(expand->inputs[0]).sym_shape();    // [..., KV, 1, S, D]
    const TensorId expanded = expand->inputs[0];
    const size_t rank = heads.size();
    if (rank < 3 || repeated.size() != rank + 1 || single.size() != rank + 1) return false;
    const size_t kv = rank - 3, rep = rank - 2; // axes of `repeated`
    for (size_t i = 0; i < repeated.size(); ++i)
      if (i != rep && single[i] != repeated[i]) return false;
    if (!repeated[kv].is_constant() || !repeated[rep].is_constant()) return false;
    if (single[rep] != DimExpr(1) || repeated[rep].constant_value() < 2) return false;
    if (!std::equal(heads.begin(), heads.begin() + static_cast<int64_t>(kv), repeated.begin()) ||
        heads[kv] != repeated[kv] * repeated[rep] || heads[kv + 1] != repeated[rep + 1] ||
        heads[kv + 2] != repeated[rep + 2])
      return false;
    // A: [..., KV * rep, M, K] with the same leading axes.
    const Tensor a = g_.tensor(mm.inputs[0]);
    const SymShape a_dims = a.sym_shape();
    if (a.shape.size() != rank || a.dtype != g_.tensor(b).dtype ||
        !std::equal(a_dims.begin(), a_dims.begin() + static_cast<int64_t>(kv + 1), heads.begin()) ||
        a.elements() == 0 || g_.tensor(mm.outputs[0]).elements() == 0)
      return false;
    const DimExpr kv_heads = repeated[kv], rep_count = repeated[rep];
    const DimExpr m = a_dims[rank - 2], k = a_dims[rank - 1];

    // X: the key-value heads [..., KV, S, D] (the Expand's input without its size-1 axis).
    SymShape x_shape(single.begin(), single.begin() + static_cast<int64_t>(rep));
    x_shape.insert(x_shape.end(), single.begin() + static_cast<int64_t>(rep) + 1, single.end());
    std::vector<Node> added;
    const std::string base = mm.name + "/grouped";
    const DType dtype = a.dtype;
    const TensorId x = build_.reshape(added, expanded, x_shape, base + "/kv");
    TensorId rhs = x;
    if (transposed) {
      SymShape t_shape = x_shape;
      std::swap(t_shape[rank - 1], t_shape[rank - 2]);
      rhs = build_.sym_tensor(base + "/kv_t", dtype, t_shape);
      Node t = build_.node(OpKind::Transpose, base + "/kv_t", {x}, rhs);
      std::vector<int64_t> perm;
      for (size_t i = 0; i < rank; ++i)
        perm.push_back(static_cast<int64_t>(i));
      std::swap(perm[rank - 1], perm[rank - 2]);
      t.attrs["perm"] = Attribute{perm};
      added.push_back(std::move(t));
    }
    // The scalings, in their order, on the key-value heads' operand.
    for (size_t i = scalings.size(); i-- > 0;) {
      const std::string name = fmt::format("{}/kv_scaled_{}", base, scalings.size() - 1 - i);
      const TensorId scaled = build_.sym_tensor(name, dtype, g_.tensor(rhs).sym_shape());
      std::vector<TensorId> inputs = scalings[i].node.inputs;
      inputs[scalings[i].operand] = rhs;
      added.push_back(build_.node(scalings[i].node.op, name, inputs, scaled));
      rhs = scaled;
    }
    SymShape a_shape(a_dims.begin(), a_dims.begin() + static_cast<int64_t>(kv));
    a_shape.insert(a_shape.end(), {kv_heads, rep_count * m, k});
    const TensorId lhs = build_.reshape(added, mm.inputs[0], a_shape, base + "/q");
    const SymShape y_shape = g_.tensor(mm.outputs[0]).sym_shape();
    SymShape p_shape(a_shape.begin(), a_shape.end() - 1);
    p_shape.push_back(y_shape.back());
    const TensorId product = build_.sym_tensor(base, dtype, p_shape);
    added.push_back(build_.node(OpKind::MatMul, base, {lhs, rhs}, product));
    added.push_back(build_.node(OpKind::Reshape, mm.name,
                                {product, build_.shape_value(base + "/shape", y_shape)},
                                mm.outputs[0]));
    // The new nodes go last (topo_sort places them); later folds look at other products.
    g_.nodes[n].removed = true;
    for (Node& node : added)
      g_.nodes.push_back(std::move(node));
    return true;
  }

  Graph& g_;
  PassBuilder build_;
  std::vector<int32_t> producer_;
  std::vector<std::vector<int32_t>> consumers_;
  std::set<TensorId> graph_output_;
};

} // namespace

bool fold_repeated_heads(Graph& graph) { return FoldRepeatedHeads(graph).run(); }

} // namespace stitch
