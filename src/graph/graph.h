// The dataflow graph stitchc compiles: tensors with a dtype and a concrete shape, nodes that
// apply one operator of the op table (ops.def), and the model's inputs and outputs.
//
// Tensors and nodes are addressed by index. `Graph::nodes` is kept in topological order by
// every pass; removed nodes are dropped by `Graph::compact()`.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <variant>
#include <vector>

#include "graph/dim_expr.h"
#include "graph/dtype.h"
#include "graph/limits.h"
#include "graph/ops.h"

namespace stitch {

using Shape = std::vector<int64_t>;
using TensorId = int32_t;
constexpr TensorId kNoTensor = -1; // an omitted optional input or output

std::string shape_to_string(const Shape& s); // "[2,3,4]"
int64_t shape_elements(const Shape& s);      // checked product
Shape row_major_strides(const Shape& s);     // element strides of a dense, row-major tensor
// The Transpose permutations between channels-first [N, C, spatial...] and channels-last
// [N, spatial..., C] of `rank` axes: to channels-last [0, 2, ..., rank - 1, 1], and back
// [0, rank - 1, 1, ..., rank - 2].
std::vector<int64_t> channels_last_perm(size_t rank);
std::vector<int64_t> channels_first_perm(size_t rank);
// `want`, or `want_1`, `want_2`, ... : the first not in `taken`, which it is added to (names
// for the tensors a pass makes).
std::string fresh_name(std::set<std::string>& taken, const std::string& want);

// The bytes of a constant tensor (little-endian, dense, row-major).
struct ConstantData {
  std::string bytes;
};

struct Tensor {
  std::string name; // the ONNX value name (unique in the graph)
  DType dtype = DType::Float32;
  Shape shape;
  bool typed = false; // dtype and shape are known (set by the frontend or by infer-shapes)
  std::shared_ptr<const ConstantData> constant; // set for initializers and folded values
  // A view shares the storage of `view_of` and only reinterprets its shape (Reshape and its
  // kin become views; see make_views.h).
  TensorId view_of = kNoTensor;
  // Where the shape depends on the graph's symbolic dims: the shape as their expressions
  // (`shape` is then its value at the planning binding, Graph::planning_values). Empty for a
  // static shape.
  SymShape dims;
  // For a small integer tensor computed from symbolic dims (a Shape op's output and what is
  // computed from it): its elements as expressions; `constant` then holds their values at the
  // planning binding. Empty otherwise.
  std::vector<DimExpr> sym_values;

  bool is_dynamic() const { return !dims.empty(); }
  // Whether some element is computed from the symbols (not a constant at every binding).
  bool has_symbolic_values() const {
    for (const DimExpr& v : sym_values)
      if (!v.is_constant()) return true;
    return false;
  }
  // The shape as expressions: `dims`, or the static `shape`.
  SymShape sym_shape() const { return dims.empty() ? sym_shape_of(shape) : dims; }
  // Whether the shape equals `other`'s for every value of the symbols (not merely at the
  // planning binding), and whether dim `axis` is `value` for every value: the tests a pass
  // rewrites by.
  bool same_shape_as(const Tensor& other) const {
    return dims.empty() && other.dims.empty() ? shape == other.shape
                                              : sym_shape() == other.sym_shape();
  }
  bool dim_is(size_t axis, int64_t value) const {
    return dims.empty() ? shape[axis] == value : dims[axis] == DimExpr(value);
  }
  int64_t elements() const { return shape_elements(shape); }
  int64_t bytes() const;
  bool is_constant() const { return constant != nullptr; }
};

// An ONNX attribute value. Graph-valued attributes (If, Loop, Scan) are not kept: those ops
// are refused by the frontend.
struct Attribute {
  using Value = std::variant<int64_t, double, std::string, std::vector<int64_t>,
                             std::vector<double>, std::vector<std::string>, TensorId>;
  Value value;
  std::string kind_name() const; // "int", "float", "string", "ints", "floats", "strings", "tensor"
};

struct Node {
  OpKind op = OpKind::Identity;
  std::string name;              // the ONNX node name (may be empty in the model)
  std::vector<TensorId> inputs;  // kNoTensor for an omitted optional input
  std::vector<TensorId> outputs; // kNoTensor for an omitted optional output
  std::map<std::string, Attribute> attrs;
  int opset = 0;        // the default domain's opset the model imports
  bool removed = false; // dropped at the next Graph::compact()
};

// The inputs of `node` that are element values where a kernel evaluates it: a pointwise node's
// operands (not CastLike's target or Expand's shape; an omitted optional input stays in place as
// kNoTensor, so that operand k is input k), a reduction's data (not its axes), a Slice's data
// (not its starts, ends, axes and steps), and every input of any other node.
std::vector<TensorId> value_operands(const Node& node);

// The type a model declares for one of its outputs; checked against the inferred one.
struct DeclaredType {
  int onnx_elem_type = 0; // 0 when the model leaves it out
  bool has_shape = false;
  std::vector<int64_t> dims; // -1 where the model gives a symbolic or unknown dim
};

// A symbolic dim kept symbolic (`--dim seq=1..512@128`): the values it may take at run time,
// and the typical one, at which shapes are evaluated for planning.
struct SymbolicDim {
  std::string name;
  int64_t min = 0, max = 0, typical = 0;
};

class Graph {
public:
  std::string source_file; // the model file, for messages
  std::vector<Tensor> tensors;
  std::vector<Node> nodes; // topological order
  std::vector<TensorId> inputs;
  std::vector<TensorId> outputs;
  int opset = 0; // the default domain's opset
  std::map<TensorId, DeclaredType> declared_outputs;
  ModelLimits limits; // the caps the model was loaded under; shape inference checks them too
  std::vector<SymbolicDim> symbols; // the symbolic dims kept symbolic, in command-line order

  // Each symbol's range, and its typical value (the binding every `shape` is evaluated at).
  SymbolRanges symbol_ranges() const;
  SymbolValues planning_values() const;
  // `shape` at the planning binding.
  Shape planning_shape(const SymShape& shape) const;
  // A tensor's bytes at most, over every value of the symbols (each dim at its upper bound):
  // what memory plans for. Tensor::bytes() for a tensor of fixed shape.
  int64_t max_bytes(TensorId id) const;

  TensorId add_tensor(Tensor t);
  const Tensor& tensor(TensorId id) const;
  Tensor& tensor(TensorId id);

  // For each tensor, the node index that produces it, or -1.
  std::vector<int32_t> producers() const;
  // For each tensor, the indices of the nodes that read it (a node reading a tensor twice
  // appears once).
  std::vector<std::vector<int32_t>> consumers() const;
  bool is_graph_output(TensorId id) const;

  // Drop removed nodes and tensors no longer referenced; keeps order. Returns true if
  // anything was dropped.
  bool compact();
};

} // namespace stitch
