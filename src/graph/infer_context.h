// What a shape rule sees of one node: its inputs' dtypes, shapes and (when constant) values,
// its attributes with the ONNX defaults supplied by the rule, and where to put the outputs.
// Every check a rule makes fails through `fail`, which names the node in a user error.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "graph/error.h"
#include "graph/graph.h"

namespace stitch {

class InferContext {
public:
  InferContext(Graph& graph, Node& node) : graph_(graph), node_(node) {}

  Graph& graph() { return graph_; }
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
  // A required attribute: absent is an error.
  int64_t req_int(const std::string& name) const;
  std::vector<int64_t> req_ints(const std::string& name) const;
  TensorId attr_tensor(const std::string& name) const;

  // Inputs/outputs count checks.
  void expect_inputs(int min, int max) const;
  void expect_float_input(int i) const;

  int num_outputs() const { return static_cast<int>(node_.outputs.size()); }
  bool has_output(int i) const;
  void set_output(int i, DType dtype, Shape shape);

  // An axis in [-rank, rank) made non-negative; out of range is an error naming `what`.
  int64_t normalize_axis(int64_t axis, int64_t rank, const char* what = "axis") const;

  template <typename... Args>
  [[noreturn]] void fail(fmt::format_string<Args...> f, Args&&... args) const {
    throw UserError({graph_.source_file, node_.name, std::string(op_name(node_.op))},
                    fmt::format(f, std::forward<Args>(args)...));
  }

private:
  [[noreturn]] void fail_not_constant(const Tensor& t, const char* what) const;
  const Attribute* find_attr(const std::string& name, size_t expected_index,
                             const char* expected_kind) const;
  Graph& graph_;
  Node& node_;
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
