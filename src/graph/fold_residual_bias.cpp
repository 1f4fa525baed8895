// fold-residual-bias (fold_residual_bias.h).
#include "graph/fold_residual_bias.h"

#include <set>
#include <utility>

#include "graph/constant.h"
#include "graph/pass_builder.h"

namespace stitch {

namespace {

// The Conv writing `t` with a constant bias, `t` read once and not a graph output; -1 else.
int32_t biased_conv(const Graph& g, const std::vector<int32_t>& producer,
                    const std::vector<std::vector<int32_t>>& consumers,
                    const std::set<TensorId>& outputs, TensorId t) {
  if (t == kNoTensor || outputs.count(t) || consumers[t].size() != 1) return -1;
  const int32_t p = producer[t];
  if (p < 0) return -1;
  const Node& node = g.nodes[p];
  if (node.op != OpKind::Conv || node.inputs.size() != 3 || node.inputs[2] == kNoTensor ||
      node.outputs.size() != 1)
    return -1;
  const Tensor& bias = g.tensor(node.inputs[2]);
  if (!bias.is_constant() || bias.view_of != kNoTensor || bias.dtype != g.tensor(t).dtype)
    return -1;
  return p;
}

} // namespace

bool fold_residual_bias(Graph& g) {
  const std::vector<int32_t> producer = g.producers();
  const std::vector<std::vector<int32_t>> consumers = g.consumers();
  const std::set<TensorId> outputs(g.outputs.begin(), g.outputs.end());
  PassBuilder build(g);
  bool changed = false;
  for (size_t n = 0, count = g.nodes.size(); n < count; ++n) {
    const Node& add = g.nodes[n];
    if (add.op != OpKind::Add || add.inputs.size() != 2 || add.inputs[0] == add.inputs[1]) continue;
    const int32_t first = biased_conv(g, producer, consumers, outputs, add.inputs[0]);
    const int32_t second = biased_conv(g, producer, consumers, outputs, add.inputs[1]);
    if (first < 0 || second < 0) continue;
    const TensorId b1 = g.nodes[first].inputs[2], b2 = g.nodes[second].inputs[2];
    if (g.tensor(b1).shape != g.tensor(b2).shape || g.tensor(b1).dtype != g.tensor(b2).dtype)
      continue;
    std::vector<double> sum = constant_as_double(g.tensor(b1));
    const std::vector<double> other = constant_as_double(g.tensor(b2));
    for (size_t i = 0; i < sum.size(); ++i)
      sum[i] += other[i];
    const TensorId id =
        build.tensor(g.tensor(b1).name + "/residual_bias", g.tensor(b1).dtype, g.tensor(b1).shape);
    g.tensor(id).constant = make_constant_from_double(g.tensor(id).dtype, sum);
    g.nodes[first].inputs[2] = id;
    g.nodes[second].inputs.resize(2);
    // Neither result is the model's value any more: each gets a tensor of its own, so that the
    // model's names (which debug taps compare with the reference) stay on model values.
    for (auto [conv, suffix] : {std::pair{first, "/with_residual_bias"}, {second, "/unbiased"}}) {
      const TensorId old = g.nodes[conv].outputs[0];
      const TensorId fresh =
          build.tensor(g.tensor(old).name + suffix, g.tensor(old).dtype, g.tensor(old).shape);
      g.nodes[conv].outputs[0] = fresh;
      for (TensorId& input : g.nodes[n].inputs)
        if (input == old) input = fresh;
    }
    changed = true;
  }
  return changed;
}

} // namespace stitch
