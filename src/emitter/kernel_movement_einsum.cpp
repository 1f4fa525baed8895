// Einsum as a direct loop nest: one thread per output element, a loop per summed label, the
// operands' product accumulated in fp32 (fp64 for double, 64-bit integers for integer types).
// Repeated labels in one term (diagonals) add their axes' strides; "..." dims and labels of
// size 1 broadcast. This is the general fallback: it does no tiling, so lower-composites makes
// every two-operand Einsum that is a matrix product a MatMul (cuBLASLt), and this kernel runs
// the others (one operand, three or more, diagonals, labels summed in one operand only), over
// symbolic dims with the run's extents and strides.
#include <algorithm>
#include <map>

#include "emitter/kernel_movement.h"
#include "graph/op_params.h"

namespace stitch {

namespace {

struct Einsum {
  std::map<int, DimExpr> dims;                 // label -> size
  std::vector<int> output;                     // output axes' labels
  std::vector<int> summed;                     // labels summed over
  std::vector<std::map<int, DimExpr>> strides; // per operand: label -> element stride
};

// The labels (op_params.h), each label's size (a size other than 1 wins) and each operand's
// stride per label (a repeated label adds its axes' strides; a broadcast axis has none). Over
// symbolic dims the sizes and strides are expressions of the symbols, and an axis broadcasts
// where it is 1 at every shape; at fixed shapes they are constants.
Einsum analyze(const GroupEmitContext& ctx, bool symbolic) {
  NodeContext nc(ctx.graph(), ctx.node());
  const EinsumLabels labels = read_einsum_labels(nc);
  auto dims_of = [&](int i) {
    const Tensor& t = ctx.tensor(ctx.node().inputs[static_cast<size_t>(i)]);
    return symbolic ? t.sym_shape() : sym_shape_of(t.shape);
  };
  Einsum e;
  e.output = labels.output;
  for (int i = 0; i < nc.num_inputs(); ++i) {
    const SymShape shape = dims_of(i);
    for (size_t a = 0; a < shape.size(); ++a) {
      const auto [d, inserted] =
          e.dims.try_emplace(labels.inputs[static_cast<size_t>(i)][a], shape[a]);
      if (!inserted && is_one(d->second)) d->second = shape[a];
    }
  }
  for (int i = 0; i < nc.num_inputs(); ++i) {
    const SymShape shape = dims_of(i);
    const SymShape strides = sym_row_major_strides(shape);
    std::map<int, DimExpr> by_label;
    for (size_t a = 0; a < shape.size(); ++a) {
      const int label = labels.inputs[static_cast<size_t>(i)][a];
      if (is_one(shape[a]) && !is_one(e.dims.at(label))) continue; // broadcast
      const auto [stride, inserted] = by_label.try_emplace(label, strides[a]);
      if (!inserted) stride->second = stride->second + strides[a];
    }
    e.strides.push_back(by_label);
  }
  for (const auto& [label, size] : e.dims)
    if (std::find(e.output.begin(), e.output.end(), label) == e.output.end())
      e.summed.push_back(label);
  return e;
}

// Operand `i`'s stride along each of `labels` (0 where it has none).
std::vector<DimExpr> label_strides(const Einsum& e, size_t i, const std::vector<int>& labels) {
  std::vector<DimExpr> out;
  for (int label : labels) {
    const auto stride = e.strides[i].find(label);
    out.push_back(stride != e.strides[i].end() ? stride->second : DimExpr(0));
  }
  return out;
}

// The offset `names` (coordinates along `strides`) make: the run's strides over symbolic dims,
// literals at fixed shapes.
std::string offset_of(const GroupEmitContext& ctx, bool symbolic,
                      const std::vector<std::string>& names, const std::vector<DimExpr>& strides) {
  if (symbolic) return symbolic_offset(ctx, names, strides);
  std::vector<int64_t> fixed;
  for (const DimExpr& s : strides)
    fixed.push_back(s.constant_value());
  return linear_index(names, fixed);
}

} // namespace

void emit_einsum(const GroupEmitContext& ctx, CodeWriter& out) {
  const Node& node = ctx.node();
  const Tensor& result = ctx.tensor(node.outputs[0]);
  // Over symbolic dims every extent and stride is the run's.
  const bool symbolic = ctx.group().launch.work_per_block > 0;
  const Einsum e = analyze(ctx, symbolic);
  const std::string type = ctype(result.dtype, ctx);
  const std::string acc = dtype_is_float(result.dtype)
                              ? (result.dtype == DType::Float64 ? "double" : "float")
                          : dtype_is_signed_int(result.dtype) ? "int64_t"
                                                              : "uint64_t";
  std::string kernel = ctx.kernel_name();
  std::vector<KernelArg> args;
  for (size_t i = 0; i < node.inputs.size(); ++i)
    args.push_back(input_arg(ctx, node.inputs[i], fmt::format("in{}", i)));
  args.push_back(output_arg(ctx, node.outputs[0], "out"));
  DimExpr inner(1);
  for (int label : e.summed)
    inner = inner * e.dims.at(label);
  open_kernel(ctx, out, kernel, args,
              {fmt::format("Einsum \"{}\": one thread per output element, {} summed label(s) "
                           "({} products each), accumulated in {}.",
                           NodeContext(ctx.graph(), node).attr_string("equation", ""),
                           e.summed.size(), inner.to_string(), acc)});
  std::vector<std::string> out_names;
  if (symbolic) {
    SymShape out_dims;
    for (int label : e.output)
      out_dims.push_back(e.dims.at(label));
    open_symbolic_loop(ctx, out);
    emit_run_coordinates(ctx, out, out_dims);
    out_names = coordinate_names(out_dims.size(), "c");
  } else {
    open_grid_stride_loop(out, result.elements());
    Shape out_dims;
    for (int label : e.output)
      out_dims.push_back(e.dims.at(label).constant_value());
    emit_coordinates(out, out_dims, "i", "o");
    out_names = coordinate_names(out_dims, "o");
  }
  std::vector<std::string> sum_names = coordinate_names(e.summed.size(), "s");
  std::vector<std::string> factors;
  for (size_t i = 0; i < node.inputs.size(); ++i) {
    out.linef("const int64_t base{} = {};", i,
              offset_of(ctx, symbolic, out_names, label_strides(e, i, e.output)));
    const std::string offset = offset_of(ctx, symbolic, sum_names, label_strides(e, i, e.summed));
    factors.push_back(
        fmt::format("{}(in{}[base{}{}])", acc, i, i, offset == "0" ? "" : " + " + offset));
  }
  out.linef("{} sum = 0;", acc);
  for (size_t j = 0; j < e.summed.size(); ++j)
    out.open(fmt::format("for (int64_t {0} = 0; {0} < {1}; ++{0})", sum_names[j],
                         dim_code(ctx.graph(), e.dims.at(e.summed[j]))));
  out.linef("sum += {};", fmt::join(factors, " * "));
  for (size_t j = 0; j < e.summed.size(); ++j)
    out.close();
  out.linef("out[i] = {}(sum);", type);
  out.close();
  finish_kernel(ctx, out, kernel, args);
}

} // namespace stitch
