// The pooling kernels: MaxPool (with its optional int64 Indices output) and AveragePool, over
// any number of spatial axes. One thread per output element, grid-stride, on the plan's flat
// launch over output 0 (over symbolic dims, the run's elements: the images and channels may be
// symbolic, the spatial axes are fixed). A thread finds its window's start on each spatial axis and
// walks the taps inside the input in row-major order, with loop bounds clamped to the input by
// stitch::window::first_tap / end_tap (stitch_window.cuh), so no tap tests its bounds:
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

// The coordinates of output element i: o<d> on each spatial axis and `plane` (image * channels
// + channel); then `xp`, where that plane starts in X, and start<d>, where the window starts on
// each spatial axis (negative inside the begin pad).
void emit_output_coordinates(CodeWriter& out, const WindowGeometry& w, const std::string& storage) {
  out.line("int64_t rest = i;");
  for (size_t d = w.out.size(); d-- > 0;)
    out.linef("const int64_t o{} = rest % {}; rest /= {};", d, w.out[d], w.out[d]);
  out.line("const int64_t plane = rest; // image * channels + channel");
  out.linef("const {}* const xp = x + plane * {};", storage, shape_elements(w.in));
  for (size_t d = 0; d < w.out.size(); ++d) {
    std::string start =
        w.strides[d] == 1 ? fmt::format("o{}", d) : fmt::format("o{} * {}", d, w.strides[d]);
    if (w.pad_begin[d] != 0) start += fmt::format(" - {}", w.pad_begin[d]);
    out.linef("const int64_t start{} = {}; // window start on spatial axis {}", d, start, d);
  }
}

// The kernel's signature (with the symbols it takes, over symbolic dims) and its loop over the
// output's elements, `y`: the run's count over symbolic dims (its images or channels).
void emit_kernel_head(const GroupEmitContext& ctx, CodeWriter& out, const std::string& kernel,
                      std::vector<std::string> params, const Tensor& y) {
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
  out.line("const int64_t first = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;");
  out.line("const int64_t stride = int64_t(gridDim.x) * blockDim.x;");
  out.open("for (int64_t i = first; i < n; i += stride)");
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
  emit_kernel_head(ctx, out, kernel, params, y);
  emit_output_coordinates(out, w, storage);
  out.linef("{} best = stitch::window::lowest<{}>();", type, type);
  out.line("int64_t best_at = -1; // offset of `best` in the plane, -1 before the first tap");
  std::string at = open_tap_loops(out, w, "x");
  out.linef("const {} v = xp[{}];", type, at);
  out.open("if (best_at < 0 || v > best)");
  out.line("best = v;");
  if (column_major) {
    // The index counts the spatial axes column-major: x0 + x1 * in0 + x2 * in0 * in1.
    std::vector<std::string> terms;
    int64_t stride = 1;
    for (size_t d = 0; d < w.in.size(); ++d) {
      terms.push_back(stride == 1 ? fmt::format("x{}", d) : fmt::format("x{} * {}", d, stride));
      stride *= w.in[d];
    }
    out.linef("best_at = {}; // column-major (storage_order=1)", fmt::join(terms, " + "));
  } else {
    out.linef("best_at = {};", at);
  }
  out.close();
  close_tap_loops(out, w);
  out.line("y[i] = best;");
  if (with_indices)
    out.linef("indices[i] = best_at < 0 ? -1 : plane * {} + best_at;", shape_elements(w.in));
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

  emit_kernel_head(ctx, out, kernel,
                   {fmt::format("const {}* __restrict__ x", storage),
                    fmt::format("{}* __restrict__ y", storage)},
                   y);
  emit_output_coordinates(out, w, storage);
  emit_average_pool_count(out, w, include_pad);
  out.linef("{} sum = 0;", type);
  std::string at = open_tap_loops(out, w, "x");
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
