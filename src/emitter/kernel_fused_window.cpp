// Fused Local groups around one window op (MaxPool, AveragePool, depthwise Conv): one thread
// per element of the window's output, grid-stride, on the plan's flat launch. Its pointwise
// producers are evaluated again at every tap of the window, in registers, reading their inputs
// at the tap's element; the window folds the taps; its pointwise consumers take the result
// per output element. No intermediate leaves the kernel:
//
//   for (int64_t i = first; i < n; i += stride) {
//     ... o0, o1: the output position; plane = image * channels + channel; start0, start1 ...
//     float acc = 0.0f;
//     for (k0 ...) for (k1 ...) {                       // the taps inside the input
//       const int64_t at = plane * 3136 + p0 * 56 + p1; // the tap's input element
//       const float x0 = in0[at];
//       const float t0 = stitch::ops::clip<float>(x0, 0.0f, 6.0f);   // the producers
//       acc += t0 * in1[channel * 9 + k0 * 3 + k1];                  // the window
//     }
//     const float window = acc + in2[channel];
//     out0[i] = stitch::ops::clip<float>(window, 0.0f, 6.0f);      // the consumers
//   }
//
// The window ops fold as their single-op forms do: MaxPool keeps the first largest value (a
// window with no tap inside gives the lowest value), AveragePool sums in tap order in fp32
// and divides by the taps inside the input (or the padded input with count_include_pad), and
// the depthwise Conv sums tap products in fp32 in tap order and adds the bias last.
#include <algorithm>
#include <functional>
#include <set>

#include "emitter/kernel_fused.h"
#include "emitter/kernels.h"
#include "emitter/pointwise_expression.h"
#include "emitter/row_kernel.h"
#include "emitter/window_geometry.h"

