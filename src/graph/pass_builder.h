// What a pass that adds nodes to the graph needs (merge-matmuls, fold-repeated-heads): tensors
// with fresh names, int64 constant lists (Slice's and Reshape's parameters) and nodes. The nodes
// take opset-13 semantics (parameters as inputs) whatever opset the model declares, so that a
// pass writes one form.
#pragma once

#include <set>
#include <string>
#include <vector>

#include "graph/graph.h"

namespace stitch {

class PassBuilder {
public:
  static constexpr int kOpset = 13;

  explicit PassBuilder(Graph& graph);

  // A typed tensor named `name` (or `name_1`, ... when taken).
  TensorId tensor(const std::string& name, DType dtype, Shape shape);
  // One whose shape may be symbolic: `shape` at the planning binding, and `dims`.
  TensorId sym_tensor(const std::string& name, DType dtype, const SymShape& shape);
  // A constant int64 list.
  TensorId ints(const std::string& name, const std::vector<int64_t>& values);
  // A node writing `output` (not yet in the graph).
  Node node(OpKind op, const std::string& name, std::vector<TensorId> inputs,
            TensorId output) const;
  // A constant int64 list of `shape`, symbolic where it is (set_shape_value).
  TensorId shape_value(const std::string& name, const SymShape& shape);
  // Reshape(from, shape) into a new tensor, appended to `added`. The target may be symbolic
  // (the new tensor's dims follow after the pass: derive_dims).
  TensorId reshape(std::vector<Node>& added, TensorId from, const SymShape& shape,
                   const std::string& name);
  // Slice(source, [begin, end) of `axis` by `step`) writing `output` (not yet in the graph).
  Node slice(const std::string& name, TensorId source, int64_t begin, int64_t end, int64_t axis,
             TensorId output, int64_t step = 1);

private:
  Graph& g_;
  std::set<std::string> names_;
};

// The Add that is the only reader of `y` (not a graph output, of rank 1 or more) and adds a
// constant row of y's dtype, shape [N] or [1, ..., N] for y's last axis N, with y's shape as its
// result: a Linear layer's bias after its MatMul. -1 when there is none; else `row` is that
// operand.
int32_t row_bias_add(const Graph& g, const std::vector<std::vector<int32_t>>& consumers,
                     const std::set<TensorId>& graph_outputs, TensorId y, TensorId& row);

} // namespace stitch
