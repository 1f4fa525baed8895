// Host evaluators for the Movement ops that constant folding runs (Expand, Transpose,
// Concat, Split, Slice, Gather, Tile). Movement never changes a value, so these copy whole
// elements of any dtype as bytes. Most are one strided copy: each output element reads the
// input at `offset + sum(index[d] * stride[d])`, with strides that may be 0 (broadcast) or
// negative (reversed slice). Output shapes come from the shape rules, which ran first;
// parameters (axes, Slice's bounds, Gather's indices) are read through the same NodeContext
// and op_params.h readers as the rules read them.
#include <algorithm>
#include <cstring>
#include <string>

#include "graph/constant.h"
#include "graph/error.h"
#include "graph/fold.h"
#include "graph/op_params.h"

namespace stitch {

namespace {

// Input i, which must be a constant whose bytes match its type.
const Tensor& input(const Graph& graph, const Node& node, size_t i) {
  STITCH_INTERNAL_CHECK(i < node.inputs.size() && node.inputs[i] != kNoTensor,
                        "{} fold reads a missing input {}", op_name(node.op), i);
  const Tensor& t = graph.tensor(node.inputs[i]);
  STITCH_INTERNAL_CHECK(t.constant && static_cast<int64_t>(t.constant->bytes.size()) == t.bytes(),
                        "{} fold input '{}' has no data of its type", op_name(node.op), t.name);
  return t;
}

std::shared_ptr<const ConstantData> bytes_of(std::string bytes) {
  auto data = std::make_shared<ConstantData>();
  data->bytes = std::move(bytes);
  return data;
}

// The dense array of `shape` whose element at `index` is source element
// `offset + sum(index[d] * strides[d])`. Every source offset is bounds-checked.
std::string strided_copy(const Tensor& src, const Shape& shape, const std::vector<int64_t>& strides,
                         int64_t offset) {
  size_t size = static_cast<size_t>(dtype_size(src.dtype)), rank = shape.size();
  int64_t total = shape_elements(shape), available = src.elements();
  std::string out(static_cast<size_t>(total) * size, '\0');
  const char* from = src.constant->bytes.data();
  std::vector<int64_t> index(rank, 0);
  for (int64_t i = 0; i < total; ++i) {
    STITCH_INTERNAL_CHECK(offset >= 0 && offset < available,
                          "strided copy reads element {} of {} in '{}'", offset, available,
                          src.name);
    std::memcpy(out.data() + static_cast<size_t>(i) * size,
                from + static_cast<size_t>(offset) * size, size);
    for (size_t d = rank; d-- > 0;) {
      ++index[d];
      offset += strides[d];
      if (index[d] < shape[d]) break;
      offset -= strides[d] * shape[d];
      index[d] = 0;
    }
  }
  return out;
}

// Element counts before and after `axis`.
int64_t outer_elements(const Shape& s, int64_t axis) {
  return shape_elements(Shape(s.begin(), s.begin() + axis));
}
int64_t inner_elements(const Shape& s, int64_t axis) {
  return shape_elements(Shape(s.begin() + axis + 1, s.end()));
}

} // namespace

FoldResult fold_expand(const Graph& graph, const Node& node) {
  const Tensor& in = input(graph, node, 0);
  const Shape& out = graph.tensor(node.outputs[0]).shape;
  std::vector<int64_t> in_strides = row_major_strides(in.shape), strides(out.size(), 0);
  size_t lead = out.size() - in.shape.size();
  for (size_t j = 0; j < in.shape.size(); ++j)
    strides[lead + j] = in.shape[j] == 1 ? 0 : in_strides[j];
  return {bytes_of(strided_copy(in, out, strides, 0))};
}

FoldResult fold_transpose(const Graph& graph, const Node& node) {
  const Tensor& in = input(graph, node, 0);
  std::vector<int64_t> perm = read_perm(NodeContext(graph, node));
  std::vector<int64_t> in_strides = row_major_strides(in.shape), strides;
  Shape out;
  for (int64_t p : perm) {
    out.push_back(in.shape[p]);
    strides.push_back(in_strides[p]);
  }
  return {bytes_of(strided_copy(in, out, strides, 0))};
}

FoldResult fold_concat(const Graph& graph, const Node& node) {
  const Tensor& out = graph.tensor(node.outputs[0]);
  NodeContext ctx(graph, node);
  int64_t axis = ctx.normalize_axis(ctx.req_int("axis"), ctx.rank(0));
  int64_t outer = outer_elements(out.shape, axis), inner = inner_elements(out.shape, axis);
  size_t size = static_cast<size_t>(dtype_size(out.dtype));
  std::string bytes;
  bytes.reserve(static_cast<size_t>(out.bytes()));
  for (int64_t o = 0; o < outer; ++o) {
    for (size_t i = 0; i < node.inputs.size(); ++i) {
      const Tensor& in = input(graph, node, i);
      size_t block = static_cast<size_t>(in.shape[axis] * inner) * size;
      bytes.append(in.constant->bytes, static_cast<size_t>(o) * block, block);
    }
  }
  return {bytes_of(std::move(bytes))};
}

FoldResult fold_split(const Graph& graph, const Node& node) {
  const Tensor& in = input(graph, node, 0);
  NodeContext ctx(graph, node);
  int64_t axis = ctx.normalize_axis(ctx.attr_int("axis", 0), ctx.rank(0));
  std::vector<int64_t> strides = row_major_strides(in.shape);
  FoldResult result;
  int64_t start = 0;
  for (TensorId id : node.outputs) {
    STITCH_INTERNAL_CHECK(id != kNoTensor, "Split fold needs every output typed");
    const Shape& out = graph.tensor(id).shape;
    result.push_back(bytes_of(strided_copy(in, out, strides, start * strides[axis])));
    start += out[axis];
  }
  return result;
}

FoldResult fold_slice(const Graph& graph, const Node& node) {
  const Tensor& in = input(graph, node, 0);
  const Shape& out = graph.tensor(node.outputs[0]).shape;
  if (shape_elements(out) == 0) return {bytes_of("")};
  std::vector<int64_t> in_strides = row_major_strides(in.shape), strides = in_strides;
  int64_t offset = 0;
  for (const SliceAxis& s : read_slice_params(NodeContext(graph, node))) {
    offset += s.start * in_strides[s.axis];
    strides[s.axis] = in_strides[s.axis] * s.step;
  }
  return {bytes_of(strided_copy(in, out, strides, offset))};
}

FoldResult fold_gather(const Graph& graph, const Node& node) {
  const Tensor& data = input(graph, node, 0);
  const Tensor& out = graph.tensor(node.outputs[0]);
  NodeContext ctx(graph, node);
  int64_t axis = ctx.normalize_axis(ctx.attr_int("axis", 0), ctx.rank(0));
  int64_t dim = data.shape[axis];
  std::vector<int64_t> indices = read_const_indices(ctx, 1, axis, dim, "indices");
  int64_t outer = outer_elements(data.shape, axis), inner = inner_elements(data.shape, axis);
  size_t block = static_cast<size_t>(inner) * dtype_size(data.dtype);
  std::string bytes;
  bytes.reserve(static_cast<size_t>(out.bytes()));
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i : indices)
      bytes.append(data.constant->bytes, static_cast<size_t>(o * dim + i) * block, block);
  return {bytes_of(std::move(bytes))};
}

FoldResult fold_tile(const Graph& graph, const Node& node) {
  const Tensor& in = input(graph, node, 0);
  const Shape& out = graph.tensor(node.outputs[0]).shape;
  if (shape_elements(out) == 0) return {bytes_of("")};
  // The output is the array [r0, d0, r1, d1, ...] whose repeat axes have stride 0.
  std::vector<int64_t> in_strides = row_major_strides(in.shape), strides;
  Shape split;
  for (size_t d = 0; d < in.shape.size(); ++d) {
    split.push_back(out[d] / in.shape[d]);
    split.push_back(in.shape[d]);
    strides.push_back(0);
    strides.push_back(in_strides[d]);
  }
  return {bytes_of(strided_copy(in, split, strides, 0))};
}

} // namespace stitch
