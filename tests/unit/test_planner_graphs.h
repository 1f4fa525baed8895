// Graphs for the planner tests, built in C++ node by node and typed by the shape rules
// (infer_shapes), plus the helpers the planner tests share.
#pragma once

#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "graph/constant.h"
#include "graph/infer_shapes.h"
#include "planner/cost_model.h"
#include "planner/legality.h"
#include "planner/planner.h"

namespace stitch::test {

class GraphBuilder {
public:
  explicit GraphBuilder(int opset = 17) { g_.opset = opset; }

  TensorId input(Shape shape, DType dtype = DType::Float32) {
    TensorId t = tensor(dtype, std::move(shape));
    g_.inputs.push_back(t);
    return t;
  }
  TensorId constant(Shape shape, float value) {
    TensorId t = tensor(DType::Float32, shape);
    g_.tensor(t).constant = make_constant_from_double(
        DType::Float32, std::vector<double>(shape_elements(shape), value));
    return t;
  }
  TensorId constant_ints(const std::vector<int64_t>& values) {
    TensorId t = tensor(DType::Int64, {static_cast<int64_t>(values.size())});
    g_.tensor(t).constant = make_constant_from_int64(DType::Int64, values);
    return t;
  }
  // Adds a node named `name` reading `inputs`; returns its output 0.
  TensorId op(OpKind kind, std::vector<TensorId> inputs, const std::string& name,
              std::map<std::string, Attribute::Value> attrs = {}) {
    Node n;
    n.op = kind;
    n.name = name;
    n.opset = g_.opset;
    n.inputs = std::move(inputs);
    for (auto& [key, value] : attrs)
      n.attrs[key] = Attribute{value};
    Tensor out;
    out.name = name + "_out";
    n.outputs.push_back(g_.add_tensor(std::move(out)));
    g_.nodes.push_back(std::move(n));
    return g_.nodes.back().outputs[0];
  }
  void output(TensorId t) { g_.outputs.push_back(t); }
  // Infers every shape; the graph is then ready for the planners.
  Graph finish() {
    infer_shapes(g_);
    return g_;
  }

private:
  TensorId tensor(DType dtype, Shape shape) {
    Tensor t;
    t.name = "t" + std::to_string(g_.tensors.size());
    t.dtype = dtype;
    t.shape = std::move(shape);
    t.typed = true;
    return g_.add_tensor(std::move(t));
  }
  Graph g_;
};

inline std::vector<int64_t> last_axis() { return {-1}; }

// The expanded LayerNorm of x over its last axis, as exporters write it; returns y.
inline TensorId layer_norm_chain(GraphBuilder& b, TensorId x, int64_t width, const std::string& p) {
  TensorId mean = b.op(OpKind::ReduceMean, {x}, p + "mean", {{"axes", last_axis()}});
  TensorId diff = b.op(OpKind::Sub, {x, mean}, p + "sub");
  TensorId sq = b.op(OpKind::Pow, {diff, b.constant({}, 2.0f)}, p + "pow");
  TensorId var = b.op(OpKind::ReduceMean, {sq}, p + "var", {{"axes", last_axis()}});
  TensorId eps = b.op(OpKind::Add, {var, b.constant({}, 1e-5f)}, p + "eps");
  TensorId std_dev = b.op(OpKind::Sqrt, {eps}, p + "sqrt");
  TensorId norm = b.op(OpKind::Div, {diff, std_dev}, p + "div");
  TensorId scaled = b.op(OpKind::Mul, {norm, b.constant({width}, 1.5f)}, p + "gamma");
  return b.op(OpKind::Add, {scaled, b.constant({width}, 0.25f)}, p + "beta");
}

// Softmax of x over its last axis as lower-composites writes it: ReduceMax, Sub, Exp,
// ReduceSum, Div. The nodes are named p + "_max", "_shift", "_exp", "_sum" and p (the Div);
// returns y.
inline TensorId softmax_chain(GraphBuilder& b, TensorId x, const std::string& p) {
  TensorId max = b.op(OpKind::ReduceMax, {x}, p + "_max", {{"axes", last_axis()}});
  TensorId shifted = b.op(OpKind::Sub, {x, max}, p + "_shift");
  TensorId exp = b.op(OpKind::Exp, {shifted}, p + "_exp");
  TensorId sum = b.op(OpKind::ReduceSum, {exp, b.constant_ints(last_axis())}, p + "_sum");
  return b.op(OpKind::Div, {exp, sum}, p);
}

inline std::vector<std::string> softmax_nodes(const std::string& p) {
  return {p + "_max", p + "_shift", p + "_exp", p + "_sum", p};
}

// The modeled cost of a plan (the sum of its groups').
inline int64_t plan_cost(const FusionPlan& plan) {
  int64_t cost = 0;
  for (const FusionGroup& group : plan.groups)
    cost += group.estimated_cost;
  return cost;
}

// Per node, the position of its group in the plan.
inline std::vector<int> group_of_nodes(const Graph& g, const FusionPlan& plan) {
  std::vector<int> group_of(g.nodes.size(), -1);
  for (size_t gi = 0; gi < plan.groups.size(); ++gi)
    for (int32_t n : plan.groups[gi].nodes)
      group_of[n] = static_cast<int>(gi);
  return group_of;
}

inline int32_t node_named(const Graph& g, const std::string& name) {
  for (size_t n = 0; n < g.nodes.size(); ++n)
    if (g.nodes[n].name == name) return static_cast<int32_t>(n);
  FAIL("no node named " << name);
  return -1;
}

} // namespace stitch::test
