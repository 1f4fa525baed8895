// views-after-epilogues: see views_after_epilogues.h.
#include "graph/views_after_epilogues.h"

#include <set>
#include <string>
#include <vector>

#include "graph/infer_context.h"
#include "graph/ops.h"
#include "graph/pass_builder.h"

namespace stitch {

namespace {

bool is_product(OpKind op) { return op == OpKind::MatMul || op == OpKind::Gemm; }

// Relu, or a Gelu of the tanh form: what a library call's epilogue applies (the erf Gelu is
// not; the planner keeps it in a generated kernel).
bool epilogue_activation(const Graph& graph, const Node& node) {
  if (node.op == OpKind::Relu) return true;
  return node.op == OpKind::Gelu &&
         NodeContext(graph, node).attr_string("approximate", "none") == "tanh";
}

class Mover {
public:
  explicit Mover(Graph& graph) : g_(graph), consumers_(graph.consumers()) {
    producer_.assign(g_.tensors.size(), -1);
    for (size_t n = 0; n < g_.nodes.size(); ++n)
      for (TensorId t : g_.nodes[n].outputs)
        if (t != kNoTensor) producer_[t] = static_cast<int32_t>(n);
    for (TensorId t : g_.outputs)
      graph_outputs_.insert(t);
    for (const Tensor& t : g_.tensors)
      names_.insert(t.name);
  }

  bool run() {
    bool changed = false;
    for (size_t v = 0; v < g_.nodes.size(); ++v) {
      if (g_.nodes[v].op != OpKind::View) continue;
      const int32_t p = movable_after(static_cast<int32_t>(v));
      if (p < 0) continue;
      move(static_cast<int32_t>(v), p);
      changed = true;
      // The View now sits where the node was, later in the order: the loop reaches it again
      // there, with the node after it next.
    }
    return changed;
  }

private:
  // Whether `t` is a product's result, or that of epilogue nodes after one, each read only by
  // the next: what a library call could write.
  bool from_product(TensorId t) const {
    for (;;) {
      const int32_t n = producer_[t];
      if (n < 0) return false;
      const Node& node = g_.nodes[n];
      if (is_product(node.op)) return true;
      TensorId row;
      const TensorId in = node.inputs.empty() ? kNoTensor : node.inputs[0];
      const bool activation = epilogue_activation(g_, node);
      if (!activation) {
        // A bias Add: whichever operand is not the row.
        bool found = false;
        for (TensorId operand : node.inputs)
          if (operand != kNoTensor && producer_[operand] >= 0 &&
              row_bias_add(g_, consumers_, graph_outputs_, operand, row) == n) {
            t = operand;
            found = true;
            break;
          }
        if (!found) return false;
      } else {
        if (in == kNoTensor || consumers_[in].size() != 1 || graph_outputs_.count(in)) return false;
        t = in;
      }
    }
  }

  // The node after View `v` that moves before it, or -1.
  int32_t movable_after(int32_t v) const {
    const Node& view = g_.nodes[v];
    const TensorId x = view.inputs[0], w = view.outputs[0];
    if (consumers_[x].size() != 1 || graph_outputs_.count(x) || !from_product(x)) return -1;
    if (consumers_[w].size() != 1 || graph_outputs_.count(w)) return -1;
    const int32_t p = consumers_[w][0];
    const Node& node = g_.nodes[p];
    if (node.outputs.size() != 1) return -1;
    if (epilogue_activation(g_, node)) return node.inputs[0] == w ? p : -1;
    TensorId row;
    if (row_bias_add(g_, consumers_, graph_outputs_, w, row) != p) return -1;
    // The row broadcasts along the last axis, which the View must keep, and adds no axes to the
    // product's (a row [1, 1, N] against [M, N] would widen the result).
    const Tensor &in = g_.tensor(x), &out = g_.tensor(w);
    const int64_t n = out.shape.back();
    if (in.shape.empty() || g_.tensor(row).shape.size() > in.shape.size() ||
        !in.dim_is(in.shape.size() - 1, n) || !out.dim_is(out.shape.size() - 1, n))
      return -1;
    return p;
  }

  // Node `p` reads the View's input instead, into a new tensor of its shape, and the View
  // writes p's result from it; p takes the View's place in the order (its other operand is a
  // constant), the View p's.
  void move(int32_t v, int32_t p) {
    const TensorId x = g_.nodes[v].inputs[0], w = g_.nodes[v].outputs[0];
    const TensorId y = g_.nodes[p].outputs[0];
    Tensor moved = g_.tensor(x);
    moved.name = fresh_name(names_, g_.tensor(y).name + "/unviewed");
    moved.dtype = g_.tensor(y).dtype;
    moved.view_of = kNoTensor;
    moved.constant = nullptr;
    moved.sym_values.clear();
    const TensorId u = g_.add_tensor(std::move(moved));
    for (TensorId& input : g_.nodes[p].inputs)
      if (input == w) input = x;
    g_.nodes[p].outputs[0] = u;
    Node& view = g_.nodes[v];
    view.inputs[0] = u;
    view.outputs[0] = y;
    view.attrs["shape"] = Attribute{g_.tensor(y).shape};
    g_.tensor(y).view_of = u;
    std::swap(g_.nodes[v], g_.nodes[p]);
    // The maps, for the nodes' new places and tensors (w is read by no one now).
    consumers_.resize(g_.tensors.size());
    producer_.resize(g_.tensors.size(), -1);
    consumers_[x] = {v};
    consumers_[u] = {p};
    for (TensorId operand : g_.nodes[v].inputs)
      if (operand != x && operand != kNoTensor)
        for (int32_t& c : consumers_[operand])
          if (c == p) c = v;
    consumers_[w].clear();
    producer_[u] = v;
    producer_[y] = p;
    producer_[w] = -1;
  }

  Graph& g_;
  std::vector<std::vector<int32_t>> consumers_;
  std::vector<int32_t> producer_;
  std::set<TensorId> graph_outputs_;
  std::set<std::string> names_;
};

} // namespace

bool views_after_epilogues(Graph& graph) {
  if (!Mover(graph).run()) return false;
  graph.compact();
  return true;
}

} // namespace stitch
