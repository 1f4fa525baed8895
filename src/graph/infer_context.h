// What a shape rule or a host evaluator sees of one node: its inputs' dtypes, shapes and
// (when constant) values, its attributes with the ONNX defaults supplied by the caller, and,
// for a shape rule, where to put the outputs. Every check fails through `fail`, which names
// the node in a user error.
//
// NodeContext reads; InferContext (a shape rule's view) also writes the outputs' types. The
// folds read a node through NodeContext too, so that an operand is parsed one way only
// (see op_params.h).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "graph/error.h"
#include "graph/graph.h"

namespace stitch {

// Where an error about `node` happened: the model file, the node's name and op type, and,
// for a node without a name, its first output, which identifies it instead.
ErrorSite node_error_site(const Graph& graph, const Node& node);

class NodeContext {
public:
  NodeContext(const Graph& graph, const Node& node) : graph_(graph), node_(node) {}

  const Graph& graph() const { return graph_; }
  const Node& node() const { return node_; }
  int opset() const { return node_.opset; }
  OpKind op() const { return node_.op; }

  // Inputs. `input` refuses an omitted one with a clear error naming `what`.
  int num_inputs() const { return static_cast<int>(node_.inputs.size()); }
  bool has_input(int i) const;
  const Tensor& input(int i, const char* what = "input") const;
  DType dtype(int i) const { return input(i).dtype; }
  const Shape& shape(int i) const { return input(i).shape; }
  int64_t rank(int i) const { return static_cast<int64_t>(input(i).shape.size()); }
  // The value of input i, which must be constant (a value computed at run time is refused).
  std::vector<int64_t> const_ints(int i, const char* what) const;
  std::vector<double> const_floats(int i, const char* what) const;
  // The value of input i, which must be a constant 1-D integer tensor.
  std::vector<int64_t> const_int_vector(int i, const char* what) const;

  // Attributes: the default is returned when the attribute is absent; a present attribute
  // of another kind is refused.
  bool has_attr(const std::string& name) const { return node_.attrs.count(name) != 0; }
  int64_t attr_int(const std::string& name, int64_t dflt) const;
  double attr_float(const std::string& name, double dflt) const;
  std::string attr_string(const std::string& name, const std::string& dflt) const;
  std::vector<int64_t> attr_ints(const std::string& name,
                                 const std::vector<int64_t>& dflt = {}) const;
  std::vector<double> attr_floats(const std::string& name,
                                  const std::vector<double>& dflt = {}) const;
  // An int attribute that must be 0 or 1.
  bool attr_flag(const std::string& name, bool dflt) const;
  // A required attribute: absent is an error.
  int64_t req_int(const std::string& name) const;
  std::vector<int64_t> req_ints(const std::string& name) const;
  TensorId attr_tensor(const std::string& name) const;

  // Inputs/outputs count checks.
  void expect_inputs(int min, int max) const;
  void expect_float_input(int i) const;
  // The op exists in ONNX from opset `since` on.
  void require_opset(int since) const;

  int num_outputs() const { return static_cast<int>(node_.outputs.size()); }
  bool has_output(int i) const;

  // An axis in [-rank, rank) made non-negative; out of range is an error naming `what`.
  int64_t normalize_axis(int64_t axis, int64_t rank, const char* what = "axis") const;
  // Each axis made non-negative; an axis named twice is an error naming `what`.
  std::vector<int64_t> normalize_axes(const std::vector<int64_t>& axes, int64_t rank,
                                      const char* what) const;

  // Sizes computed from a model: an overflow is a user error naming the node and `what`.
  int64_t checked_add(int64_t a, int64_t b, std::string_view what) const;
  int64_t checked_mul(int64_t a, int64_t b, std::string_view what) const;
  int64_t checked_elements(const Shape& shape, std::string_view what) const;

  ErrorSite site() const { return node_error_site(graph_, node_); }

  template <typename... Args>
  [[noreturn]] void fail(fmt::format_string<Args...> f, Args&&... args) const {
    throw UserError(site(), fmt::format(f, std::forward<Args>(args)...));
  }

private:
  [[noreturn]] void fail_not_constant(const Tensor& t, const char* what) const;
  const Attribute* find_attr(const std::string& name, size_t expected_index,
                             const char* expected_kind) const;
  const Graph& graph_;
  const Node& node_;
};

// A shape rule's view of its node: reads like NodeContext and sets the outputs' types.
class InferContext : public NodeContext {
public:
  InferContext(Graph& graph, Node& node) : NodeContext(graph, node), mutable_graph_(graph) {}

  using NodeContext::graph;
  Graph& graph() { return mutable_graph_; }

  // Types output i (an omitted optional output is skipped); a negative dimension or a byte
  // size past 64 bits is an error.
  void set_output(int i, DType dtype, Shape shape);

private:
  Graph& mutable_graph_;
};

// A shape-defining operand (Reshape's shape, Slice's starts, ...) that is computed at run
// time. It names the tensor, so that a caller holding its value (a test harness, or a user
// with --freeze-input) can make it a constant.
class NonConstantOperandError : public UserError {
public:
  NonConstantOperandError(ErrorSite site, std::string reason, std::string tensor,
                          std::vector<std::string> graph_inputs)
      : UserError(std::move(site), std::move(reason)), tensor_(std::move(tensor)),
        graph_inputs_(std::move(graph_inputs)) {}
  const std::string& tensor() const { return tensor_; }
  // The graph inputs the operand's value depends on: freezing them makes it constant.
  const std::vector<std::string>& graph_inputs() const { return graph_inputs_; }

private:
  std::string tensor_;
  std::vector<std::string> graph_inputs_;
};

// numpy broadcasting of two shapes; nullopt when they do not broadcast.
std::optional<Shape> broadcast_shapes(const Shape& a, const Shape& b);

} // namespace stitch
