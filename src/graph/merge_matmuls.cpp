// merge-matmuls (merge_matmuls.h).
#include "graph/merge_matmuls.h"

#include <algorithm>
#include <map>

#include "graph/constant.h"
#include "graph/infer_context.h"
#include "graph/pass_builder.h"
#include "graph/topo_sort.h"

namespace stitch {

namespace {

struct Sibling {
  int32_t matmul = -1;
  int32_t add = -1;          // its bias Add, when every sibling has one
  TensorId bias = kNoTensor; // that Add's constant row
  int64_t n = 0, offset = 0; // its columns of the merged result
};

class MergeMatMuls {
public:
  explicit MergeMatMuls(Graph& graph) : g_(graph), build_(graph) {
    consumers_ = g_.consumers();
    for (TensorId t : g_.outputs)
      graph_output_.insert(t);
  }

  bool run() {
    // Gemms among siblings become MatMul (+ Add of C) first, the form merged below.
    std::map<TensorId, std::vector<int32_t>> siblings;
    for (size_t n = 0; n < g_.nodes.size(); ++n)
      if (mergeable(g_.nodes[n]) || gemm_mergeable(g_.nodes[n]))
        siblings[g_.nodes[n].inputs[0]].push_back(static_cast<int32_t>(n));
    bool changed = false;
    for (const auto& [activation, nodes] : siblings)
      if (nodes.size() > 1)
        for (int32_t n : nodes)
          if (g_.nodes[n].op == OpKind::Gemm) changed = as_matmul(n) || changed;
    if (changed) consumers_ = g_.consumers();
    std::map<TensorId, std::vector<int32_t>> by_activation;
    for (size_t n = 0; n < g_.nodes.size(); ++n)
      if (mergeable(g_.nodes[n]))
        by_activation[g_.nodes[n].inputs[0]].push_back(static_cast<int32_t>(n));
    for (const auto& [activation, matmuls] : by_activation) {
      if (matmuls.size() < 2) continue;
      merge(activation, matmuls);
      changed = true;
    }
    for (size_t n = 0, count = g_.nodes.size(); n < count; ++n)
      if (!g_.nodes[n].removed && split_heads(static_cast<int32_t>(n))) changed = true;
    if (!changed) return false;
    g_.compact();
    topo_sort(g_);
    return true;
  }

private:
  bool mergeable(const Node& node) const {
    if (node.op != OpKind::MatMul || node.inputs.size() != 2 || node.outputs.size() != 1)
      return false;
    const Tensor &a = g_.tensor(node.inputs[0]), &b = g_.tensor(node.inputs[1]),
                 &y = g_.tensor(node.outputs[0]);
    // Over symbolic dims the merged product is split along its fixed last axis (Slices of a
    // start >= 0, which run over the symbols).
    return !a.is_constant() && a.shape.size() >= 2 && b.is_constant() && b.view_of == kNoTensor &&
           b.shape.size() == 2 && b.dtype == a.dtype && y.dtype == a.dtype &&
           b.shape[0] == a.shape.back() && y.elements() > 0 && a.elements() > 0;
  }

  // A Gemm computing A * B (+ C) with a runtime 2-D A, a constant B (transposed or not),
  // alpha 1 and, with a C, beta 1 and C a constant of its dtype: a MatMul sibling in Gemm's
  // spelling (a Linear layer on 2-D input).
  bool gemm_mergeable(const Node& node) const {
    if (node.op != OpKind::Gemm || node.inputs.size() < 2 || node.outputs.size() != 1 ||
        node.inputs[0] == kNoTensor || node.inputs[1] == kNoTensor || node.outputs[0] == kNoTensor)
      return false;
    const NodeContext nc(g_, node);
    const bool has_c = node.inputs.size() > 2 && node.inputs[2] != kNoTensor;
    if (nc.attr_int("transA", 0) != 0 || nc.attr_float("alpha", 1.0) != 1.0 ||
        (has_c && nc.attr_float("beta", 1.0) != 1.0))
      return false;
    const Tensor &a = g_.tensor(node.inputs[0]), &b = g_.tensor(node.inputs[1]),
                 &y = g_.tensor(node.outputs[0]);
    const int64_t k = nc.attr_int("transB", 0) != 0 ? 1 : 0;
    if (a.is_constant() || a.shape.size() != 2 || !b.is_constant() || b.view_of != kNoTensor ||
        b.shape.size() != 2 || b.dtype != a.dtype || y.dtype != a.dtype || y.elements() == 0 ||
        a.elements() == 0 || b.shape[k] != a.shape[1])
      return false;
    if (!has_c) return true;
    const Tensor& c = g_.tensor(node.inputs[2]);
    return c.is_constant() && c.view_of == kNoTensor && c.dtype == y.dtype;
  }

