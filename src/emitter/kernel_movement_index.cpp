// Copies driven by run-time indices: Gather, GatherElements, GatherND (batch_dims) and
// ScatterND (reduction none/add/mul/max/min). Indices may be int32 or int64; a negative index
// counts from the end. An index out of range at run time never reads or writes out of bounds:
// the gathers write zero for it, and ScatterND skips that update (stitch_movement.cuh,
// wrap_index).
//
// ScatterND is deterministic: one kernel copies data to the output, a second applies the
// updates, a block per update row. The block first looks for other rows addressing the same
// slice (O(rows) target computations, shared by its threads): when an earlier row does, that
// row applies this one; when only later rows do, this row applies them all, each thread
// for its elements, in row order (the ONNX reference's loop order; with reduction none the
// last one wins). When the indices are constant and distinct, the scan is left out and the
// update is flat, one thread per element.
#include "emitter/kernel_movement.h"
#include "planner/group_spec.h"

namespace stitch {

namespace {

int64_t dims_product(const Shape& dims, size_t from, size_t to) {
  int64_t p = 1;
  for (size_t d = from; d < to; ++d)
    p *= dims[d];
  return p;
}

// "i / 4 % 3" without the parts that are no-ops.
std::string quotient_mod(const std::string& index, int64_t divisor, int64_t modulus) {
  std::string q = divisor == 1 ? index : fmt::format("{} / {}", index, divisor);
  if (modulus < 0) return q;
  if (modulus == 1) return "0";
  return fmt::format("{} % {}", q, modulus);
}

} // namespace

void emit_gather(const GroupEmitContext& ctx, CodeWriter& out) {
  const Node& node = ctx.node();
  NodeContext nc(ctx.graph(), node);
  const Tensor& data = ctx.tensor(node.inputs[0]);
  const Tensor& indices = ctx.tensor(node.inputs[1]);
  const size_t axis = static_cast<size_t>(nc.normalize_axis(nc.attr_int("axis", 0), nc.rank(0)));
  const int64_t dim = data.shape[axis];
  const int64_t inner = dims_product(data.shape, axis + 1, data.shape.size());
  const int64_t count = indices.elements();
  std::string kernel = ctx.kernel_name();
  std::vector<KernelArg> args = {input_arg(ctx, node.inputs[0], "data"),
                                 input_arg(ctx, node.inputs[1], "indices"),
                                 output_arg(ctx, node.outputs[0], "out")};
  open_kernel(ctx, out, kernel, args,
              {fmt::format("Gather along axis {} (size {}): output element (o, j, p) is data[o, "
                           "indices[j], p]; an index out of range gives 0.",
                           axis, dim)});
  const LaunchConfig& launch = ctx.group().launch;
  if (launch.work_per_block > 0) {
    // Over symbolic dims the extents are the run's: the slices before the axis, the axis, the
    // index elements and the elements after the axis may each depend on the symbols.
    const Graph& g = ctx.graph();
    const SymShape dims = data.sym_shape();
    open_symbolic_loop(ctx, out);
    out.linef("const int64_t inner = {}, count = {}, dim = {};",
              dim_code(g, sym_elements(SymShape(dims.begin() + axis + 1, dims.end()))),
              dim_code(g, sym_elements(indices.sym_shape())), dim_code(g, dims[axis]));
    const bool index32 = ctx.group().launch.index32;
    out.linef("const int64_t p = {}, j = {}, o = {};", index_mod(index32, "i", "inner"),
              index_mod(index32, index_div(index32, "i", "inner"), "count"),
              index_div(index32, index_div(index32, "i", "inner"), "count"));
    out.line("const int64_t index = stitch::movement::wrap_index(indices[j], dim);");
    out.linef("out[i] = index < 0 ? {} : data[(o * dim + index) * inner + p];",
              typed_literal(data.dtype, 0.0, ctx));
    out.close();
    finish_kernel(ctx, out, kernel, args);
    return;
  } else {
    open_grid_stride_loop(out, ctx.tensor(node.outputs[0]).elements());
    out.linef("const int64_t p = {}, j = {}, o = {};", quotient_mod("i", 1, inner),
              quotient_mod("i", inner, count), quotient_mod("i", inner * count, -1));
  }
  out.linef("const int64_t index = stitch::movement::wrap_index(indices[j], {});", dim);
  out.linef("out[i] = index < 0 ? {} : data[(o * {} + index) * {} + p];",
            typed_literal(data.dtype, 0.0, ctx), dim, inner);
  out.close();
  finish_kernel(ctx, out, kernel, args);
}

void emit_gather_elements(const GroupEmitContext& ctx, CodeWriter& out) {
  const Node& node = ctx.node();
  NodeContext nc(ctx.graph(), node);
  const Tensor& data = ctx.tensor(node.inputs[0]);
  const Tensor& indices = ctx.tensor(node.inputs[1]);
  const size_t axis = static_cast<size_t>(nc.normalize_axis(nc.attr_int("axis", 0), nc.rank(0)));
  Shape strides = row_major_strides(data.shape);
  std::string kernel = ctx.kernel_name();
  std::vector<KernelArg> args = {input_arg(ctx, node.inputs[0], "data"),
                                 input_arg(ctx, node.inputs[1], "indices"),
                                 output_arg(ctx, node.outputs[0], "out")};
  open_kernel(ctx, out, kernel, args,
              {fmt::format("GatherElements along axis {}: output element c reads data at c with "
                           "coordinate {} replaced by indices[c]; out of range gives 0.",
                           axis, axis)});
  std::vector<std::string> coords;
  std::string offset;
  if (ctx.group().launch.work_per_block > 0) {
    // Over symbolic dims: the coordinates and the data's strides and axis are the run's.
    const SymShape data_dims = data.sym_shape();
    std::vector<DimExpr> data_strides(data_dims.size(), DimExpr(1));
    for (size_t d = data_dims.size(); d-- > 1;)
      data_strides[d - 1] = data_strides[d] * data_dims[d];
    open_symbolic_loop(ctx, out);
    emit_run_coordinates(ctx, out, indices.sym_shape());
    out.linef("const int64_t index = stitch::movement::wrap_index(indices[i], {});",
              dim_code(ctx.graph(), data_dims[axis]));
    coords = coordinate_names(data_dims.size(), "c");
    coords[axis] = "index";
    offset = symbolic_offset(ctx, coords, data_strides);
  } else {
    open_grid_stride_loop(out, indices.elements());
    emit_coordinates(out, indices.shape, "i");
    out.linef("const int64_t index = stitch::movement::wrap_index(indices[i], {});",
              data.shape[axis]);
    coords = coordinate_names(indices.shape);
    coords[axis] = "index";
    offset = linear_index(coords, strides);
  }
  out.linef("out[i] = index < 0 ? {} : data[{}];", typed_literal(data.dtype, 0.0, ctx), offset);
  out.close();
  finish_kernel(ctx, out, kernel, args);
}

void emit_gather_nd(const GroupEmitContext& ctx, CodeWriter& out) {
  const Node& node = ctx.node();
  const Graph& g = ctx.graph();
  NodeContext nc(g, node);
  const Tensor& data = ctx.tensor(node.inputs[0]);
  const Tensor& indices = ctx.tensor(node.inputs[1]);
  // Extents as expressions: constants for fixed shapes, the run's over symbolic dims.
  const SymShape data_dims = data.sym_shape(), index_dims = indices.sym_shape();
  auto product = [](const SymShape& dims, size_t from, size_t to) {
    return sym_elements(SymShape(dims.begin() + static_cast<std::ptrdiff_t>(from),
                                 dims.begin() + static_cast<std::ptrdiff_t>(to)));
  };
  const size_t b = static_cast<size_t>(nc.attr_int("batch_dims", 0));
  const size_t m = static_cast<size_t>(indices.shape.back());
  const DimExpr slice = product(data_dims, b + m, data_dims.size());
  const DimExpr rows_per_batch = product(index_dims, b, index_dims.size() - 1);
  const DimExpr batch_stride = product(data_dims, b, data_dims.size());
  std::string kernel = ctx.kernel_name();
  std::vector<KernelArg> args = {input_arg(ctx, node.inputs[0], "data"),
                                 input_arg(ctx, node.inputs[1], "indices"),
                                 output_arg(ctx, node.outputs[0], "out")};
  open_kernel(ctx, out, kernel, args,
              {fmt::format("GatherND with batch_dims {}: each row of {} indices picks a slice of "
                           "{} elements; an index out of range gives 0.",
                           b, m, slice.to_string())});
  if (ctx.group().launch.work_per_block > 0)
    open_symbolic_loop(ctx, out);
  else
    open_grid_stride_loop(out, ctx.tensor(node.outputs[0]).elements());
  if (slice.is_constant()) {
    out.linef("const int64_t row = {}, s = {};", quotient_mod("i", slice.constant_value(), -1),
              quotient_mod("i", 1, slice.constant_value()));
  } else {
    out.linef("const int64_t slice = {};  // {}", dim_code(g, slice), slice.to_string());
    const bool index32 = ctx.group().launch.index32;
    out.linef("const int64_t row = {}, s = {};", index_div(index32, "i", "slice"),
              index_mod(index32, "i", "slice"));
  }
  out.linef("const int64_t* index = indices + row * {};", m);
  std::vector<std::string> terms, checks;
  if (b > 0)
    terms.push_back(
        fmt::format("row / {} * {}", dim_code(g, rows_per_batch), dim_code(g, batch_stride)));
  for (size_t j = 0; j < m; ++j) {
    out.linef("const int64_t k{} = stitch::movement::wrap_index(index[{}], {});", j, j,
              dim_code(g, data_dims[b + j]));
    const DimExpr stride = product(data_dims, b + j + 1, data_dims.size());
    if (stride != DimExpr(0))
      terms.push_back(stride == DimExpr(1) ? fmt::format("k{}", j)
                                           : fmt::format("k{} * {}", j, dim_code(g, stride)));
    checks.push_back(fmt::format("k{} < 0", j));
  }
  terms.push_back("s");
  out.linef("out[i] = {} ? {} : data[{}];", fmt::join(checks, " || "),
            typed_literal(data.dtype, 0.0, ctx), fmt::join(terms, " + "));
  out.close();
  finish_kernel(ctx, out, kernel, args);
}

void emit_scatter_nd(const GroupEmitContext& ctx, CodeWriter& out) {
  const Node& node = ctx.node();
  NodeContext nc(ctx.graph(), node);
  const Tensor& data = ctx.tensor(node.inputs[0]);
  const Tensor& indices = ctx.tensor(node.inputs[1]);
  const std::string reduction = nc.attr_string("reduction", "none");
  const size_t k = static_cast<size_t>(indices.shape.back());
  const int64_t rows = indices.elements() / static_cast<int64_t>(k);
  const int64_t slice = dims_product(data.shape, k, data.shape.size());
  Shape strides = row_major_strides(data.shape);
  const std::string copy_kernel = ctx.kernel_name("_copy"),
                    update_kernel = ctx.kernel_name("_update");
  const std::string target_fn = ctx.kernel_name("_target");
  const std::string type = storage_ctype(data.dtype, ctx); // combined in the data's type
  std::string combine = reduction == "add"   ? "Add"
                        : reduction == "mul" ? "Mul"
                        : reduction == "max" ? "Max"
                        : reduction == "min" ? "Min"
                                             : "None";

  const bool distinct = ctx.spec<OpSpec>().scatter_distinct;

  // The copy.
  std::vector<KernelArg> copy_args = {input_arg(ctx, node.inputs[0], "data"),
                                      output_arg(ctx, node.outputs[0], "out")};
  open_kernel(ctx, out, copy_kernel, copy_args, {"ScatterND, step 1: the output starts as data."});
  open_grid_stride_loop(out, data.elements());
  out.line("out[i] = data[i];");
  out.close();
  out.close();
  out.line();

  // Where update row u goes.
  out.comment(
      "The offset of the slice update row u addresses, or -1 when an index is out of range.");
  out.open(fmt::format(
      "__device__ __forceinline__ int64_t {}(const int64_t* __restrict__ indices, int64_t u)",
      target_fn));
  out.linef("const int64_t* index = indices + u * {};", k);
  std::vector<std::string> terms, checks;
  for (size_t j = 0; j < k; ++j) {
    out.linef("const int64_t k{} = stitch::movement::wrap_index(index[{}], {});", j, j,
              data.shape[j]);
    terms.push_back(linear_index({fmt::format("k{}", j)}, {strides[j]}));
    checks.push_back(fmt::format("k{} < 0", j));
  }
  out.linef("return {} ? -1 : {};", fmt::join(checks, " || "), fmt::join(terms, " + "));
  out.close();
  out.line();

  // The updates.
  std::vector<KernelArg> update_args = {input_arg(ctx, node.inputs[1], "indices"),
                                        input_arg(ctx, node.inputs[2], "updates")};
  update_args.push_back({fmt::format("{}* out", type), ctx.pointer(node.outputs[0], true)});
  std::vector<std::string> notes = {fmt::format(
      "ScatterND, step 2: {} update rows of {} elements, reduction {}.", rows, slice, reduction)};
  notes.push_back(
      distinct ? "Every row addresses its own slice: no ordering is needed."
               : "Rows addressing the same slice are applied by the first of them, in row order.");
  open_kernel(ctx, out, update_kernel, update_args, notes);
  std::string reduction_enum = "stitch::movement::ScatterReduction::" + combine;
  if (distinct) {
    open_grid_stride_loop(out, rows * slice);
    out.linef("const int64_t u = {}, s = {};", quotient_mod("i", slice, -1),
              quotient_mod("i", 1, slice));
    out.linef("const int64_t target = {}(indices, u);", target_fn);
    out.line("if (target < 0) continue; // an index out of range: the update is skipped");
    if (combine == "None")
      out.line("out[target + s] = updates[i];");
    else
      out.linef(
          "out[target + s] = stitch::movement::scatter_combine(out[target + s], updates[i], {});",
          reduction_enum);
    out.close();
    out.close();
    out.line();
    emit_launches(ctx, out, {{copy_kernel, copy_args}, {update_kernel, update_args}});
    return;
  }
  out.line("const int64_t thread = stitch::linear_thread_index();");
  out.line("const int64_t threads = stitch::block_thread_count();");
  out.open(fmt::format("for (int64_t u = blockIdx.x; u < {}; u += gridDim.x)", rows));
  out.linef("const int64_t target = {}(indices, u);", target_fn);
  out.line("if (target < 0) continue; // an index out of range: the update is skipped");
  out.comment("Other rows addressing the same slice: an earlier one applies this row too.");
  out.line("bool earlier = false, later = false;");
  out.open(fmt::format("for (int64_t v = thread; v < {}; v += threads)", rows));
  out.linef("if (v == u || {}(indices, v) != target) continue;", target_fn);
  out.line("if (v < u) earlier = true; else later = true;");
  out.close();
  out.line("if (__syncthreads_or(earlier)) continue;");
  out.open("if (!__syncthreads_or(later))");
  out.open(fmt::format("for (int64_t s = thread; s < {}; s += threads)", slice));
  if (combine == "None")
    out.linef("out[target + s] = updates[u * {} + s];", slice);
  else
    out.linef("out[target + s] = stitch::movement::scatter_combine(out[target + s], updates[u * {} "
              "+ s], {});",
              slice, reduction_enum);
  out.close();
  out.line("continue;");
  out.close();
  out.comment("This row is the first of several: apply them all, in row order.");
  out.open(fmt::format("for (int64_t s = thread; s < {}; s += threads)", slice));
  out.linef("{} value = out[target + s];", type);
  out.open(fmt::format("for (int64_t v = u; v < {}; ++v)", rows));
  out.linef("if (v == u || {}(indices, v) == target)", target_fn);
  out.linef("  value = stitch::movement::scatter_combine(value, updates[v * {} + s], {});", slice,
            reduction_enum);
  out.close();
  out.line("out[target + s] = value;");
  out.close();
  out.close();
  out.close();
  out.line();
  emit_launches(ctx, out, {{copy_kernel, copy_args}, {update_kernel, update_args}});
}

} // namespace stitch