namespace stitch {

namespace {

// The window's fold: the accumulator before the taps, its update with a tap's value, and the
// result after them.
struct Fold {
  std::vector<std::string> before;
  std::function<std::string(const std::string& value)> per_tap;
  std::string result;
};

Fold window_fold(const FusedSignature& sig, const WindowSpec& spec) {
  const WindowGeometry& w = spec.geometry;
  Fold fold;
  switch (spec.fold) {
  case WindowFold::Max:
    fold.before = {"float best = stitch::window::lowest<float>();",
                   "bool taken = false; // no tap folded yet"};
    fold.per_tap = [](const std::string& v) {
      return fmt::format("if (!taken || {0} > best) {{ best = {0}; taken = true; }}", v);
    };
    fold.result = "best";
    return fold;
  case WindowFold::Average:
    fold.before = {"float sum = 0.0f;"};
    fold.per_tap = [](const std::string& v) { return fmt::format("sum += {};", v); };
    fold.result = "sum / static_cast<float>(count)";
    return fold;
  case WindowFold::Depthwise:
    break;
  }
  // Depthwise Conv: the filter of this channel, [C, 1, k...] row-major.
  std::vector<std::string> terms;
  int64_t stride = 1;
  for (size_t d = w.kernel.size(); d-- > 0;) {
    terms.insert(terms.begin(),
                 stride == 1 ? fmt::format("k{}", d) : fmt::format("k{} * {}", d, stride));
    stride *= w.kernel[d];
  }
  fold.before = {"float acc = 0.0f;"};
  fold.per_tap = [filter = sig.inputs.at(spec.filter), taps = w.taps(),
                  offset = fmt::format("{}", fmt::join(terms, " + "))](const std::string& v) {
    return fmt::format("acc += {} * {}[channel * {} + {}];", v, filter, taps, offset);
  };
  fold.result = "acc";
  if (spec.bias != kNoTensor) {
    auto literal = sig.literals.find(spec.bias);
    fold.result = literal != sig.literals.end()
                      ? fmt::format("acc + {}", literal->second)
                      : fmt::format("acc + {}[channel]", sig.inputs.at(spec.bias));
  }
  return fold;
}

} // namespace

void emit_fused_window(const GroupEmitContext& ctx, CodeWriter& out) {
  const Graph& g = ctx.graph();
  const FusionGroup& group = ctx.group();
  const WindowSpec& spec = ctx.spec<WindowSpec>();
  const Node& wn = g.nodes[spec.window];
  const std::vector<int32_t>& producers = spec.producers;
  const std::vector<int32_t>& consumers = spec.consumers;
  const TensorId data = wn.inputs[0], result = wn.outputs[0];
  const Shape& in = g.tensor(data).shape;
  const Shape& shape = g.tensor(result).shape;
  // Over symbolic dims (the images, the channels of a pooling window, the spatial extents),
  // operands are indexed by their symbolic shapes against these.
  const SymShape in_dims = g.tensor(data).sym_shape(), dims = g.tensor(result).sym_shape();
  const bool symbolic = !is_static(in_dims);
  if (g.tensor(result).dtype != DType::Float32)
    ctx.spec_error(fmt::format("a window op on {}", dtype_name(g.tensor(result).dtype)));
  const WindowGeometry& w = spec.geometry;
  const FusedSignature sig = fused_signature(ctx, spec.io);
  // Inputs read at each tap (the producers' and the window's data) and per output element.
  std::set<TensorId> made_before, made_after;
  for (int32_t n : producers)
    made_before.insert(g.nodes[n].outputs[0]);
  for (int32_t n : consumers)
    made_after.insert(g.nodes[n].outputs[0]);
  bool tap_coordinates = false, output_coordinates = false;
  std::vector<TensorId> tap_reads = {data};
  for (int32_t n : producers)
    for (TensorId t : value_operands(g.nodes[n]))
      if (t != kNoTensor) tap_reads.push_back(t);
  // Over symbolic dims by the symbolic shapes: at a planning binding of 1, [1,C,H,W] and
  // [batch,C,H,W] have one shape but are read differently.
  auto coordinates = [&](TensorId t, const Shape& against, const SymShape& against_dims) {
    if (!symbolic) return needs_coordinates(g.tensor(t).shape, against);
    return g.tensor(t).sym_shape() != against_dims &&
           !(!g.tensor(t).is_dynamic() && g.tensor(t).elements() == 1);
  };
  for (TensorId t : tap_reads)
    tap_coordinates |= !made_before.count(t) && sig.inputs.count(t) && coordinates(t, in, in_dims);
  for (int32_t n : consumers)
    for (TensorId t : value_operands(g.nodes[n]))
      output_coordinates |= t != kNoTensor && t != result && !made_after.count(t) &&
                            sig.inputs.count(t) && coordinates(t, shape, dims);

  const std::string kernel = fused_kernel_name(ctx);
  fused_kernel_banner(ctx, sig, group.nodes,
                      fmt::format("Fused group {} (Local around a window): {} producer(s) "
                                  "evaluated at each of the {} taps of '{}' ({}), then {} "
                                  "consumer(s) per output element, in registers.",
                                  group.id, producers.size(), w.taps(), wn.name, op_name(wn.op),
                                  consumers.size()),
                      out);
  std::vector<std::string> params = sig.params;
  for (const std::string& p : launch_symbol_params(ctx))
    params.push_back(p);
  out.open(kernel_head(ctx, kernel, params));
  if (symbolic)
    out.linef("const int64_t n = {};  // elements of {}", dim_code(g, sym_elements(dims)),
              sym_shape_to_string(dims));
  else
    out.linef("const int64_t n = {};  // elements of {}", shape_elements(shape),
              shape_to_string(shape));
  const WindowExtents e = emit_window_extents(out, g, w);
  out.line("const int64_t first = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;");
  out.line("const int64_t stride = int64_t(gridDim.x) * blockDim.x;");
  out.open("for (int64_t i = first; i < n; i += stride)");
  // The output position o<d> on each spatial axis, the plane, where each window starts.
  emit_window_position(out, w, e);
  if (spec.fold == WindowFold::Depthwise)
    out.linef("const int64_t channel = plane % {};", spec.channels);

  // The taps: the producers' chain at the tap's input element, folded by the window.
  const Fold fold = window_fold(sig, spec);
  if (spec.fold == WindowFold::Average) emit_average_pool_count(out, w, e, spec.count_include_pad);
  for (const std::string& line : fold.before)
    out.line(line);
  {
    std::string offset = open_tap_loops(out, w, e, "p");
    out.linef("const int64_t at = plane * {} + {}; // the tap's element of the window's input",
              window_plane_code(e), offset);
    if (tap_coordinates) emit_coordinates(out, in, "at", "a", symbolic ? &in_dims : nullptr);
    ValueScope taps(ctx, producers, out, [&](TensorId t) {
      return load_broadcast(ctx, sig, t, in, out, "at", "a", symbolic ? &in_dims : nullptr);
    });
    out.line(fold.per_tap(taps.value(data)));
    close_tap_loops(out, w);
  }
  out.linef("const float window = {};", fold.result);
  if (output_coordinates) emit_coordinates(out, shape, "i", "c", symbolic ? &dims : nullptr);
  ValueScope after(ctx, consumers, out, [&](TensorId t) {
    return t == result
               ? std::string("window")
               : load_broadcast(ctx, sig, t, shape, out, "i", "c", symbolic ? &dims : nullptr);
  });
  for (TensorId t : spec.io.writes)
    out.linef("{}[i] = {};", sig.outputs.at(t), after.value(t));
  out.close();
  out.close();
  out.line();
  emit_launch(ctx, out, kernel, sig.args);
}

} // namespace stitch
