// The host evaluator of each op (from the op table), and the evaluators of the ops that make
// or pass through values: Identity and its kin, Cast, Shape/Size, Constant,
// ConstantOfShape and Range. The elementwise and movement evaluators live in
// fold_elementwise.cpp and fold_movement.cpp.
#include "graph/fold.h"

#include <algorithm>
#include <string>

#include "graph/constant.h"
#include "graph/error.h"

namespace stitch {

namespace {

constexpr FoldFn kFolds[] = {
#define STITCH_OP(name, category, rule, fold) &fold,
#include "graph/ops.def"
#undef STITCH_OP
};

std::shared_ptr<const ConstantData> bytes_of(std::string bytes) {
  auto data = std::make_shared<ConstantData>();
  data->bytes = std::move(bytes);
  return data;
}

const Tensor& output(const Graph& graph, const Node& node, size_t i) {
  STITCH_INTERNAL_CHECK(i < node.outputs.size() && node.outputs[i] != kNoTensor,
                        "{} fold writes a missing output {}", op_name(node.op), i);
  return graph.tensor(node.outputs[i]);
}

const Attribute* find_attr(const Node& node, const char* name) {
  auto it = node.attrs.find(name);
  return it == node.attrs.end() ? nullptr : &it->second;
}

} // namespace

FoldFn fold_function(OpKind op) {
  auto index = static_cast<size_t>(op);
  STITCH_INTERNAL_CHECK(index < std::size(kFolds), "op kind {} has no fold entry", index);
  return kFolds[index];
}

bool folds_from_types_only(OpKind op) {
  return fold_function(op) == &fold_shape;
}

FoldResult no_fold(const Graph&, const Node&) {
  return {};
}

// Identity, Dropout (inference), Reshape, Flatten, Squeeze, Unsqueeze, View: the output
// holds the input's bytes; Dropout's optional mask is all true.
FoldResult fold_identity(const Graph& graph, const Node& node) {
  const Tensor& in = graph.tensor(node.inputs[0]);
  FoldResult result{in.constant};
  for (size_t i = 1; i < node.outputs.size(); ++i) {
    if (node.outputs[i] == kNoTensor) {
      result.push_back(nullptr);
      continue;
    }
    const Tensor& mask = output(graph, node, i);
    result.push_back(
        make_constant_from_int64(mask.dtype, std::vector<int64_t>(mask.elements(), 1)));
  }
  return result;
}

// Cast and CastLike: floats convert to integers by truncation toward zero, saturating at
// the target's range (NaN becomes 0); integers wrap like a C cast.
FoldResult fold_cast(const Graph& graph, const Node& node) {
  const Tensor& in = graph.tensor(node.inputs[0]);
  const Tensor& out = output(graph, node, 0);
  if (in.dtype == out.dtype) return {in.constant};
  if (dtype_is_float(in.dtype))
    return {make_constant_from_double(out.dtype, constant_as_double(in))};
  // uint64 values past INT64_MAX would turn negative on their way through int64.
  if (in.dtype == DType::UInt64 && dtype_is_float(out.dtype)) return {};
  return {make_constant_from_int64(out.dtype, constant_as_int64(in))};
}

// Shape (with start/end from opset 15) and Size read only the input's type.
FoldResult fold_shape(const Graph& graph, const Node& node) {
  const Tensor& in = graph.tensor(node.inputs[0]);
  if (node.op == OpKind::Size) return {make_constant_from_int64(DType::Int64, {in.elements()})};
  auto rank = static_cast<int64_t>(in.shape.size());
  int64_t start = 0, end = rank;
  if (node.opset >= 15) {
    if (const Attribute* a = find_attr(node, "start")) start = std::get<int64_t>(a->value);
    if (const Attribute* a = find_attr(node, "end")) end = std::get<int64_t>(a->value);
  }
  if (start < 0) start += rank;
  if (end < 0) end += rank;
  start = std::clamp<int64_t>(start, 0, rank);
  end = std::clamp<int64_t>(end, 0, rank);
  std::vector<int64_t> dims;
  for (int64_t d = start; d < end; ++d)
    dims.push_back(in.shape[d]);
  return {make_constant_from_int64(DType::Int64, dims)};
}

FoldResult fold_constant_of_shape(const Graph& graph, const Node& node) {
  const Tensor& out = output(graph, node, 0);
  std::string element(static_cast<size_t>(dtype_size(out.dtype)), '\0'); // default: float32 0
  if (const Attribute* a = find_attr(node, "value")) {
    const Tensor& value = graph.tensor(std::get<TensorId>(a->value));
    STITCH_INTERNAL_CHECK(value.is_constant() && value.constant->bytes.size() == element.size(),
                          "ConstantOfShape value '{}' is not one {}", value.name,
                          dtype_name(out.dtype));
    element = value.constant->bytes;
  }
  std::string bytes;
  bytes.reserve(static_cast<size_t>(out.bytes()));
  for (int64_t i = 0; i < out.elements(); ++i)
    bytes += element;
  return {bytes_of(std::move(bytes))};
}

FoldResult fold_constant(const Graph& graph, const Node& node) {
  if (const Attribute* a = find_attr(node, "value"))
    return {graph.tensor(std::get<TensorId>(a->value)).constant};
  if (const Attribute* a = find_attr(node, "value_float"))
    return {make_constant_from_double(DType::Float32, {std::get<double>(a->value)})};
  if (const Attribute* a = find_attr(node, "value_floats"))
    return {make_constant_from_double(DType::Float32, std::get<std::vector<double>>(a->value))};
  if (const Attribute* a = find_attr(node, "value_int"))
    return {make_constant_from_int64(DType::Int64, {std::get<int64_t>(a->value)})};
  if (const Attribute* a = find_attr(node, "value_ints"))
    return {make_constant_from_int64(DType::Int64, std::get<std::vector<int64_t>>(a->value))};
  return {}; // the shape rule refuses every other form
}

// Range: element i is start + i * delta, as numpy.arange computes it.
FoldResult fold_range(const Graph& graph, const Node& node) {
  const Tensor& out = output(graph, node, 0);
  int64_t count = out.elements();
  if (dtype_is_float(out.dtype)) {
    double start = constant_as_double(graph.tensor(node.inputs[0]))[0];
    double delta = constant_as_double(graph.tensor(node.inputs[2]))[0];
    std::vector<double> values(static_cast<size_t>(count));
    for (int64_t i = 0; i < count; ++i)
      values[i] = start + static_cast<double>(i) * delta;
    return {make_constant_from_double(out.dtype, values)};
  }
  // Every element lies between start and limit, so it fits; i * delta alone may not, hence
  // the arithmetic modulo 2^64.
  auto start = static_cast<uint64_t>(constant_as_int64(graph.tensor(node.inputs[0]))[0]);
  auto delta = static_cast<uint64_t>(constant_as_int64(graph.tensor(node.inputs[2]))[0]);
  std::vector<int64_t> values(static_cast<size_t>(count));
  for (int64_t i = 0; i < count; ++i)
    values[i] = static_cast<int64_t>(start + static_cast<uint64_t>(i) * delta);
  return {make_constant_from_int64(out.dtype, values)};
}

} // namespace stitch
