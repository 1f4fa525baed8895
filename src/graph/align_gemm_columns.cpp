// align-gemm-columns (align_gemm_columns.h).
#include "graph/align_gemm_columns.h"

#include <memory>
#include <set>

#include "graph/constant.h"
#include "graph/infer_context.h"
#include "graph/pass_builder.h"
#include "graph/topo_sort.h"

namespace stitch {

namespace {

constexpr int64_t kAlignBytes = 16;
constexpr int64_t kMinWeightBytes = int64_t{1} << 20;

class AlignGemmColumns {
public:
  explicit AlignGemmColumns(Graph& graph) : g_(graph), build_(graph) {
    consumers_ = g_.consumers();
    for (TensorId t : g_.outputs)
      graph_output_.insert(t);
  }

  bool run() {
    std::vector<Node> added;
    for (size_t n = 0, count = g_.nodes.size(); n < count; ++n) {
      const int64_t columns = aligned_columns(g_.nodes[n]);
      if (columns > 0) align(static_cast<int32_t>(n), columns, added);
    }
    if (added.empty()) return false;
    for (Node& node : added)
      g_.nodes.push_back(std::move(node));
    topo_sort(g_);
    return true;
  }

private:
  // Whether the Gemm `node` reads its B transposed ([N, K]).
  bool transposed_b(const Node& node) const {
    return node.op == OpKind::Gemm && NodeContext(g_, node).attr_int("transB", 0) != 0;
  }

  // The padded column count of an eligible MatMul or Gemm (align_gemm_columns.h); 0 when it is
  // not one.
  int64_t aligned_columns(const Node& node) const {
    if (node.removed || node.outputs.size() != 1 || node.outputs[0] == kNoTensor ||
        node.inputs.size() < 2 || node.inputs[0] == kNoTensor || node.inputs[1] == kNoTensor)
      return 0;
    if (node.op != OpKind::Gemm && (node.op != OpKind::MatMul || node.inputs.size() != 2)) return 0;
    const Tensor &a = g_.tensor(node.inputs[0]), &b = g_.tensor(node.inputs[1]),
                 &y = g_.tensor(node.outputs[0]);
    if (a.dtype != DType::Float16 && a.dtype != DType::BFloat16) return 0;
    if (a.is_constant() || a.shape.size() < 2 || !b.is_constant() || b.view_of != kNoTensor ||
        b.shape.size() != 2 || b.dtype != a.dtype || y.dtype != a.dtype || y.elements() == 0)
      return 0;
    const bool transposed = transposed_b(node);
    const int64_t size = dtype_size(b.dtype), lanes = kAlignBytes / size,
                  n = b.shape[transposed ? 0 : 1];
    if (n % lanes == 0 || b.elements() * size < kMinWeightBytes || y.shape.back() != n) return 0;
    // A Gemm's C: absent, broadcast along the columns, or a constant padded with them.
    if (node.op == OpKind::Gemm && node.inputs.size() > 2 && node.inputs[2] != kNoTensor) {
      const Tensor& c = g_.tensor(node.inputs[2]);
      if (!c.shape.empty() && c.shape.back() != 1 && (!c.is_constant() || c.view_of != kNoTensor))
        return 0;
    }
    return (n + lanes - 1) / lanes * lanes;
  }

  // A copy of constant `t` with its last axis (its first, when `first_axis`) padded with
  // zeros to `columns`.
  TensorId padded_constant(TensorId t, int64_t columns, bool first_axis = false) {
    const Tensor& source = g_.tensor(t);
    Shape shape = source.shape;
    std::shared_ptr<ConstantData> data;
    if (first_axis) { // [N, K] -> [columns, K]: zero rows after
      data = std::make_shared<ConstantData>();
      data->bytes = source.constant->bytes;
      data->bytes.resize(
          static_cast<size_t>(columns * (source.elements() / shape[0]) * dtype_size(source.dtype)),
          '\0');
      shape[0] = columns;
    } else {
      const int64_t n = source.shape.back();
      const auto size = static_cast<size_t>(dtype_size(source.dtype));
      data = std::make_shared<ConstantData>();
      data->bytes =
          zero_padded_rows(source.constant->bytes, source.elements() / n,
                           static_cast<size_t>(n) * size, static_cast<size_t>(columns) * size);
      shape.back() = columns;
    }
    // (Adding a tensor may move `source`.)
    const TensorId id = build_.tensor(source.name + "/aligned", source.dtype, shape);
    g_.tensor(id).constant = std::move(data);
    return id;
  }

  void align(int32_t matmul, int64_t columns, std::vector<Node>& added) {
    const TensorId y = g_.nodes[matmul].outputs[0];
    const int64_t n = g_.tensor(y).shape.back();
    Shape wide = g_.tensor(y).shape;
    wide.back() = columns;
    const TensorId w =
        padded_constant(g_.nodes[matmul].inputs[1], columns, transposed_b(g_.nodes[matmul]));
    const TensorId product =
        build_.tensor(g_.tensor(y).name + "/aligned", g_.tensor(y).dtype, wide);
    g_.nodes[matmul].inputs[1] = w;
    g_.nodes[matmul].outputs[0] = product;
    // A Gemm's C with a column per output column gets zero columns too.
    if (const Node& gemm = g_.nodes[matmul];
        gemm.op == OpKind::Gemm && gemm.inputs.size() > 2 && gemm.inputs[2] != kNoTensor &&
        !g_.tensor(gemm.inputs[2]).shape.empty() && g_.tensor(gemm.inputs[2]).shape.back() != 1) {
      const TensorId padded = padded_constant(gemm.inputs[2], columns);
      g_.nodes[matmul].inputs[2] = padded;
    }
    // The bias Add, when there is one, adds the padded row and is sliced after.
    TensorId row = kNoTensor, result = y, last = product;
    std::string name = g_.nodes[matmul].name;
    if (const int32_t add = row_bias_add(g_, consumers_, graph_output_, y, row); add >= 0) {
      Node& node = g_.nodes[add];
      result = node.outputs[0];
      name = node.name;
      const TensorId wide_row = padded_constant(row, columns);
      last = build_.tensor(g_.tensor(result).name + "/aligned", g_.tensor(result).dtype, wide);
      for (TensorId& input : node.inputs)
        input = input == y ? product : wide_row;
      node.outputs[0] = last;
    }
    const auto axis = static_cast<int64_t>(wide.size()) - 1;
    const std::string slice = name + "/unaligned";
    added.push_back(
        build_.node(OpKind::Slice, slice,
                    {last, build_.ints(slice + "/starts", {0}), build_.ints(slice + "/ends", {n}),
                     build_.ints(slice + "/axes", {axis})},
                    result));
  }

  Graph& g_;
  PassBuilder build_;
  std::vector<std::vector<int32_t>> consumers_;
  std::set<TensorId> graph_output_;
};

} // namespace

bool align_gemm_columns(Graph& graph) { return AlignGemmColumns(graph).run(); }

} // namespace stitch