  // The Gemm `n` (gemm_mergeable) as MatMul(A, B) (B transposed here when transB) writing its
  // result, or, with a C, a product that Add(product, C) appended to the graph reads.
  bool as_matmul(int32_t n) {
    const bool transposed = NodeContext(g_, g_.nodes[n]).attr_int("transB", 0) != 0;
    TensorId b = g_.nodes[n].inputs[1];
    if (transposed) {
      const Tensor& source = g_.tensor(b);
      const int64_t rows = source.shape[0], cols = source.shape[1];
      auto data = std::make_shared<ConstantData>();
      data->bytes = transpose_bytes(source.constant->bytes, source.shape, {1, 0},
                                    static_cast<size_t>(dtype_size(source.dtype)));
      const std::string name = source.name + "/transposed";
      const DType dtype = source.dtype;
      b = build_.tensor(name, dtype, {cols, rows}); // (may move `source`)
      g_.tensor(b).constant = std::move(data);
    }
    Node& gemm = g_.nodes[n];
    const TensorId y = gemm.outputs[0];
    const TensorId c = gemm.inputs.size() > 2 ? gemm.inputs[2] : kNoTensor;
    gemm.op = OpKind::MatMul;
    gemm.attrs.clear();
    gemm.inputs = {gemm.inputs[0], b};
    if (c == kNoTensor) return true;
    const TensorId product = build_.sym_tensor(g_.tensor(y).name + "/product", g_.tensor(y).dtype,
                                               g_.tensor(y).sym_shape());
    g_.nodes[n].outputs[0] = product;
    Node add = build_.node(OpKind::Add, g_.nodes[n].name + "/c", {product, c}, y);
    g_.nodes.push_back(std::move(add));
    return true;
  }

  // The bias Add reading only `matmul`'s result (row_bias_add); -1 when there is none.
  int32_t bias_add(int32_t matmul, TensorId& row) const {
    return row_bias_add(g_, consumers_, graph_output_, g_.nodes[matmul].outputs[0], row);
  }

  // The constant rows of `parts` side by side: row i of the result is row i of each part in
  // turn ([K, N_j] parts make [K, sum N_j]; one-row biases make one row).
  std::shared_ptr<ConstantData> side_by_side(const std::vector<TensorId>& parts, int64_t rows) {
    auto data = std::make_shared<ConstantData>();
    for (int64_t r = 0; r < rows; ++r)
      for (TensorId p : parts) {
        const std::string& bytes = g_.tensor(p).constant->bytes;
        const size_t row = bytes.size() / static_cast<size_t>(rows);
        data->bytes.append(bytes, static_cast<size_t>(r) * row, row);
      }
    return data;
  }

  void merge(TensorId activation, const std::vector<int32_t>& matmuls) {
    std::vector<Sibling> siblings;
    int64_t total = 0;
    for (int32_t m : matmuls) {
      Sibling s;
      s.matmul = m;
      s.n = g_.tensor(g_.nodes[m].inputs[1]).shape[1];
      s.offset = total;
      total += s.n;
      s.add = bias_add(m, s.bias);
      siblings.push_back(s);
    }
    const bool biased =
        std::all_of(siblings.begin(), siblings.end(), [](const Sibling& s) { return s.add >= 0; });
    const Node first = g_.nodes[matmuls[0]];
    const Tensor& a = g_.tensor(activation);
    const DType dtype = a.dtype;
    const int64_t k = a.shape.back();
    const std::string base = first.name + "/merged";

    std::vector<TensorId> weights, biases;
    for (const Sibling& s : siblings) {
      weights.push_back(g_.nodes[s.matmul].inputs[1]);
      biases.push_back(s.bias);
    }
    const TensorId w = build_.tensor(base + "/weight", dtype, {k, total});
    g_.tensor(w).constant = side_by_side(weights, k);
    SymShape merged_shape = g_.tensor(first.outputs[0]).sym_shape();
    merged_shape.back() = total;
    TensorId merged = build_.sym_tensor(base, dtype, merged_shape);
    std::vector<Node> added;
    added.push_back(build_.node(OpKind::MatMul, base, {activation, w}, merged));
    if (biased) {
      const TensorId row = build_.tensor(base + "/bias", dtype, {total});
      g_.tensor(row).constant = side_by_side(biases, 1);
      const TensorId sum = build_.sym_tensor(base + "/biased", dtype, merged_shape);
      added.push_back(build_.node(OpKind::Add, base + "/bias_add", {merged, row}, sum));
      merged = sum;
    }
    // Each sibling's result (its Add's, when biased) is now a slice of the merged one.
    std::vector<Part> parts;
    for (const Sibling& s : siblings) {
      const int32_t replaced = biased ? s.add : s.matmul;
      g_.nodes[s.matmul].removed = true;
      if (biased) g_.nodes[s.add].removed = true;
      parts.push_back({s.offset, s.n, g_.nodes[replaced].outputs[0], g_.nodes[replaced].name});
    }
    slice_parts(merged, total, parts, base, added);
    for (Node& node : added)
      g_.nodes.push_back(std::move(node));
  }

