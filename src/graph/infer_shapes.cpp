// infer-shapes: shape rules plus value propagation, node by node.
#include "graph/infer_shapes.h"

#include "graph/fold.h"
#include "graph/infer_dims.h"
#include "graph/shape_rules.h"

namespace stitch {

namespace {

bool can_evaluate(const Graph& graph, const Node& node) {
  if (fold_function(node.op) == &no_fold) return false;
  if (folds_from_types_only(node.op)) return true;
  for (TensorId t : node.inputs)
    if (t != kNoTensor && !graph.tensor(t).is_constant()) return false;
  for (TensorId t : node.outputs)
    if (t != kNoTensor && graph.tensor(t).bytes() > kMaxFoldBytes) return false;
  return true;
}

void evaluate(Graph& graph, const Node& node) {
  FoldResult values = fold_function(node.op)(graph, node);
  if (values.empty()) return;
  STITCH_INTERNAL_CHECK(values.size() == node.outputs.size(),
                        "{} fold gave {} values for {} outputs", op_name(node.op), values.size(),
                        node.outputs.size());
  for (size_t i = 0; i < values.size(); ++i) {
    if (node.outputs[i] == kNoTensor) continue;
    Tensor& out = graph.tensor(node.outputs[i]);
    STITCH_INTERNAL_CHECK(values[i] && static_cast<int64_t>(values[i]->bytes.size()) == out.bytes(),
                          "{} fold of '{}' gave the wrong byte count", op_name(node.op), out.name);
    out.constant = values[i];
  }
}

void check_declared_outputs(const Graph& graph) {
  for (const auto& [id, decl] : graph.declared_outputs) {
    const Tensor& t = graph.tensor(id);
    ErrorSite site{graph.source_file, "", ""};
    if (decl.onnx_elem_type != 0 && decl.onnx_elem_type != dtype_onnx_code(t.dtype))
      user_fail(site, "graph output '{}' is declared {} but computes {}", t.name,
                onnx_dtype_code_name(decl.onnx_elem_type), dtype_name(t.dtype));
    if (!decl.has_shape) continue;
    // A fixed declared dim must be that number for every value of the symbols.
    const SymShape computed = t.sym_shape();
    bool same_rank = decl.dims.size() == computed.size();
    for (size_t i = 0; same_rank && i < decl.dims.size(); ++i)
      same_rank = decl.dims[i] < 0 || computed[i] == DimExpr(decl.dims[i]);
    if (!same_rank) {
      std::vector<std::string> dims;
      for (int64_t d : decl.dims)
        dims.push_back(d < 0 ? "?" : std::to_string(d));
      user_fail(site, "graph output '{}' is declared with shape [{}] but computes {}", t.name,
                fmt::join(dims, ","), sym_shape_to_string(computed));
    }
  }
}

} // namespace

bool infer_shapes(Graph& graph) {
  for (Node& node : graph.nodes) {
    InferContext ctx(graph, node);
    shape_rule(node.op)(ctx);
    for (size_t i = 0; i < node.outputs.size(); ++i) {
      if (node.outputs[i] == kNoTensor) continue;
      if (!graph.tensor(node.outputs[i]).typed)
        ctx.fail("has output {} ('{}'), which this op does not produce", i,
                 graph.tensor(node.outputs[i]).name);
    }
    if (can_evaluate(graph, node)) evaluate(graph, node);
    infer_node_dims(ctx);
  }
  check_declared_outputs(graph);
  return true;
}

} // namespace stitch
