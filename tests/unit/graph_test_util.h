// Shared helpers for the graph unit tests (shape rules, folding): a one-node graph built by
// hand, whose rule and evaluator are run straight from the op table.
#pragma once

#include <catch2/catch.hpp>

#include <string>
#include <utility>
#include <vector>

#include "graph/constant.h"
#include "graph/fold.h"
#include "graph/shape_rules.h"

namespace stitch::test {

using Ints = std::vector<int64_t>;
using Doubles = std::vector<double>;

// A one-node graph under construction: inputs first, then `node`, then `infer` or `fold`.
struct NodeUnderTest {
  Graph graph;
  int opset = 17;
  std::string node_name = "node_under_test";

  // A typed input without a value (a value computed at run time).
  TensorId input(DType dtype, Shape shape) {
    Tensor t;
    t.name = "in" + std::to_string(graph.tensors.size());
    t.dtype = dtype;
    t.shape = std::move(shape);
    t.typed = true;
    return graph.add_tensor(std::move(t));
  }
  TensorId ints(Shape shape, const std::vector<int64_t>& values, DType dtype = DType::Int64) {
    TensorId id = input(dtype, std::move(shape));
    graph.tensor(id).constant = make_constant_from_int64(dtype, values);
    return id;
  }
  TensorId floats(Shape shape, const std::vector<double>& values, DType dtype = DType::Float32) {
    TensorId id = input(dtype, std::move(shape));
    graph.tensor(id).constant = make_constant_from_double(dtype, values);
    return id;
  }
  TensorId ints1(const std::vector<int64_t>& v) {
    return ints({static_cast<int64_t>(v.size())}, v);
  }

  // The node under test, named `node_name`, with outputs out0, out1, ...
  Node& node(OpKind op, std::vector<TensorId> inputs, int outputs = 1) {
    Node n;
    n.op = op;
    n.name = node_name;
    n.inputs = std::move(inputs);
    n.opset = opset;
    for (int i = 0; i < outputs; ++i) {
      Tensor t;
      t.name = "out" + std::to_string(i);
      n.outputs.push_back(graph.add_tensor(std::move(t)));
    }
    graph.nodes.push_back(std::move(n));
    return graph.nodes.back();
  }

  // Runs the node's shape rule.
  void infer() {
    InferContext ctx(graph, graph.nodes.back());
    shape_rule(graph.nodes.back().op)(ctx);
  }
  // Runs the rule, then the evaluator; stores the values on the outputs.
  FoldResult fold() {
    infer();
    Node& n = graph.nodes.back();
    FoldResult r = fold_function(n.op)(graph, n);
    for (size_t i = 0; i < r.size(); ++i)
      if (n.outputs[i] != kNoTensor) graph.tensor(n.outputs[i]).constant = r[i];
    return r;
  }

  const Tensor& out(int i = 0) { return graph.tensor(graph.nodes.back().outputs[i]); }
  std::vector<int64_t> out_ints(int i = 0) { return constant_as_int64(out(i)); }
  std::vector<double> out_floats(int i = 0) { return constant_as_double(out(i)); }
};

inline void set(Node& n, const std::string& name, Attribute::Value v) {
  n.attrs[name] = Attribute{std::move(v)};
}

// The tensor named `name` (the test fails where there is none).
inline const Tensor& find_tensor(const Graph& g, const std::string& name) {
  for (const Tensor& t : g.tensors)
    if (t.name == name) return t;
  FAIL("no tensor " << name);
  return g.tensors.front();
}

} // namespace stitch::test

// The rule refuses the node with a UserError whose message names it and holds `fragment`.
#define REQUIRE_REFUSED(t, fragment)                                                               \
  do {                                                                                             \
    REQUIRE_THROWS_AS((t).infer(), ::stitch::UserError);                                           \
    REQUIRE_THROWS_WITH((t).infer(),                                                               \
                        Catch::Contains("node 'node_under_test'") && Catch::Contains(fragment));   \
  } while (0)
