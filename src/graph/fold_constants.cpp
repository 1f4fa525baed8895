// fold-constants: drop nodes whose outputs are all constant, except that a shared weight is
// never stored again transposed (fold_constants.h).
#include "graph/fold_constants.h"

#include <set>

#include "graph/constant.h"
#include "graph/infer_context.h"

namespace stitch {

namespace {

// The MatMuls reading `transpose`'s result as B, when it is a Transpose (perm [1, 0]) of a
// 2-D float32 weight W that other nodes read too, and every reader of the result is such a
// MatMul with a float32 A of two or more axes; else nothing.
std::vector<int32_t> transposed_weight_readers(const Graph& g,
                                               const std::vector<std::vector<int32_t>>& readers,
                                               const Node& transpose) {
  if (transpose.op != OpKind::Transpose || transpose.inputs.size() != 1 || transpose.opset < 5)
    return {};
  const TensorId w = transpose.inputs[0], t = transpose.outputs[0];
  const Tensor& weight = g.tensor(w);
  if (!weight.is_constant() || weight.view_of != kNoTensor || weight.shape.size() != 2 ||
      weight.dtype != DType::Float32 || readers[w].size() < 2)
    return {};
  const std::vector<int64_t> perm = NodeContext(g, transpose).attr_ints("perm", {1, 0});
  if (perm != std::vector<int64_t>{1, 0} || readers[t].empty()) return {};
  for (TensorId out : g.outputs)
    if (out == t) return {};
  for (int32_t r : readers[t]) {
    const Node& matmul = g.nodes[r];
    if (matmul.op != OpKind::MatMul || matmul.inputs.size() != 2 || matmul.inputs[1] != t ||
        matmul.inputs[0] == t)
      return {};
    const Tensor& a = g.tensor(matmul.inputs[0]);
    if (a.dtype != DType::Float32 || a.shape.size() < 2 ||
        g.tensor(matmul.outputs[0]).is_constant())
      return {};
  }
  return readers[t];
}

class Rewriter {
public:
  explicit Rewriter(Graph& g) : g_(g) {
    for (const Tensor& t : g.tensors)
      names_.insert(t.name);
  }

  // MatMul(A, Transpose(W)) as Gemm(A, W, transB = 1), appended to `out`: A flattened to
  // [M, K] before and the [M, N] product reshaped to the MatMul's result after, when A has more
  // than two axes (both become views).
  void rewrite(Node matmul, TensorId w, std::vector<Node>& out) {
    const TensorId a = matmul.inputs[0], y = matmul.outputs[0];
    const Shape a_shape = g_.tensor(a).shape, y_shape = g_.tensor(y).shape;
    const std::string base = matmul.name.empty() ? g_.tensor(y).name : matmul.name;
    Node gemm = matmul;
    gemm.op = OpKind::Gemm;
    gemm.attrs = {{"transB", Attribute{int64_t{1}}}};
    if (a_shape.size() == 2) {
      gemm.inputs = {a, w};
      out.push_back(std::move(gemm));
      return;
    }
    const int64_t k = a_shape.back(), n = y_shape.back();
    const int64_t m = shape_elements(a_shape) / std::max<int64_t>(k, 1);
    const TensorId flat = tensor(base + "/A", DType::Float32, {m, k});
    Node flatten = node(OpKind::Flatten, base + "/Flatten", {a}, {flat}, matmul.opset);
    flatten.attrs["axis"] = Attribute{static_cast<int64_t>(a_shape.size() - 1)};
    out.push_back(std::move(flatten));
    const TensorId product = tensor(base + "/Y", DType::Float32, {m, n});
    gemm.inputs = {flat, w};
    gemm.outputs = {product};
    out.push_back(std::move(gemm));
    const TensorId dims =
        tensor(base + "/Shape", DType::Int64, {static_cast<int64_t>(y_shape.size())});
    set_shape_value(g_, g_.tensor(dims), g_.tensor(y).sym_shape());
    out.push_back(node(OpKind::Reshape, base + "/Reshape", {product, dims}, {y}, matmul.opset));
  }

private:
  TensorId tensor(const std::string& name, DType dtype, Shape shape) {
    std::string unique = name;
    for (int i = 1; !names_.insert(unique).second; ++i)
      unique = name + "_" + std::to_string(i);
    Tensor t;
    t.name = unique;
    t.dtype = dtype;
    t.shape = std::move(shape);
    t.typed = true;
    return g_.add_tensor(std::move(t));
  }

  static Node node(OpKind op, std::string name, std::vector<TensorId> inputs,
                   std::vector<TensorId> outputs, int opset) {
    Node n;
    n.op = op;
    n.name = std::move(name);
    n.inputs = std::move(inputs);
    n.outputs = std::move(outputs);
    n.opset = opset;
    return n;
  }

  Graph& g_;
  std::set<std::string> names_;
};

} // namespace

bool fold_constants(Graph& graph) {
  bool changed = false;
  // Shared weights read transposed by MatMuls: those MatMuls, and the weight each reads.
  std::vector<std::vector<int32_t>> readers = graph.consumers();
  std::vector<TensorId> transposed_weight(graph.nodes.size(), kNoTensor);
  for (const Node& node : graph.nodes)
    for (int32_t r : transposed_weight_readers(graph, readers, node))
      transposed_weight[r] = node.inputs[0];
  std::vector<Node> nodes;
  Rewriter rewriter(graph);
  for (size_t i = 0; i < graph.nodes.size(); ++i) {
    Node& node = graph.nodes[i];
    if (transposed_weight[i] != kNoTensor) {
      rewriter.rewrite(std::move(node), transposed_weight[i], nodes);
      changed = true;
      continue;
    }
    bool all_constant = true;
    for (TensorId t : node.outputs)
      all_constant = all_constant && (t == kNoTensor || graph.tensor(t).is_constant());
    if (all_constant) {
      changed = true;
      continue;
    }
    nodes.push_back(std::move(node));
  }
  graph.nodes = std::move(nodes);
  graph.compact();
  return changed;
}

} // namespace stitch
