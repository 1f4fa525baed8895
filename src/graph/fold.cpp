// The host evaluator of each op (from the op table), and the evaluators of the ops that make
// or pass through values: Identity and its kin, Cast, Shape/Size, Constant,
// ConstantOfShape and Range. The elementwise and movement evaluators live in
// fold_elementwise.cpp and fold_movement.cpp. Parameters are read as the shape rules read
// them, through op_params.h.
#include "graph/fold.h"

#include <algorithm>
#include <string>

#include "graph/constant.h"
#include "graph/error.h"
#include "graph/op_params.h"

namespace stitch {

namespace {

constexpr FoldFn kFolds[] = {
#define STITCH_OP(name, category, rule, fold, device) &fold,
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

} // namespace

FoldFn fold_function(OpKind op) {
  auto index = static_cast<size_t>(op);
  STITCH_INTERNAL_CHECK(index < std::size(kFolds), "op kind {} has no fold entry", index);
  return kFolds[index];
}

bool folds_from_types_only(OpKind op) { return fold_function(op) == &fold_shape; }

FoldResult no_fold(const Graph&, const Node&) { return {}; }

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
  DimRange range = read_shape_range(NodeContext(graph, node));
  return {
      make_constant_from_int64(DType::Int64, std::vector<int64_t>(in.shape.begin() + range.start,
                                                                  in.shape.begin() + range.end))};
}

FoldResult fold_constant_of_shape(const Graph& graph, const Node& node) {
  const Tensor& out = output(graph, node, 0);
  FillValue fill = read_fill_value(NodeContext(graph, node));
  STITCH_INTERNAL_CHECK(fill.dtype == out.dtype, "ConstantOfShape fills {} into a {} output",
                        dtype_name(fill.dtype), dtype_name(out.dtype));
  std::string bytes;
  bytes.reserve(static_cast<size_t>(out.bytes()));
  for (int64_t i = 0; i < out.elements(); ++i)
    bytes += fill.element;
  return {bytes_of(std::move(bytes))};
}

FoldResult fold_constant(const Graph& graph, const Node& node) {
  return {read_constant_value(NodeContext(graph, node)).data};
}

// Range: element i is start + i * delta, as numpy.arange computes it.
FoldResult fold_range(const Graph& graph, const Node& node) {
  const Tensor& out = output(graph, node, 0);
  RangeParams range = read_range_params(NodeContext(graph, node));
  STITCH_INTERNAL_CHECK(range.count == out.elements(), "Range counts {} elements for {} outputs",
                        range.count, out.elements());
  if (range.is_float) {
    std::vector<double> values(static_cast<size_t>(range.count));
    for (int64_t i = 0; i < range.count; ++i)
      values[i] = range.start_real + static_cast<double>(i) * range.delta_real;
    return {make_constant_from_double(out.dtype, values)};
  }
  // Every element lies between start and limit, so it fits; i * delta alone may not, hence
  // the arithmetic modulo 2^64.
  auto start = static_cast<uint64_t>(range.start_int);
  auto delta = static_cast<uint64_t>(range.delta_int);
  std::vector<int64_t> values(static_cast<size_t>(range.count));
  for (int64_t i = 0; i < range.count; ++i)
    values[i] = static_cast<int64_t>(start + static_cast<uint64_t>(i) * delta);
  return {make_constant_from_int64(out.dtype, values)};
}

} // namespace stitch
