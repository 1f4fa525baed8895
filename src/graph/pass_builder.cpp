// PassBuilder (pass_builder.h).
#include "graph/pass_builder.h"

#include <algorithm>

#include "graph/constant.h"

namespace stitch {

PassBuilder::PassBuilder(Graph& graph) : g_(graph) {
  for (const Tensor& t : g_.tensors)
    names_.insert(t.name);
}

TensorId PassBuilder::tensor(const std::string& name, DType dtype, Shape shape) {
  Tensor t;
  t.name = fresh_name(names_, name);
  t.dtype = dtype;
  t.shape = std::move(shape);
  t.typed = true;
  return g_.add_tensor(std::move(t));
}

TensorId PassBuilder::sym_tensor(const std::string& name, DType dtype, const SymShape& shape) {
  const TensorId t = tensor(name, dtype, g_.planning_shape(shape));
  if (!is_static(shape)) g_.tensor(t).dims = shape;
  return t;
}

TensorId PassBuilder::ints(const std::string& name, const std::vector<int64_t>& values) {
  const TensorId t = tensor(name, DType::Int64, {static_cast<int64_t>(values.size())});
  g_.tensor(t).constant = make_constant_from_int64(DType::Int64, values);
  return t;
}

Node PassBuilder::node(OpKind op, const std::string& name, std::vector<TensorId> inputs,
                       TensorId output) const {
  Node n;
  n.op = op;
  n.name = name;
  n.opset = std::max(g_.opset, kOpset);
  n.inputs = std::move(inputs);
  n.outputs = {output};
  return n;
}

TensorId PassBuilder::shape_value(const std::string& name, const SymShape& shape) {
  const TensorId t = tensor(name, DType::Int64, {});
  set_shape_value(g_, g_.tensor(t), shape);
  return t;
}

TensorId PassBuilder::reshape(std::vector<Node>& added, TensorId from, const SymShape& shape,
                              const std::string& name) {
  const TensorId to = sym_tensor(name, g_.tensor(from).dtype, shape);
  const TensorId target = shape_value(name + "/shape", shape);
  added.push_back(node(OpKind::Reshape, name, {from, target}, to));
  return to;
}

Node PassBuilder::slice(const std::string& name, TensorId source, int64_t begin, int64_t end,
                        int64_t axis, TensorId output, int64_t step) {
  std::vector<TensorId> inputs = {source, ints(name + "/starts", {begin}),
                                  ints(name + "/ends", {end}), ints(name + "/axes", {axis})};
  if (step != 1) inputs.push_back(ints(name + "/steps", {step}));
  return node(OpKind::Slice, name, std::move(inputs), output);
}

int32_t row_bias_add(const Graph& g, const std::vector<std::vector<int32_t>>& consumers,
                     const std::set<TensorId>& graph_outputs, TensorId y, TensorId& row) {
  if (graph_outputs.count(y) || consumers[y].size() != 1 || g.tensor(y).shape.empty()) return -1;
  const int32_t add = consumers[y][0];
  const Node& node = g.nodes[add];
  if (node.op != OpKind::Add || node.inputs.size() != 2 || node.outputs.size() != 1) return -1;
  const TensorId other = node.inputs[0] == y ? node.inputs[1] : node.inputs[0];
  if (other == y) return -1;
  const Tensor& r = g.tensor(other);
  const int64_t n = g.tensor(y).shape.back();
  if (!r.is_constant() || r.view_of != kNoTensor || r.dtype != g.tensor(y).dtype ||
      r.shape.empty() || r.shape.back() != n || r.elements() != n ||
      !g.tensor(node.outputs[0]).same_shape_as(g.tensor(y)))
    return -1;
  row = other;
  return add;
}

} // namespace stitch
