// Einsum as a direct loop nest: one thread per output element, a loop per summed label, the
// operands' product accumulated in fp32 (fp64 for double, 64-bit integers for integer types).
// Repeated labels in one term (diagonals) add their axes' strides; "..." dims and labels of
// size 1 broadcast. This is the general fallback: it does no tiling, so lower-composites makes
// every two-operand Einsum that is a matrix product a MatMul (cuBLASLt), and this kernel runs
// the others (one operand, three or more, diagonals, labels summed in one operand only).
#include <algorithm>
#include <map>

#include "emitter/kernel_movement.h"
#include "graph/op_params.h"

namespace stitch {

namespace {

struct Einsum {
  std::map<int, int64_t> dims;                 // label -> size
  std::vector<int> output;                     // output axes' labels
  std::vector<int> summed;                     // labels summed over
  std::vector<std::map<int, int64_t>> strides; // per operand: label -> element stride
};

// The labels (op_params.h), each label's size (a non-1 size wins) and each operand's stride
// per label (a repeated label adds its axes' strides; a broadcast axis has none).
Einsum analyze(const GroupEmitContext& ctx) {
  NodeContext nc(ctx.graph(), ctx.node());
  const EinsumLabels labels = read_einsum_labels(nc);
  Einsum e;
  e.output = labels.output;
  for (int i = 0; i < nc.num_inputs(); ++i) {
    const Shape& shape = nc.shape(i);
    for (size_t a = 0; a < shape.size(); ++a) {
      int64_t& d = e.dims[labels.inputs[static_cast<size_t>(i)][a]];
      if (d <= 1) d = shape[a];
    }
  }
  for (int i = 0; i < nc.num_inputs(); ++i) {
    const Shape& shape = nc.shape(i);
    const Shape strides = row_major_strides(shape);
    std::map<int, int64_t> by_label;
    for (size_t a = 0; a < shape.size(); ++a) {
      const int label = labels.inputs[static_cast<size_t>(i)][a];
      if (shape[a] == 1 && e.dims[label] != 1) continue; // broadcast
      by_label[label] += strides[a];
    }
    e.strides.push_back(by_label);
  }
  for (const auto& [label, size] : e.dims)
    if (std::find(e.output.begin(), e.output.end(), label) == e.output.end())
      e.summed.push_back(label);
  return e;
}

} // namespace

void emit_einsum(const GroupEmitContext& ctx, CodeWriter& out) {
  const Node& node = ctx.node();
  const Tensor& result = ctx.tensor(node.outputs[0]);
  Einsum e = analyze(ctx);
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
  int64_t inner = 1;
  for (int label : e.summed)
    inner *= e.dims[label];
  open_kernel(ctx, out, kernel, args,
              {fmt::format("Einsum \"{}\": one thread per output element, {} summed label(s) "
                           "({} products each), accumulated in {}.",
                           NodeContext(ctx.graph(), node).attr_string("equation", ""),
                           e.summed.size(), inner, acc)});
  open_grid_stride_loop(out, result.elements());
  Shape out_dims;
  for (int label : e.output)
    out_dims.push_back(e.dims[label]);
  emit_coordinates(out, out_dims, "i", "o");
  std::vector<std::string> out_names = coordinate_names(out_dims, "o");
  std::vector<std::string> sum_names = coordinate_names(e.summed.size(), "s");
  std::vector<std::string> factors;
  for (size_t i = 0; i < node.inputs.size(); ++i) {
    std::vector<int64_t> base_strides, inner_strides;
    for (int label : e.output)
      base_strides.push_back(e.strides[i].count(label) ? e.strides[i].at(label) : 0);
    for (int label : e.summed)
      inner_strides.push_back(e.strides[i].count(label) ? e.strides[i].at(label) : 0);
    out.linef("const int64_t base{} = {};", i, linear_index(out_names, base_strides));
    std::string offset = linear_index(sum_names, inner_strides);
    factors.push_back(
        fmt::format("{}(in{}[base{}{}])", acc, i, i, offset == "0" ? "" : " + " + offset));
  }
  out.linef("{} sum = 0;", acc);
  for (size_t j = 0; j < e.summed.size(); ++j)
    out.open(
        fmt::format("for (int64_t {0} = 0; {0} < {1}; ++{0})", sum_names[j], e.dims[e.summed[j]]));
  out.linef("sum += {};", fmt::join(factors, " * "));
  for (size_t j = 0; j < e.summed.size(); ++j)
    out.close();
  out.linef("out[i] = {}(sum);", type);
  out.close();
  finish_kernel(ctx, out, kernel, args);
}

} // namespace stitch
