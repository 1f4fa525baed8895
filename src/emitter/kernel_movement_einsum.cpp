// Einsum as a direct loop nest: one thread per output element, a loop per summed label, the
// operands' product accumulated in fp32 (fp64 for double, 64-bit integers for integer types).
// Repeated labels in one term (diagonals) add their axes' strides; "..." dims and labels of
// size 1 broadcast. This is the general fallback: it does no tiling, so a matmul-shaped Einsum
// is best lowered to MatMul (cuBLASLt) by an earlier pass.
#include <algorithm>
#include <array>
#include <map>

#include "emitter/kernel_movement.h"

namespace stitch {

namespace {

struct EinsumTerm {
  std::string labels;
  int ellipsis_at = -1; // the label position "..." stands before, or -1
};

EinsumTerm parse_term(const std::string& text) {
  EinsumTerm term;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '.') {
      term.ellipsis_at = static_cast<int>(term.labels.size());
      i += 2;
    } else {
      term.labels += text[i];
    }
  }
  return term;
}

// Labels are letters; the "..." dims get the ids 128 + j (j counting from the left of the
// broadcast "..." shape).
constexpr int kEllipsisLabel = 128;

struct Einsum {
  std::map<int, int64_t> dims;                 // label -> size
  std::vector<int> output;                     // output axes' labels
  std::vector<int> summed;                     // labels summed over
  std::vector<std::map<int, int64_t>> strides; // per operand: label -> element stride
};

Einsum analyze(const GroupEmitContext& ctx) {
  NodeContext nc(ctx.graph(), ctx.node());
  std::string equation;
  for (char c : nc.attr_string("equation", ""))
    if (c != ' ') equation += c;
  size_t arrow = equation.find("->");
  std::vector<std::string> texts(1);
  for (char c : equation.substr(0, arrow)) {
    if (c == ',')
      texts.emplace_back();
    else
      texts.back() += c;
  }
  std::vector<EinsumTerm> terms;
  Shape ellipsis;
  bool any_ellipsis = false;
  for (int i = 0; i < nc.num_inputs(); ++i) {
    terms.push_back(parse_term(texts[i]));
    if (terms.back().ellipsis_at < 0) continue;
    any_ellipsis = true;
    const Shape& shape = nc.shape(i);
    size_t rank = shape.size() - terms.back().labels.size();
    Shape part(shape.begin() + terms.back().ellipsis_at,
               shape.begin() + terms.back().ellipsis_at + rank);
    ellipsis = *broadcast_shapes(ellipsis, part);
  }
  Einsum e;
  std::array<int, 128> count{};
  // Each operand axis's label, then sizes (a non-1 size wins) and strides.
  std::vector<std::vector<int>> axis_labels;
  for (int i = 0; i < nc.num_inputs(); ++i) {
    const EinsumTerm& t = terms[i];
    const Shape& shape = nc.shape(i);
    size_t rank = t.ellipsis_at < 0 ? 0 : shape.size() - t.labels.size();
    std::vector<int> labels;
    for (size_t j = 0; j <= t.labels.size(); ++j) {
      if (static_cast<int>(j) == t.ellipsis_at)
        for (size_t k = 0; k < rank; ++k)
          labels.push_back(kEllipsisLabel + static_cast<int>(ellipsis.size() - rank + k));
      if (j < t.labels.size()) {
        labels.push_back(t.labels[j]);
        ++count[static_cast<unsigned char>(t.labels[j])];
      }
    }
    for (size_t a = 0; a < labels.size(); ++a) {
      int64_t& d = e.dims[labels[a]];
      if (d <= 1) d = shape[a];
    }
    axis_labels.push_back(labels);
  }
  for (int i = 0; i < nc.num_inputs(); ++i) {
    Shape strides = row_major_strides(nc.shape(i));
    std::map<int, int64_t> by_label;
    for (size_t a = 0; a < axis_labels[i].size(); ++a) {
      int label = axis_labels[i][a];
      if (nc.shape(i)[a] == 1 && e.dims[label] != 1) continue; // broadcast
      by_label[label] += strides[a];
    }
    e.strides.push_back(by_label);
  }
  // The output labels, explicit or implicit ("..." first, then the labels used once, sorted).
  EinsumTerm out_term;
  if (arrow != std::string::npos) {
    out_term = parse_term(equation.substr(arrow + 2));
    if (!any_ellipsis) out_term.ellipsis_at = -1;
  } else {
    out_term.ellipsis_at = any_ellipsis ? 0 : -1;
    for (int c = 0; c < 128; ++c)
      if (count[c] == 1) out_term.labels += static_cast<char>(c);
  }
  for (size_t j = 0; j <= out_term.labels.size(); ++j) {
    if (static_cast<int>(j) == out_term.ellipsis_at)
      for (size_t k = 0; k < ellipsis.size(); ++k)
        e.output.push_back(kEllipsisLabel + static_cast<int>(k));
    if (j < out_term.labels.size()) e.output.push_back(out_term.labels[j]);
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
