// copy-shared-ranges: see copy_shared_ranges.h.
#include "graph/copy_shared_ranges.h"

#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "graph/ops.h"

namespace stitch {

namespace {

// A node reading the Range: its index, the views from the Range to the tensor it reads (in
// order), and that tensor.
struct Reader {
  int32_t node = -1;
  std::vector<int32_t> views;
  TensorId reads = kNoTensor;
};

// The readers of `t` and of the views of it, each through its views; false where one of them
// is neither a view nor pointwise, or a tensor on the way is a graph output.
bool collect_readers(const Graph& graph, const std::vector<std::vector<int32_t>>& consumers,
                     TensorId t, std::vector<int32_t>& path, std::vector<Reader>& readers) {
  if (graph.is_graph_output(t)) return false;
  for (int32_t c : consumers[t]) {
    const Node& node = graph.nodes[c];
    if (node.op == OpKind::View) {
      if (consumers[node.outputs[0]].empty()) return false; // a view read by no one: left be
      path.push_back(c);
      const bool ok = collect_readers(graph, consumers, node.outputs[0], path, readers);
      path.pop_back();
      if (!ok) return false;
    } else if (op_is_pointwise(node.op)) {
      readers.push_back({c, path, t});
    } else {
      return false;
    }
  }
  return true;
}

// A copy of tensor `id` named after it and the copy it belongs to, under a name not yet taken.
TensorId copy_tensor(Graph& graph, std::set<std::string>& taken, TensorId id, size_t copy,
                     TensorId view_of) {
  Tensor t = graph.tensor(id);
  t.name = fresh_name(taken, t.name + "/copy" + std::to_string(copy));
  t.view_of = view_of;
  return graph.add_tensor(std::move(t));
}

} // namespace

bool copy_shared_ranges(Graph& graph) {
  const std::vector<std::vector<int32_t>> consumers = graph.consumers();
  // Per original node index, the copies to insert right after it (a Range's inputs come before
  // it, so its copies and their views may follow it).
  std::vector<std::vector<Node>> after(graph.nodes.size());
  std::set<std::string> tensor_names, node_names;
  for (const Tensor& t : graph.tensors)
    tensor_names.insert(t.name);
  for (const Node& n : graph.nodes)
    if (!n.name.empty()) node_names.insert(n.name);
  bool changed = false;
  for (size_t r = 0; r < graph.nodes.size(); ++r) {
    if (graph.nodes[r].op != OpKind::Range) continue;
    std::vector<int32_t> path;
    std::vector<Reader> readers;
    if (!collect_readers(graph, consumers, graph.nodes[r].outputs[0], path, readers)) continue;
    // One copy per reading node (a node reading the Range through two views, as a causal
    // mask compares positions with themselves, reads one copy through both).
    std::map<int32_t, size_t> copy_of; // reading node -> its copy, in the readers' order
    for (const Reader& reader : readers)
      copy_of.emplace(reader.node, copy_of.size());
    if (copy_of.size() < 2 || copy_of.size() > static_cast<size_t>(kMaxRangeCopies)) continue;
    std::vector<TensorId> copies;
    std::map<std::pair<size_t, int32_t>, TensorId> view_copies; // (copy, original view)
    for (size_t k = 0; k < copy_of.size(); ++k) {
      Node range = graph.nodes[r];
      range.name = fresh_name(node_names, range.name + "/copy" + std::to_string(k + 1));
      range.outputs = {
          copy_tensor(graph, tensor_names, graph.nodes[r].outputs[0], k + 1, kNoTensor)};
      copies.push_back(range.outputs[0]);
      after[r].push_back(std::move(range));
    }
    for (const Reader& reader : readers) {
      const size_t k = copy_of.at(reader.node);
      TensorId last = copies[k];
      for (int32_t v : reader.views) {
        // A view on the way to two of the node's operands is copied once.
        auto made = view_copies.find({k, v});
        if (made != view_copies.end()) {
          last = made->second;
          continue;
        }
        Node view = graph.nodes[v];
        view.name = fresh_name(node_names, view.name + "/copy" + std::to_string(k + 1));
        view.inputs = {last};
        view.outputs = {copy_tensor(graph, tensor_names, graph.nodes[v].outputs[0], k + 1, last)};
        last = view.outputs[0];
        view_copies[{k, v}] = last;
        after[r].push_back(std::move(view));
      }
      for (TensorId& input : graph.nodes[reader.node].inputs)
        if (input == reader.reads) input = last;
    }
    // The Range and its views, read by no one now.
    graph.nodes[r].removed = true;
    for (const Reader& reader : readers)
      for (int32_t v : reader.views)
        graph.nodes[v].removed = true;
    changed = true;
  }
  if (!changed) return false;
  std::vector<Node> nodes;
  nodes.reserve(graph.nodes.size());
  for (size_t i = 0; i < graph.nodes.size(); ++i) {
    nodes.push_back(std::move(graph.nodes[i]));
    for (Node& copy : after[i])
      nodes.push_back(std::move(copy));
  }
  graph.nodes = std::move(nodes);
  graph.compact();
  return true;
}

} // namespace stitch
