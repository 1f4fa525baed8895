// The pooling kernels: MaxPool (with its optional int64 Indices output) and AveragePool, over
// any number of spatial axes. One thread per output element, grid-stride, on the plan's flat
// launch over output 0 (over symbolic dims, the run's elements and spatial extents). A thread finds
// its window's start on each spatial axis and walks the taps inside the input in row-major order,
// with loop bounds clamped to the input by stitch::window::first_tap / end_tap (stitch_window.cuh),
// so no tap tests its bounds:
//
//   MaxPool      the first largest value (a later equal one does not replace it, as in the
//                ONNX reference), and its index into the whole flattened input (row-major, or
//                spatially column-major with storage_order=1); a window with no tap inside the
//                input gives the lowest value and index -1.
//   AveragePool  the sum in a fixed order (fp32 for float) divided by the taps inside the input,
//                or, with count_include_pad, by the taps inside the padded input [-pad begin,
//                size + pad end), which with ceil_mode excludes the part of a last window past
//                the end padding.
#include "emitter/kernels.h"
#include "emitter/window_geometry.h"

#include "graph/infer_context.h"

namespace stitch {

namespace {

// The position of output element i (emit_window_position), then `xp`, where its plane starts
// in X.
void emit_output_coordinates(CodeWriter& out, const WindowGeometry& w, const WindowExtents& e,
                             const std::string& storage) {
  emit_window_position(out, w, e);
  out.linef("const {}* const xp = x + plane * {};", storage, window_plane_code(e));
}

// The kernel's signature (with the symbols it takes, over symbolic dims), the window's
// extents (emit_window_extents) and its loop over the output's elements, `y`: the run's count
// over symbolic dims.
WindowExtents emit_kernel_head(const GroupEmitContext& ctx, CodeWriter& out,
                               const std::string& kernel, std::vector<std::string> params,
                               const Tensor& y, const WindowGeometry& w) {
  out.comment(describe_node(ctx.graph(), ctx.node()));
  for (const std::string& p : launch_symbol_params(ctx))
    params.push_back(p);
  out.open(fmt::format("__global__ void __launch_bounds__({}) {}({})", ctx.group().launch.block[0],
                       kernel, fmt::join(params, ", ")));
  if (y.is_dynamic())
    out.linef("const int64_t n = {}; // elements of {}",
              dim_code(ctx.graph(), sym_elements(y.sym_shape())), sym_shape_to_string(y.dims));
  else
    out.linef("const int64_t n = {};", y.elements());
  WindowExtents e = emit_window_extents(out, ctx.graph(), w);
  out.line("const int64_t first = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;");
  out.line("const int64_t stride = int64_t(gridDim.x) * blockDim.x;");
  out.open("for (int64_t i = first; i < n; i += stride)");
  return e;
}

void emit_max_pool(const GroupEmitContext& ctx, CodeWriter& out, const WindowGeometry& w,
                   bool write_indices) {
  const Node& node = ctx.node();
  NodeContext attrs(ctx.graph(), node);
  const Tensor& x = ctx.tensor(node.inputs[0]);
  const Tensor& y = ctx.tensor(node.outputs[0]);
  const std::string type = ctype(x.dtype, ctx), storage = storage_ctype(x.dtype, ctx);
  TensorId indices = node.outputs.size() > 1 ? node.outputs[1] : kNoTensor;
  const bool with_indices = indices != kNoTensor && write_indices;
  const bool column_major = attrs.attr_flag("storage_order", false);
  const std::string kernel = ctx.kernel_name();

  std::vector<std::string> params = {fmt::format("const {}* __restrict__ x", storage),
                                     fmt::format("{}* __restrict__ y", storage)};
  if (with_indices) params.push_back("int64_t* __restrict__ indices");
  const WindowExtents e = emit_kernel_head(ctx, out, kernel, params, y, w);
  emit_output_coordinates(out, w, e, storage);
  out.linef("{} best = stitch::window::lowest<{}>();", type, type);
  out.line("int64_t best_at = -1; // offset of `best` in the plane, -1 before the first tap");
  std::string at = open_tap_loops(out, w, e, "x");
  out.linef("const {} v = xp[{}];", type, at);
  out.open("if (best_at < 0 || v > best)");
  out.line("best = v;");
  if (column_major) {
    // The index counts the spatial axes column-major: x0 + x1 * in0 + x2 * in0 * in1.
    std::vector<std::string> terms;
    for (size_t d = 0; d < e.in.size(); ++d) {
      const std::string stride = extents_product({e.in.begin(), e.in.begin() + d});
      terms.push_back(stride == "1" ? fmt::format("x{}", d) : fmt::format("x{} * {}", d, stride));
    }
    out.linef("best_at = {}; // column-major (storage_order=1)", fmt::join(terms, " + "));
  } else {
    out.linef("best_at = {};", at);
  }
  out.close();
  close_tap_loops(out, w);
  out.line("y[i] = best;");
  if (with_indices)
    out.linef("indices[i] = best_at < 0 ? -1 : plane * {} + best_at;", window_plane_code(e));
  out.close();
  out.close();
  out.line();

  std::vector<std::string> args = {ctx.pointer(node.inputs[0], false),
                                   ctx.pointer(node.outputs[0], true)};
  if (with_indices) args.push_back(ctx.pointer(indices, true));
  emit_launch(ctx, out, kernel, args);
}

void emit_average_pool(const GroupEmitContext& ctx, CodeWriter& out, const WindowGeometry& w) {
  const Node& node = ctx.node();
  NodeContext attrs(ctx.graph(), node);
  const Tensor& x = ctx.tensor(node.inputs[0]);
  const Tensor& y = ctx.tensor(node.outputs[0]);
  if (!dtype_is_float(x.dtype))
    ctx.spec_error(fmt::format("AveragePool on {}", dtype_name(x.dtype)));
  const std::string type = ctype(x.dtype, ctx), storage = storage_ctype(x.dtype, ctx);
  const bool include_pad = attrs.attr_flag("count_include_pad", false);
  const std::string kernel = ctx.kernel_name();

  const WindowExtents e = emit_kernel_head(ctx, out, kernel,
                                           {fmt::format("const {}* __restrict__ x", storage),
                                            fmt::format("{}* __restrict__ y", storage)},
                                           y, w);
  emit_output_coordinates(out, w, e, storage);
  emit_average_pool_count(out, w, e, include_pad);
  out.linef("{} sum = 0;", type);
  std::string at = open_tap_loops(out, w, e, "x");
  out.linef("sum += xp[{}];", at);
  close_tap_loops(out, w);
  out.linef("y[i] = sum / static_cast<{}>(count);", type);
  out.close();
  out.close();
  out.line();
  emit_launch(ctx, out, kernel,
              {ctx.pointer(node.inputs[0], false), ctx.pointer(node.outputs[0], true)});
}

} // namespace

bool emit_window(const GroupEmitContext& ctx, CodeWriter& out) {
  if (ctx.group().kind != GroupKind::Kernel) return false;
  const Node& node = ctx.node();
  if (node.op != OpKind::MaxPool && node.op != OpKind::AveragePool) return false;
  const OpSpec& spec = ctx.spec<OpSpec>();
  if (!spec.window) ctx.spec_error("a pooling kernel without its window geometry");
  if (node.op == OpKind::MaxPool)
    emit_max_pool(ctx, out, *spec.window, spec.write_indices);
  else
    emit_average_pool(ctx, out, *spec.window);
  return true;
}

} // namespace stitch
