// Copies that select or repeat input elements at positions known at compile time: Concat,
// Split (every output in one kernel), Slice (any steps, negative included), Tile, Pad (constant,
// reflect, edge, wrap; negative pads crop), Trilu, and the value generators Range and
// ConstantOfShape when they were not folded. One thread per output element (per input element
// for Split), grid-stride, with the shapes baked in.
#include <algorithm>
#include <memory>

#include "emitter/kernel_movement.h"
#include "graph/op_params.h"

namespace stitch {

namespace {

// The product of dims [from, to).
int64_t dims_product(const Shape& dims, size_t from, size_t to) {
  int64_t p = 1;
  for (size_t d = from; d < to; ++d)
    p *= dims[d];
  return p;
}

// A scalar operand: its constant value as a literal, or a read of the run-time tensor through
// a kernel parameter named `name` (added to args).
std::string scalar_operand(const GroupEmitContext& ctx, TensorId t, const std::string& name,
                           std::vector<KernelArg>& args) {
  const Tensor& tensor = ctx.tensor(t);
  if (tensor.is_constant()) return constant_element_literal(ctx, tensor, 0);
  args.push_back(input_arg(ctx, t, name));
  return name + "[0]";
}

} // namespace

void emit_concat(const GroupEmitContext& ctx, CodeWriter& out) {
  const Node& node = ctx.node();
  const Graph& g = ctx.graph();
  NodeContext nc(g, node);
  // Extents as expressions: constants for fixed shapes, the run's over symbolic dims.
  const SymShape shape = ctx.tensor(node.outputs[0]).sym_shape();
  const size_t axis = static_cast<size_t>(nc.normalize_axis(nc.req_int("axis"), nc.rank(0)));
  const DimExpr inner = sym_elements(SymShape(shape.begin() + axis + 1, shape.end()));
  const DimExpr outer = sym_elements(SymShape(shape.begin(), shape.begin() + axis));
  const DimExpr total = shape[axis] * inner; // elements per outer index
  std::string kernel = ctx.kernel_name();
  std::vector<KernelArg> args;
  std::vector<std::pair<std::string, DimExpr>> parts; // parameter name, elements per outer index
  for (size_t k = 0; k < node.inputs.size(); ++k) {
    const DimExpr chunk = ctx.tensor(node.inputs[k]).sym_shape()[axis] * inner;
    if (chunk == DimExpr(0)) continue;
    std::string name = fmt::format("in{}", k);
    args.push_back(input_arg(ctx, node.inputs[k], name));
    parts.emplace_back(name, chunk);
  }
  args.push_back(output_arg(ctx, node.outputs[0], "out"));
  open_kernel(ctx, out, kernel, args,
              {fmt::format("Concatenation along axis {}: each output row of {} elements is the "
                           "inputs' rows one after another.",
                           axis, total.to_string())});
  if (ctx.group().launch.work_per_block > 0)
    open_symbolic_loop(ctx, out);
  else
    open_grid_stride_loop(out, ctx.tensor(node.outputs[0]).elements());
  if (outer == DimExpr(1))
    out.line("const int64_t row = 0, along = i;");
  else if (total.is_constant())
    out.linef("const int64_t row = i / {0}, along = i % {0};", total.constant_value());
  else {
    out.linef("const int64_t total = {};  // {}", dim_code(g, total), total.to_string());
    const bool index32 = ctx.group().launch.index32;
    out.linef("const int64_t row = {}, along = {};", index_div(index32, "i", "total"),
              index_mod(index32, "i", "total"));
  }
  DimExpr offset = 0;
  for (size_t p = 0; p < parts.size(); ++p) {
    const auto& [name, chunk] = parts[p];
    std::string source =
        fmt::format("{}[row * {} + along{}]", name, dim_code(g, chunk),
                    offset == DimExpr(0) ? "" : fmt::format(" - {}", dim_code(g, offset)));
    if (p + 1 == parts.size())
      out.linef("{}out[i] = {};", p == 0 ? "" : "else ", source);
    else
      out.linef("{}if (along < {}) out[i] = {};", p == 0 ? "" : "else ",
                dim_code(g, offset + chunk), source);
    offset = offset + chunk;
  }
  out.close();
  finish_kernel(ctx, out, kernel, args);
}

void emit_split(const GroupEmitContext& ctx, CodeWriter& out) {
  const Node& node = ctx.node();
  NodeContext nc(ctx.graph(), node);
  const Shape& shape = ctx.tensor(node.inputs[0]).shape;
  const size_t axis = static_cast<size_t>(nc.normalize_axis(nc.attr_int("axis", 0), nc.rank(0)));
  const int64_t inner = dims_product(shape, axis + 1, shape.size());
  const int64_t outer = dims_product(shape, 0, axis);
  const int64_t total = shape[axis] * inner;
  std::string kernel = ctx.kernel_name();
  std::vector<KernelArg> args = {input_arg(ctx, node.inputs[0], "in")};
  struct Part {
    std::string name;
    int64_t offset = 0, chunk = 0;
  };
  std::vector<Part> parts;
  int64_t offset = 0;
  for (size_t k = 0; k < node.outputs.size(); ++k) {
    if (node.outputs[k] == kNoTensor) continue;
    int64_t chunk = ctx.tensor(node.outputs[k]).shape[axis] * inner;
    if (chunk > 0) {
      std::string name = fmt::format("out{}", k);
      args.push_back(output_arg(ctx, node.outputs[k], name));
      parts.push_back({name, offset, chunk});
    }
    offset += chunk;
  }
  open_kernel(ctx, out, kernel, args,
              {fmt::format("Split along axis {}: one thread per input element, which goes to the "
                           "output whose part of the {}-element row holds it.",
                           axis, total)});
  open_grid_stride_loop(out, ctx.tensor(node.inputs[0]).elements());
  if (outer == 1)
    out.line("const int64_t row = 0, along = i;");
  else
    out.linef("const int64_t row = i / {0}, along = i % {0};", total);
  out.line("const auto value = in[i];");
  for (size_t p = 0; p < parts.size(); ++p) {
    const Part& part = parts[p];
    std::string target = fmt::format("{}[row * {} + along{}]", part.name, part.chunk,
                                     part.offset == 0 ? "" : fmt::format(" - {}", part.offset));
    bool last = p + 1 == parts.size() && part.offset + part.chunk == total;
    std::string condition =
        fmt::format("along >= {} && along < {}", part.offset, part.offset + part.chunk);
    if (part.offset == 0) condition = fmt::format("along < {}", part.chunk);
    if (last && p > 0)
      out.linef("else {} = value;", target);
    else if (last)
      out.linef("{} = value;", target);
    else
      out.linef("{}if ({}) {} = value;", p == 0 ? "" : "else ", condition, target);
  }
  out.close();
  finish_kernel(ctx, out, kernel, args);
}

namespace {

// A Slice over symbolic dims (legality_symbolic.cpp's slice_support): one thread per output
// element, its coordinates divided out of the flat index by the output's dims, the input read
// at start + c * step along each sliced axis (along a symbolic axis the raw start, a constant
// >= 0 (at most dim - 1 with a negative step), or max(dim + start, 0) for one counted from the
// end; the clamped one along a fixed axis), through the input's strides over the symbols.
void emit_symbolic_slice(const GroupEmitContext& ctx, CodeWriter& out) {
  const Node& node = ctx.node();
  const Graph& g = ctx.graph();
  NodeContext nc(g, node);
  const SymShape in = g.tensor(node.inputs[0]).sym_shape();
  const SymShape result = g.tensor(node.outputs[0]).sym_shape();
  std::vector<DimExpr> start(in.size(), DimExpr(0));
  std::vector<int64_t> step(in.size(), 1);
  const std::vector<int64_t> raw_starts =
      nc.opset() < 10 ? nc.req_ints("starts") : nc.const_int_vector(1, "starts");
  const std::vector<SliceAxis> slices = read_slice_params(nc); // in the order of `raw_starts`
  for (size_t i = 0; i < slices.size(); ++i) {
    const auto axis = static_cast<size_t>(slices[i].axis);
    step[axis] = slices[i].step;
    // Along a symbolic axis the raw start, or one counted from the run's end of the axis; a
    // negative step starts at most at the axis's last element.
    const int64_t raw = raw_starts[i];
    if (in[axis].is_constant())
      start[axis] = DimExpr(slices[i].start);
    else if (raw < 0)
      start[axis] = DimExpr::max(in[axis] + raw, 0);
    else
      start[axis] = slices[i].step > 0 ? DimExpr(raw) : DimExpr::min(in[axis] - 1, raw);
  }
  std::vector<DimExpr> strides(in.size(), DimExpr(1));
  for (size_t d = in.size(); d-- > 1;)
    strides[d - 1] = strides[d] * in[d];
  std::string kernel = ctx.kernel_name();
  std::vector<KernelArg> args = {input_arg(ctx, node.inputs[0], "in"),
                                 output_arg(ctx, node.outputs[0], "out")};
  open_kernel(ctx, out, kernel, args,
              {fmt::format("Slice of {} into {}: one thread per output element.",
                           sym_shape_to_string(in), sym_shape_to_string(result))});
  std::vector<DimExpr> read_strides;
  DimExpr base = 0;
  for (size_t d = 0; d < in.size(); ++d) {
    base = base + start[d] * strides[d];
    read_strides.push_back(strides[d] * step[d]);
  }
  open_symbolic_loop(ctx, out);
  emit_symbolic_strided_read(ctx, out, result, read_strides, base);
  out.close();
  finish_kernel(ctx, out, kernel, args);
}

} // namespace

void emit_slice(const GroupEmitContext& ctx, CodeWriter& out) {
  const Node& node = ctx.node();
  if (ctx.group().launch.work_per_block > 0) return emit_symbolic_slice(ctx, out);
  NodeContext nc(ctx.graph(), node);
  const Shape& in = ctx.tensor(node.inputs[0]).shape;
  Shape in_strides = row_major_strides(in);
  StridedView view;
  view.dims = ctx.tensor(node.outputs[0]).shape;
  view.strides = in_strides;
  std::vector<std::string> described;
  for (const SliceAxis& s : read_slice_params(nc)) {
    view.base += s.start * in_strides[s.axis];
    view.strides[s.axis] = s.step * in_strides[s.axis];
    described.push_back(
        fmt::format("axis {}: {} from {} step {}", s.axis, s.length, s.start, s.step));
  }
  std::string kernel = ctx.kernel_name();
  std::vector<KernelArg> args = {input_arg(ctx, node.inputs[0], "in"),
                                 output_arg(ctx, node.outputs[0], "out")};
  open_kernel(ctx, out, kernel, args,
              {fmt::format("Slice ({}): a strided read, one thread per output element.",
                           fmt::join(described, "; "))});
  open_grid_stride_loop(out, ctx.tensor(node.outputs[0]).elements());
  emit_strided_read(out, view);
  out.close();
  finish_kernel(ctx, out, kernel, args);
}

void emit_tile(const GroupEmitContext& ctx, CodeWriter& out) {
  const Node& node = ctx.node();
  const Shape& in = ctx.tensor(node.inputs[0]).shape;
  const Shape& shape = ctx.tensor(node.outputs[0]).shape;
  Shape in_strides = row_major_strides(in);
  std::string kernel = ctx.kernel_name();
  std::vector<KernelArg> args = {input_arg(ctx, node.inputs[0], "in"),
                                 output_arg(ctx, node.outputs[0], "out")};
  open_kernel(ctx, out, kernel, args,
              {fmt::format("Tile {} to {}: output coordinate c reads input coordinate c modulo "
                           "the input's dims.",
                           shape_to_string(in), shape_to_string(shape))});
  // Over symbolic dims every extent is the run's: an axis the Tile repeats reads its coordinate
  // modulo the input's extent, one it keeps (equal expressions) the coordinate itself.
  if (ctx.group().launch.work_per_block > 0) {
    const Graph& g = ctx.graph();
    const SymShape in_dims = ctx.tensor(node.inputs[0]).sym_shape();
    const SymShape out_dims = ctx.tensor(node.outputs[0]).sym_shape();
    open_symbolic_loop(ctx, out);
    emit_run_coordinates(ctx, out, out_dims);
    std::vector<std::string> coords;
    for (size_t d = 0; d < in_dims.size(); ++d) {
      if (is_one(in_dims[d]))
        coords.push_back("0");
      else if (in_dims[d] == out_dims[d])
        coords.push_back(fmt::format("c{}", d));
      else if (const std::string mod = index_mod(ctx.group().launch.index32, fmt::format("c{}", d),
                                                 dim_code(g, in_dims[d]));
               mod.find(" % ") != std::string::npos)
        coords.push_back("(" + mod + ")");
      else
        coords.push_back(mod);
    }
    out.linef("out[i] = in[{}];", symbolic_offset(ctx, coords, sym_row_major_strides(in_dims)));
    out.close();
    finish_kernel(ctx, out, kernel, args);
    return;
  }
  open_grid_stride_loop(out, ctx.tensor(node.outputs[0]).elements());
  emit_coordinates(out, shape, "i");
  std::vector<std::string> coords;
  for (size_t d = 0; d < in.size(); ++d) {
    if (in[d] == 1)
      coords.push_back("0");
    else if (in[d] == shape[d])
      coords.push_back(fmt::format("c{}", d));
    else
      coords.push_back(fmt::format("(c{} % {})", d, in[d]));
  }
  out.linef("out[i] = in[{}];", linear_index(coords, in_strides));
  out.close();
  finish_kernel(ctx, out, kernel, args);
}

void emit_pad(const GroupEmitContext& ctx, CodeWriter& out) {
  const Node& node = ctx.node();
  NodeContext nc(ctx.graph(), node);
  const Tensor& input = ctx.tensor(node.inputs[0]);
  const Shape& in = input.shape;
  const Shape& shape = ctx.tensor(node.outputs[0]).shape;
  const int64_t rank = nc.rank(0);
  const std::string mode = nc.attr_string("mode", "constant");
  std::string kernel = ctx.kernel_name();
  std::vector<KernelArg> args = {input_arg(ctx, node.inputs[0], "in"),
                                 output_arg(ctx, node.outputs[0], "out")};

  // The pads per axis, read as the shape rule reads them.
  std::string fill = typed_literal(input.dtype, 0.0, ctx);
  if (nc.opset() < 11)
    fill = typed_literal(input.dtype, nc.attr_float("value", 0.0), ctx);
  else if (nc.has_input(2) && nc.input(2).elements() == 1)
    fill = scalar_operand(ctx, node.inputs[2], "fill", args);
  // Over symbolic dims every coordinate is taken from the run's extents, an axis's window of
  // the input is the run's, and pads computed from the symbols (never negative: the shape rule)
  // are the run's too.
  const bool symbolic = ctx.group().launch.work_per_block > 0;
  const std::vector<DimExpr> pads = read_sym_pads_per_axis(nc);
  const std::vector<DimExpr> begin(pads.begin(), pads.begin() + rank),
      end(pads.begin() + rank, pads.end());
  const SymShape in_dims = symbolic ? input.sym_shape() : sym_shape_of(in);
  std::vector<std::string> begins, ends;
  for (size_t d = 0; d < static_cast<size_t>(rank); ++d) {
    begins.push_back(begin[d].to_string());
    ends.push_back(end[d].to_string());
  }

  open_kernel(ctx, out, kernel, args,
              {fmt::format("Pad {} to {} in {} mode, pads begin [{}] end [{}]; a negative pad "
                           "crops first, and the mode pads the cropped axis.",
                           shape_to_string(in), shape_to_string(shape), mode,
                           fmt::join(begins, ","), fmt::join(ends, ","))});
  if (symbolic) {
    open_symbolic_loop(ctx, out);
    emit_run_coordinates(ctx, out, ctx.tensor(node.outputs[0]).sym_shape());
  } else {
    open_grid_stride_loop(out, ctx.tensor(node.outputs[0]).elements());
    emit_coordinates(out, shape, "i");
  }
  // A pad's crop (a negative constant) and its shift (a pad of the run's, or a positive one).
  auto crop = [](const DimExpr& p) {
    return p.is_constant() ? std::max<int64_t>(0, -p.constant_value()) : 0;
  };
  auto shift = [](const DimExpr& p) {
    return p.is_constant() ? DimExpr(std::max<int64_t>(0, p.constant_value())) : p;
  };
  std::vector<std::string> coords, outside;
  for (size_t d = 0; d < static_cast<size_t>(rank); ++d) {
    if (is_zero(begin[d]) && is_zero(end[d])) {
      coords.push_back(is_one(in_dims[d]) ? "0" : fmt::format("c{}", d));
      continue;
    }
    // The axis's window of the input after cropping, and where it starts in the output.
    const int64_t crop_begin = crop(begin[d]);
    const DimExpr window_dims = in_dims[d] - (crop_begin + crop(end[d]));
    const std::string window = dim_code(ctx.graph(), window_dims);
    const DimExpr shifted = shift(begin[d]);
    std::string x = is_zero(shifted) ? fmt::format("c{}", d)
                                     : fmt::format("c{} - {}", d, dim_code(ctx.graph(), shifted));
    std::string name = fmt::format("x{}", d);
    if (mode == "constant") {
      out.linef("const int64_t {} = {};", name, x);
      outside.push_back(fmt::format("{0} < 0 || {0} >= {1}", name, window));
    } else {
      if (window_dims.is_constant() && window_dims.constant_value() <= 0 &&
          ctx.tensor(node.outputs[0]).elements() > 0)
        ctx.spec_error(fmt::format("{} padding of axis {} whose pads crop every element (the "
                                   "shape rule refuses it)",
                                   mode, d));
      const char* fn = mode == "reflect" ? "reflect_index"
                       : mode == "edge"  ? "edge_index"
                                         : "wrap_around_index";
      out.linef("const int64_t {} = stitch::movement::{}({}, {});", name, fn, x, window);
    }
    coords.push_back(crop_begin == 0 ? name : fmt::format("({} + {})", name, crop_begin));
  }
  if (!outside.empty())
    out.linef("if ({}) {{ out[i] = {}; continue; }}", fmt::join(outside, " || "), fill);
  out.linef("out[i] = in[{}];", symbolic
                                    ? symbolic_offset(ctx, coords, sym_row_major_strides(in_dims))
                                    : linear_index(coords, row_major_strides(in)));
  out.close();
  finish_kernel(ctx, out, kernel, args);
}

void emit_trilu(const GroupEmitContext& ctx, CodeWriter& out) {
  const Node& node = ctx.node();
  NodeContext nc(ctx.graph(), node);
  const Tensor& input = ctx.tensor(node.inputs[0]);
  const int64_t rows = input.shape[input.shape.size() - 2], cols = input.shape.back();
  const bool upper = nc.attr_flag("upper", true);
  std::string kernel = ctx.kernel_name();
  std::vector<KernelArg> args = {input_arg(ctx, node.inputs[0], "in"),
                                 output_arg(ctx, node.outputs[0], "out")};
  std::string k = "0LL";
  if (nc.has_input(1)) k = scalar_operand(ctx, node.inputs[1], "k", args);
  open_kernel(ctx, out, kernel, args,
              {fmt::format("Trilu: keeps the {} triangle of each {}x{} matrix (column - row {} k).",
                           upper ? "upper" : "lower", rows, cols, upper ? ">=" : "<=")});
  const Graph& g = ctx.graph();
  if (nc.has_input(1))
    if (std::string value = symbolic_value_code(g, node.inputs[1], "0", "int64_t"); !value.empty())
      k = value; // computed from the symbols
  out.linef("const int64_t diagonal = {};", k);
  if (ctx.group().launch.work_per_block > 0) {
    // Over symbolic dims the matrices' extents are the run's.
    const SymShape dims = input.sym_shape();
    open_symbolic_loop(ctx, out);
    out.linef("const int64_t rows = {}, columns = {};", dim_code(g, dims[dims.size() - 2]),
              dim_code(g, dims.back()));
    const bool index32 = ctx.group().launch.index32;
    out.linef("const int64_t column = {}, row = {};", index_mod(index32, "i", "columns"),
              index_mod(index32, index_div(index32, "i", "columns"), "rows"));
  } else {
    open_grid_stride_loop(out, input.elements());
    out.linef("const int64_t column = i % {}, row = i / {} % {};", cols, cols, rows);
  }
  out.linef("out[i] = column - row {} diagonal ? in[i] : {};",
            upper ? ">=" : "<=", typed_literal(input.dtype, 0.0, ctx));
  out.close();
  finish_kernel(ctx, out, kernel, args);
}

void emit_range(const GroupEmitContext& ctx, CodeWriter& out) {
  const Node& node = ctx.node();
  NodeContext nc(ctx.graph(), node);
  RangeParams range = read_range_params(nc);
  const Tensor& result = ctx.tensor(node.outputs[0]);
  std::string type = ctype(result.dtype, ctx);
  std::string kernel = ctx.kernel_name();
  std::vector<KernelArg> args = {output_arg(ctx, node.outputs[0], "out")};
  open_kernel(ctx, out, kernel, args, {"Range: out[i] = start + i * delta."});
  if (ctx.group().launch.work_per_block > 0)
    open_symbolic_loop(ctx, out); // as many elements as the run's limit makes
  else
    open_grid_stride_loop(out, result.elements());
  // An integer start computed from the symbols (a position after the run's prefix) is the
  // run's.
  const std::string start = symbolic_value_code(ctx.graph(), node.inputs[0], "0", "int64_t");
  if (range.is_float)
    out.linef("out[i] = {}({} + double(i) * {});", type,
              typed_literal(DType::Float64, range.start_real, ctx),
              typed_literal(DType::Float64, range.delta_real, ctx));
  else
    out.linef("out[i] = {}({} + i * {});", type,
              start.empty() ? int_literal(DType::Int64, range.start_int, ctx) : start,
              int_literal(DType::Int64, range.delta_int, ctx));
  out.close();
  finish_kernel(ctx, out, kernel, args);
}

void emit_constant_fill(const GroupEmitContext& ctx, CodeWriter& out) {
  const Node& node = ctx.node();
  FillValue fill = read_fill_value(NodeContext(ctx.graph(), node));
  Tensor value;
  value.dtype = fill.dtype;
  value.shape = {};
  value.constant = std::make_shared<ConstantData>(ConstantData{fill.element});
  std::string kernel = ctx.kernel_name();
  std::vector<KernelArg> args = {output_arg(ctx, node.outputs[0], "out")};
  open_kernel(ctx, out, kernel, args, {"ConstantOfShape: every element is the fill value."});
  if (ctx.group().launch.work_per_block > 0)
    open_symbolic_loop(ctx, out);
  else
    open_grid_stride_loop(out, ctx.tensor(node.outputs[0]).elements());
  out.linef("out[i] = {};", constant_element_literal(ctx, value, 0));
  out.close();
  finish_kernel(ctx, out, kernel, args);
}

} // namespace stitch
