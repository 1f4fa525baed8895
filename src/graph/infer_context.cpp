// NodeContext and InferContext: checked access to a node's operands and attributes for shape
// rules and host evaluators, and the error site that names the node.
#include "graph/infer_context.h"

#include <algorithm>

#include "graph/constant.h"

namespace stitch {

ErrorSite node_error_site(const Graph& graph, const Node& node) {
  ErrorSite site{graph.source_file, node.name, std::string(op_name(node.op))};
  if (!node.name.empty()) return site;
  for (TensorId out : node.outputs) {
    if (out == kNoTensor) continue;
    site.output = graph.tensor(out).name;
    break;
  }
  return site;
}

bool NodeContext::has_input(int i) const {
  return i >= 0 && i < num_inputs() && node_.inputs[i] != kNoTensor;
}

const Tensor& NodeContext::input(int i, const char* what) const {
  if (!has_input(i)) fail("missing required {} (input {})", what, i);
  const Tensor& t = graph_.tensor(node_.inputs[i]);
  STITCH_INTERNAL_CHECK(t.typed, "input '{}' of a node is untyped during inference", t.name);
  return t;
}

std::vector<int64_t> NodeContext::const_ints(int i, const char* what) const {
  const Tensor& t = input(i, what);
  if (!t.is_constant()) fail_not_constant(t, what);
  if (!dtype_is_integer(t.dtype))
    fail("{} must be an integer tensor, got {}", what, dtype_name(t.dtype));
  return constant_as_int64(t);
}

std::vector<int64_t> NodeContext::const_int_vector(int i, const char* what) const {
  if (rank(i) != 1) fail("{} must be 1-D, got shape {}", what, shape_to_string(shape(i)));
  return const_ints(i, what);
}

std::vector<double> NodeContext::const_floats(int i, const char* what) const {
  const Tensor& t = input(i, what);
  if (!t.is_constant()) fail_not_constant(t, what);
  return constant_as_double(t);
}

void NodeContext::fail_not_constant(const Tensor& t, const char* what) const {
  // Which graph inputs does the value depend on? An iterative walk up the producers.
  std::vector<int32_t> producer = graph_.producers();
  std::vector<char> seen(graph_.tensors.size(), 0);
  std::vector<TensorId> stack = {static_cast<TensorId>(&t - graph_.tensors.data())};
  std::vector<std::string> inputs;
  while (!stack.empty()) {
    TensorId id = stack.back();
    stack.pop_back();
    if (id == kNoTensor || seen[id]) continue;
    seen[id] = 1;
    const Tensor& cur = graph_.tensor(id);
    if (cur.is_constant()) continue;
    if (producer[id] < 0) {
      inputs.push_back(cur.name);
      continue;
    }
    for (TensorId in : graph_.nodes[producer[id]].inputs)
      stack.push_back(in);
  }
  std::sort(inputs.begin(), inputs.end());
  std::string hint = inputs.empty()
                         ? std::string()
                         : fmt::format("; it depends on graph input(s) {}, which --freeze-input "
                                       "NAME=FILE.pb can fix",
                                       fmt::join(inputs, ", "));
  throw NonConstantOperandError(
      site(),
      fmt::format("{} (input '{}') must be a constant: stitchc compiles static shapes, and this "
                  "value is computed at run time{}",
                  what, t.name, hint),
      t.name, inputs);
}

const Attribute* NodeContext::find_attr(const std::string& name, size_t expected_index,
                                        const char* expected_kind) const {
  auto it = node_.attrs.find(name);
  if (it == node_.attrs.end()) return nullptr;
  if (it->second.value.index() != expected_index)
    fail("attribute '{}' must be {}, got {}", name, expected_kind, it->second.kind_name());
  return &it->second;
}

int64_t NodeContext::attr_int(const std::string& name, int64_t dflt) const {
  const Attribute* a = find_attr(name, 0, "an int");
  return a ? std::get<int64_t>(a->value) : dflt;
}

double NodeContext::attr_float(const std::string& name, double dflt) const {
  const Attribute* a = find_attr(name, 1, "a float");
  return a ? std::get<double>(a->value) : dflt;
}

std::string NodeContext::attr_string(const std::string& name, const std::string& dflt) const {
  const Attribute* a = find_attr(name, 2, "a string");
  return a ? std::get<std::string>(a->value) : dflt;
}

std::vector<int64_t> NodeContext::attr_ints(const std::string& name,
                                            const std::vector<int64_t>& dflt) const {
  const Attribute* a = find_attr(name, 3, "a list of ints");
  return a ? std::get<std::vector<int64_t>>(a->value) : dflt;
}

std::vector<double> NodeContext::attr_floats(const std::string& name,
                                             const std::vector<double>& dflt) const {
  const Attribute* a = find_attr(name, 4, "a list of floats");
  return a ? std::get<std::vector<double>>(a->value) : dflt;
}

bool NodeContext::attr_flag(const std::string& name, bool dflt) const {
  int64_t v = attr_int(name, dflt ? 1 : 0);
  if (v != 0 && v != 1) fail("attribute '{}' must be 0 or 1, got {}", name, v);
  return v == 1;
}

int64_t NodeContext::req_int(const std::string& name) const {
  if (!has_attr(name)) fail("missing required attribute '{}'", name);
  return attr_int(name, 0);
}

std::vector<int64_t> NodeContext::req_ints(const std::string& name) const {
  if (!has_attr(name)) fail("missing required attribute '{}'", name);
  return attr_ints(name);
}

TensorId NodeContext::attr_tensor(const std::string& name) const {
  const Attribute* a = find_attr(name, 6, "a tensor");
  if (!a) fail("missing required attribute '{}'", name);
  return std::get<TensorId>(a->value);
}

void NodeContext::expect_inputs(int min, int max) const {
  int n = num_inputs();
  // Trailing omitted optional inputs do not count.
  while (n > 0 && node_.inputs[n - 1] == kNoTensor)
    --n;
  if (n < min || n > max) {
    if (min == max) fail("expects {} inputs, got {}", min, n);
    fail("expects {} to {} inputs, got {}", min, max, n);
  }
  for (int i = 0; i < min; ++i)
    if (!has_input(i)) fail("required input {} is missing", i);
}

void NodeContext::expect_float_input(int i) const {
  if (!dtype_is_float(dtype(i)))
    fail("input {} must be a floating-point tensor, got {}", i, dtype_name(dtype(i)));
}

void NodeContext::require_opset(int since) const {
  if (opset() < since)
    fail("{} is an ONNX op from opset {}, but the model imports opset {}", op_name(op()), since,
         opset());
}

bool NodeContext::has_output(int i) const {
  return i >= 0 && i < num_outputs() && node_.outputs[i] != kNoTensor;
}

void InferContext::set_output(int i, DType dtype, Shape shape) {
  if (!has_output(i)) return; // an omitted optional output
  for (int64_t d : shape)
    if (d < 0) fail("inferred a negative dimension for output {}: {}", i, shape_to_string(shape));
  Tensor& t = mutable_graph_.tensor(node().outputs[i]);
  t.dtype = dtype;
  t.shape = std::move(shape);
  try {
    (void)t.bytes(); // the byte size must be representable
  } catch (const UserError& e) {
    fail("output {} {} is too large: {}", i, shape_to_string(t.shape), e.reason());
  }
  if (t.elements() > graph().limits.max_tensor_elements)
    fail("output {} {} has {} elements, more than the limit of {} (--max-tensor-elements)", i,
         shape_to_string(t.shape), t.elements(), graph().limits.max_tensor_elements);
  t.typed = true;
}

int64_t NodeContext::normalize_axis(int64_t axis, int64_t rank, const char* what) const {
  if (axis < -rank || axis >= rank)
    fail("{} {} is out of range for a tensor of rank {}", what, axis, rank);
  return axis < 0 ? axis + rank : axis;
}

std::vector<int64_t> NodeContext::normalize_axes(const std::vector<int64_t>& axes, int64_t rank,
                                                 const char* what) const {
  std::vector<int64_t> out;
  std::vector<bool> seen(static_cast<size_t>(rank), false);
  for (int64_t a : axes) {
    int64_t n = normalize_axis(a, rank, "axis");
    if (seen[n]) fail("{} names axis {} twice", what, n);
    seen[n] = true;
    out.push_back(n);
  }
  return out;
}

int64_t NodeContext::checked_add(int64_t a, int64_t b, std::string_view what) const {
  int64_t r;
  if (__builtin_add_overflow(a, b, &r)) fail("{} overflows 64-bit arithmetic", what);
  return r;
}

int64_t NodeContext::checked_mul(int64_t a, int64_t b, std::string_view what) const {
  int64_t r;
  if (__builtin_mul_overflow(a, b, &r)) fail("{} overflows 64-bit arithmetic", what);
  return r;
}

int64_t NodeContext::checked_elements(const Shape& shape, std::string_view what) const {
  int64_t n = 1;
  for (int64_t d : shape)
    n = checked_mul(n, d, what);
  return n;
}

std::optional<Shape> broadcast_shapes(const Shape& a, const Shape& b) {
  size_t r = std::max(a.size(), b.size());
  Shape out(r);
  for (size_t i = 0; i < r; ++i) {
    int64_t da = i < r - a.size() ? 1 : a[i - (r - a.size())];
    int64_t db = i < r - b.size() ? 1 : b[i - (r - b.size())];
    if (da == db || db == 1)
      out[i] = da;
    else if (da == 1)
      out[i] = db;
    else
      return std::nullopt;
  }
  return out;
}

} // namespace stitch
