// Graph bookkeeping: tensor access, producer/consumer maps, compaction.
#include "graph/graph.h"

#include <fmt/format.h>

#include "graph/checked_math.h"
#include "graph/error.h"

namespace stitch {

std::vector<TensorId> value_operands(const Node& node) {
  size_t values = node.inputs.size();
  if (node.op == OpKind::CastLike || node.op == OpKind::Expand || node.op == OpKind::Slice)
    values = 1;
  else if (op_category(node.op) == OpCategory::Reduction)
    values = 1;
  return {node.inputs.begin(), node.inputs.begin() + std::min(values, node.inputs.size())};
}

std::string shape_to_string(const Shape& s) { return fmt::format("[{}]", fmt::join(s, ",")); }

int64_t shape_elements(const Shape& s) {
  int64_t n = 1;
  for (int64_t d : s)
    n = checked_mul(n, d, "tensor element count");
  return n;
}

Shape row_major_strides(const Shape& s) {
  Shape strides(s.size(), 1);
  for (size_t d = s.size(); d-- > 1;)
    strides[d - 1] = strides[d] * s[d];
  return strides;
}

std::string fresh_name(std::set<std::string>& taken, const std::string& want) {
  std::string name = want;
  for (int i = 1; taken.count(name); ++i)
    name = fmt::format("{}_{}", want, i);
  taken.insert(name);
  return name;
}

std::vector<int64_t> channels_last_perm(size_t rank) {
  std::vector<int64_t> perm = {0};
  for (size_t axis = 2; axis < rank; ++axis)
    perm.push_back(static_cast<int64_t>(axis));
  if (rank > 1) perm.push_back(1);
  return perm;
}

std::vector<int64_t> channels_first_perm(size_t rank) {
  std::vector<int64_t> perm = {0};
  if (rank > 1) perm.push_back(static_cast<int64_t>(rank) - 1);
  for (size_t axis = 1; axis + 1 < rank; ++axis)
    perm.push_back(static_cast<int64_t>(axis));
  return perm;
}

int64_t Tensor::bytes() const { return checked_mul(elements(), dtype_size(dtype), "tensor bytes"); }

std::string Attribute::kind_name() const {
  static constexpr const char* kNames[] = {"int",    "float",   "string", "ints",
                                           "floats", "strings", "tensor"};
  return kNames[value.index()];
}

SymbolRanges Graph::symbol_ranges() const {
  SymbolRanges out;
  for (const SymbolicDim& s : symbols)
    out[s.name] = {s.min, s.max};
  return out;
}

int64_t Graph::max_bytes(TensorId id) const {
  const Tensor& t = tensor(id);
  if (!t.is_dynamic()) return t.bytes();
  const SymbolRanges ranges = symbol_ranges();
  int64_t bytes = dtype_size(t.dtype);
  for (const DimExpr& d : t.dims)
    bytes = checked_mul(bytes, std::max<int64_t>(0, d.bounds(ranges).hi), "tensor bytes");
  return bytes;
}

SymbolValues Graph::planning_values() const {
  SymbolValues out;
  for (const SymbolicDim& s : symbols)
    out[s.name] = s.typical;
  return out;
}

Shape Graph::planning_shape(const SymShape& shape) const {
  const SymbolValues values = planning_values();
  Shape out;
  for (const DimExpr& d : shape)
    out.push_back(d.evaluate(values));
  return out;
}

TensorId Graph::add_tensor(Tensor t) {
  tensors.push_back(std::move(t));
  return static_cast<TensorId>(tensors.size() - 1);
}

const Tensor& Graph::tensor(TensorId id) const {
  STITCH_INTERNAL_CHECK(id >= 0 && id < static_cast<TensorId>(tensors.size()), "tensor id {}", id);
  return tensors[id];
}

Tensor& Graph::tensor(TensorId id) {
  STITCH_INTERNAL_CHECK(id >= 0 && id < static_cast<TensorId>(tensors.size()), "tensor id {}", id);
  return tensors[id];
}

std::vector<int32_t> Graph::producers() const {
  std::vector<int32_t> prod(tensors.size(), -1);
  for (size_t n = 0; n < nodes.size(); ++n)
    for (TensorId t : nodes[n].outputs)
      if (t != kNoTensor) prod[t] = static_cast<int32_t>(n);
  return prod;
}

std::vector<std::vector<int32_t>> Graph::consumers() const {
  std::vector<std::vector<int32_t>> cons(tensors.size());
  for (size_t n = 0; n < nodes.size(); ++n)
    for (TensorId t : nodes[n].inputs)
      if (t != kNoTensor && (cons[t].empty() || cons[t].back() != static_cast<int32_t>(n)))
        cons[t].push_back(static_cast<int32_t>(n));
  return cons;
}

bool Graph::is_graph_output(TensorId id) const {
  for (TensorId o : outputs)
    if (o == id) return true;
  return false;
}

bool Graph::compact() {
  size_t before_nodes = nodes.size(), before_tensors = tensors.size();
  std::vector<Node> kept;
  kept.reserve(nodes.size());
  for (Node& n : nodes)
    if (!n.removed) kept.push_back(std::move(n));
  nodes = std::move(kept);

  // Keep tensors that something still names: graph inputs/outputs, node operands, and the
  // storage of kept views.
  std::vector<char> used(tensors.size(), 0);
  for (TensorId t : inputs)
    used[t] = 1;
  for (TensorId t : outputs)
    used[t] = 1;
  for (const Node& n : nodes) {
    for (TensorId t : n.inputs)
      if (t != kNoTensor) used[t] = 1;
    for (TensorId t : n.outputs)
      if (t != kNoTensor) used[t] = 1;
    for (const auto& [key, attr] : n.attrs)
      if (auto* t = std::get_if<TensorId>(&attr.value)) used[*t] = 1;
  }
  for (size_t t = 0; t < tensors.size(); ++t) // a view's base stays while the view does
    for (TensorId v = static_cast<TensorId>(t); used[t] && tensors[v].view_of != kNoTensor;
         v = tensors[v].view_of)
      used[tensors[v].view_of] = 1;

  std::vector<TensorId> remap(tensors.size(), kNoTensor);
  std::vector<Tensor> kept_tensors;
  for (size_t t = 0; t < tensors.size(); ++t) {
    if (!used[t]) continue;
    remap[t] = static_cast<TensorId>(kept_tensors.size());
    kept_tensors.push_back(std::move(tensors[t]));
  }
  tensors = std::move(kept_tensors);
  auto fix = [&](TensorId& t) {
    if (t != kNoTensor) t = remap[t];
  };
  for (Tensor& t : tensors)
    fix(t.view_of);
  for (TensorId& t : inputs)
    fix(t);
  for (TensorId& t : outputs)
    fix(t);
  for (Node& n : nodes) {
    for (TensorId& t : n.inputs)
      fix(t);
    for (TensorId& t : n.outputs)
      fix(t);
    for (auto& [key, attr] : n.attrs)
      if (auto* t = std::get_if<TensorId>(&attr.value)) fix(*t);
  }
  return nodes.size() != before_nodes || tensors.size() != before_tensors;
}

} // namespace stitch
