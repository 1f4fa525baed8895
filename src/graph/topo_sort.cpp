// Kahn's algorithm over node indices; stable with respect to the original order.
#include "graph/topo_sort.h"

#include <algorithm>
#include <queue>

#include "graph/error.h"
#include "graph/infer_context.h"

namespace stitch {

void topo_sort(Graph& graph) {
  const size_t n = graph.nodes.size();
  std::vector<int32_t> producer = graph.producers();
  std::vector<std::vector<int32_t>> successors(n);
  std::vector<int32_t> indegree(n, 0);
  for (size_t i = 0; i < n; ++i) {
    std::vector<int32_t> preds;
    for (TensorId t : graph.nodes[i].inputs) {
      if (t == kNoTensor || producer[t] < 0) continue;
      preds.push_back(producer[t]);
    }
    std::sort(preds.begin(), preds.end());
    preds.erase(std::unique(preds.begin(), preds.end()), preds.end());
    for (int32_t p : preds) {
      successors[p].push_back(static_cast<int32_t>(i));
      ++indegree[i];
    }
  }
  // A min-heap on the original index keeps the model's order among ready nodes.
  std::priority_queue<int32_t, std::vector<int32_t>, std::greater<>> ready;
  for (size_t i = 0; i < n; ++i)
    if (indegree[i] == 0) ready.push(static_cast<int32_t>(i));
  std::vector<int32_t> order;
  order.reserve(n);
  while (!ready.empty()) {
    int32_t i = ready.top();
    ready.pop();
    order.push_back(i);
    for (int32_t s : successors[i])
      if (--indegree[s] == 0) ready.push(s);
  }
  if (order.size() != n) {
    // Every node left has a predecessor left: walk predecessors until one repeats; that
    // node lies on a cycle.
    std::vector<char> seen(n, 0);
    int32_t at = -1;
    for (size_t i = 0; i < n; ++i)
      if (indegree[i] > 0) {
        at = static_cast<int32_t>(i);
        break;
      }
    while (!seen[at]) {
      seen[at] = 1;
      for (TensorId t : graph.nodes[at].inputs)
        if (t != kNoTensor && producer[t] >= 0 && indegree[producer[t]] > 0) {
          at = producer[t];
          break;
        }
    }
    const Node& node = graph.nodes[at];
    user_fail(node_error_site(graph, node),
              "the graph has a cycle through this node ({} node(s) cannot be ordered)",
              n - order.size());
  }
  std::vector<Node> sorted;
  sorted.reserve(n);
  for (int32_t i : order)
    sorted.push_back(std::move(graph.nodes[i]));
  graph.nodes = std::move(sorted);
}

} // namespace stitch