  // One result of a merged tensor: its columns [offset, offset + n) of the last axis.
  struct Part {
    int64_t offset = 0, n = 0;
    TensorId result = kNoTensor;
    std::string name; // of the node that wrote it
  };

  // Each part's result becomes a Slice of `merged`'s last axis; a head split of it reads the
  // merged result viewed as [..., total / d, d] (one view per d), sliced along its heads.
  void slice_parts(TensorId merged, int64_t total, const std::vector<Part>& parts,
                   const std::string& base, std::vector<Node>& added) {
    const SymShape merged_shape = g_.tensor(merged).sym_shape();
    const auto last = static_cast<int64_t>(merged_shape.size()) - 1;
    std::map<int64_t, TensorId> heads;
    for (const Part& part : parts) {
      bool sliced = graph_output_.count(part.result) > 0;
      for (int32_t reader : consumers_[part.result]) {
        const int64_t d = head_size(reader, part, total);
        if (d == 0) {
          sliced = true;
          continue;
        }
        auto [view, fresh] = heads.try_emplace(d, kNoTensor);
        if (fresh) {
          SymShape shape = merged_shape;
          shape.back() = total / d;
          shape.push_back(d);
          view->second = build_.reshape(added, merged, shape, base + "/heads");
        }
        Node& reshape = g_.nodes[reader];
        reshape.removed = true;
        added.push_back(build_.slice(reshape.name, view->second, part.offset / d,
                                     (part.offset + part.n) / d, last, reshape.outputs[0]));
      }
      if (sliced)
        added.push_back(
            build_.slice(part.name, merged, part.offset, part.offset + part.n, last, part.result));
    }
  }

  // A Split of a runtime tensor's last axis whose every result is read only by head splits
  // (GPT-2's attention projection, one Linear for Q, K and V, split after it): its results
  // become head slices as a merge's are. Other Splits stay: one kernel writes all their parts,
  // where Slices read by other kernels would be a copy each.
  bool split_heads(int32_t n) {
    const Node& node = g_.nodes[n];
    if (node.op != OpKind::Split || node.inputs.empty() || node.inputs[0] == kNoTensor ||
        node.outputs.size() < 2)
      return false;
    const Tensor& source = g_.tensor(node.inputs[0]);
    if (source.is_constant() || source.shape.empty() || source.elements() == 0) return false;
    const auto rank = static_cast<int64_t>(source.shape.size());
    int64_t axis = NodeContext(g_, node).attr_int("axis", 0);
    if (axis < 0) axis += rank;
    if (axis != rank - 1) return false;
    std::vector<Part> parts;
    int64_t offset = 0;
    for (TensorId t : node.outputs) {
      if (t == kNoTensor || graph_output_.count(t) || consumers_[t].empty()) return false;
      Part part{offset, g_.tensor(t).shape.back(), t, node.name};
      for (int32_t reader : consumers_[t])
        if (head_size(reader, part, source.shape.back()) == 0) return false;
      offset += part.n;
      parts.push_back(std::move(part));
    }
    std::vector<Node> added;
    g_.nodes[n].removed = true;
    slice_parts(node.inputs[0], source.shape.back(), parts, g_.nodes[n].name, added);
    for (Node& a : added)
      g_.nodes.push_back(std::move(a));
    return true;
  }

  // d when `reader` is a Reshape of the part's result splitting only its last axis, into
  // [n / d, d], and d divides the part's offset and the merged width; else 0.
  int64_t head_size(int32_t reader, const Part& part, int64_t total) const {
    const Node& node = g_.nodes[reader];
    if (node.op != OpKind::Reshape || node.inputs.empty() || node.inputs[0] != part.result ||
        node.outputs.size() != 1 || node.outputs[0] == kNoTensor)
      return 0;
    // The leading dims compare as expressions: symbolic dims equal only at the planning values
    // (two different symbols) are no match. The split axes are static.
    const SymShape in = g_.tensor(part.result).sym_shape();
    const SymShape out = g_.tensor(node.outputs[0]).sym_shape();
    if (out.size() != in.size() + 1 || !std::equal(in.begin(), in.end() - 1, out.begin())) return 0;
    if (!out.back().is_constant() || !out[out.size() - 2].is_constant()) return 0;
    const int64_t d = out.back().constant_value();
    if (d <= 0 || out[out.size() - 2].constant_value() * d != part.n || part.offset % d != 0 ||
        total % d != 0)
      return 0;
    return d;
  }

  Graph& g_;
  PassBuilder build_;
  std::vector<std::vector<int32_t>> consumers_;
  std::set<TensorId> graph_output_;
};

} // namespace

bool merge_matmuls(Graph& graph) { return MergeMatMuls(graph).run(); }

} // namespace stitch
