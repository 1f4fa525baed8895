// Reduction kernels: the Reduce* family, GlobalAveragePool/GlobalMaxPool, ArgMax/ArgMin and
// CumSum. Each walks the lines of its ReductionSpace as the plan's mapping says (row_kernel.h):
// a thread accumulates its elements of a line in a fixed order, the line's threads combine
// their partials with warp shuffles (and shared memory for a block), and one thread writes the
// result. Floats accumulate in fp32, doubles in double, integers in 64 bits.
#include "emitter/kernels.h"

#include "emitter/row_kernel.h"
#include "graph/error.h"
#include "graph/infer_context.h"

namespace stitch {

namespace {

// The kernel's opening comment and signature; the element types of x and y.
struct KernelIo {
  std::string in_type, out_type, acc_type;
  std::string in_storage; // x's element in memory (stitch::float16 where in_type is float)
};

KernelIo open_kernel(const GroupEmitContext& ctx, CodeWriter& out, const LineLoop& loop,
                     const std::string& kernel, const std::string& note = {}) {
  const Node& node = ctx.node();
  KernelIo io;
  io.in_type = ctype(ctx.tensor(node.inputs[0]).dtype, ctx);
  io.out_type = ctype(ctx.tensor(node.outputs[0]).dtype, ctx);
  io.acc_type = accumulator_type(ctx.tensor(node.inputs[0]).dtype);
  io.in_storage = storage_ctype(ctx.tensor(node.inputs[0]).dtype, ctx);
  out.comment(describe_node(ctx.graph(), node));
  out.comment(loop.describe() + "." + note);
  std::vector<std::string> params = {
      fmt::format("const {}* __restrict__ x", storage_ctype(ctx.tensor(node.inputs[0]).dtype, ctx)),
      fmt::format("{}* __restrict__ y", storage_ctype(ctx.tensor(node.outputs[0]).dtype, ctx))};
  for (const std::string& p : launch_symbol_params(ctx))
    params.push_back(p);
  out.open(kernel_head(ctx, kernel, params));
  return io;
}

// x[...] of element k of the current line, as the accumulator type.
std::string load_element(const LineLoop& loop, const KernelIo& io, const std::string& k = "k") {
  std::string offset = loop.element_offset(k);
  std::string index = offset == "0" ? "base" : "base + " + offset;
  std::string value = fmt::format("x[{}]", index);
  return io.in_storage == io.acc_type ? value : fmt::format("{}({})", io.acc_type, value);
}

void emit_reduce_kernel(const GroupEmitContext& ctx, CodeWriter& out, const LineLoop& loop,
                        const std::string& kernel) {
  const Node& node = ctx.node();
  const DType t = ctx.tensor(node.inputs[0]).dtype;
  KernelIo io = open_kernel(ctx, out, loop, kernel);
  ReduceForm form =
      reduce_form(ctx, node.op, t, loop.space().length, loop.space().length_dims.has_value());
  loop.open_lines(out);
  out.linef("{} acc = {};", io.acc_type, form.identity);
  loop.open_elements(out);
  out.linef("const {} v = {};", io.acc_type, load_element(loop, io));
  out.line(fmt::format(fmt::runtime(form.step), form.contribution));
  out.close();
  if (loop.mapping() != ThreadMapping::Flat)
    out.linef("acc = {};", loop.combine("acc", form.functor));
  loop.leader_writes(out,
                     fmt::format("y[line] = {};", convert(form.finish, io.acc_type, io.out_type)));
  out.close();
  out.close();
}

// log(sum(exp(x))) with the line's maximum subtracted first, so that no exp overflows.
void emit_log_sum_exp_kernel(const GroupEmitContext& ctx, CodeWriter& out, const LineLoop& loop,
                             const std::string& kernel) {
  const Node& node = ctx.node();
  const DType t = ctx.tensor(node.inputs[0]).dtype;
  KernelIo io = open_kernel(ctx, out, loop, kernel);
  loop.open_lines(out);
  out.linef("{} line_max = stitch::rows::lowest<{}>();", io.acc_type, io.acc_type);
  loop.open_elements(out);
  out.linef("line_max = stitch::rows::Max{{}}(line_max, {});", load_element(loop, io));
  out.close();
  if (loop.mapping() != ThreadMapping::Flat)
    out.linef("line_max = {};", loop.combine("line_max", "stitch::rows::Max{}"));
  out.linef("const {} shift = stitch::rows::finite_or_zero(line_max);", io.acc_type);
  out.linef("{} sum = {};", io.acc_type, dtype_is_float(t) ? float_literal(0, t) : "0");
  loop.open_elements(out);
  out.linef("sum += stitch::rows::exp_of({} - shift);", load_element(loop, io));
  out.close();
  if (loop.mapping() != ThreadMapping::Flat)
    out.linef("sum = {};", loop.combine("sum", "stitch::rows::Sum{}"));
  loop.leader_writes(out, fmt::format("y[line] = {};", convert("shift + stitch::rows::log_of(sum)",
                                                               io.acc_type, io.out_type)));
  out.close();
  out.close();
}

// The index of the largest (smallest) element: NaN above everything, ties to the first index
// or, with select_last_index, the last.
void emit_arg_kernel(const GroupEmitContext& ctx, CodeWriter& out, const LineLoop& loop,
                     const std::string& kernel) {
  const Node& node = ctx.node();
  NodeContext params(ctx.graph(), node);
  const bool last = params.attr_flag("select_last_index", false);
  const std::string functor =
      fmt::format("stitch::rows::ArgBest<{}, {}>{{}}", node.op == OpKind::ArgMax ? "true" : "false",
                  last ? "true" : "false");
  KernelIo io = open_kernel(ctx, out, loop, kernel);
  const std::string pair = fmt::format("stitch::rows::ArgPair<{}>", io.acc_type);
  loop.open_lines(out);
  out.linef("{} best = {{{}(0), -1}};  // index -1: no element yet", pair, io.acc_type);
  loop.open_elements(out);
  out.linef("best = {}(best, {}{{{}, k}});", functor, pair, load_element(loop, io));
  out.close();
  if (loop.mapping() != ThreadMapping::Flat) out.linef("best = {};", loop.combine("best", functor));
  loop.leader_writes(out, "y[line] = best.index;");
  out.close();
  out.close();
}

// Running sums along the axis: a warp scans 32 elements at a time (rows), or one thread walks
// its line in order (flat).
void emit_cumsum_kernel(const GroupEmitContext& ctx, CodeWriter& out, const LineLoop& loop,
                        const std::string& kernel) {
  const Node& node = ctx.node();
  NodeContext params(ctx.graph(), node);
  const bool exclusive = params.attr_flag("exclusive", false);
  const bool reverse = params.attr_flag("reverse", false);
  const DType t = ctx.tensor(node.inputs[0]).dtype;
  const std::string zero = dtype_is_float(t) ? float_literal(0, t) : "0";
  std::string note = exclusive && reverse ? " Exclusive sums, from the end."
                     : exclusive          ? " Exclusive sums."
                     : reverse            ? " Sums from the end."
                                          : "";
  KernelIo io = open_kernel(ctx, out, loop, kernel, note);
  loop.open_lines(out);
  if (loop.mapping() == ThreadMapping::WarpPerRow) {
    out.linef("{} carry = {};  // the sum of the chunks before", io.acc_type, zero);
    out.open("for (int64_t chunk = 0; chunk < length; chunk += 32)");
    out.linef("const int64_t k = {};", reverse ? "length - 1 - (chunk + lane)" : "chunk + lane");
    out.linef("const {} v = {} ? {} : {};", io.acc_type, reverse ? "k >= 0" : "k < length",
              load_element(loop, io), zero);
    out.linef("const {} s = stitch::rows::warp_scan_chunk(v, carry, {});", io.acc_type,
              exclusive ? "true" : "false");
    out.linef("if ({}) y[base + {}] = {};", reverse ? "k >= 0" : "k < length",
              loop.element_offset(), convert("s", io.acc_type, io.out_type));
    out.close();
  } else {
    out.linef("{} sum = {};", io.acc_type, zero);
    out.open(reverse ? "for (int64_t k = length - 1; k >= 0; --k)"
                     : "for (int64_t k = 0; k < length; ++k)");
    std::string offset = loop.element_offset();
    out.linef("const int64_t i = {};", offset == "0" ? "base" : "base + " + offset);
    out.linef("const {} v = {};", io.acc_type,
              io.in_storage == io.acc_type ? "x[i]" : fmt::format("{}(x[i])", io.acc_type));
    if (exclusive) out.linef("y[i] = {};", convert("sum", io.acc_type, io.out_type));
    out.line("sum += v;");
    if (!exclusive) out.linef("y[i] = {};", convert("sum", io.acc_type, io.out_type));
    out.close();
  }
  out.close();
  out.close();
}

} // namespace

bool emit_reduction(const GroupEmitContext& ctx, CodeWriter& out) {
  const Node& node = ctx.node();
  const OpSpec& spec = ctx.spec<OpSpec>();
  if (!spec.reduction) return false; // not a reduction (single_node_group plans its space)
  LineLoop loop(ctx, *spec.reduction);
  const std::string kernel = ctx.kernel_name();
  if (node.op == OpKind::ReduceLogSumExp)
    emit_log_sum_exp_kernel(ctx, out, loop, kernel);
  else if (node.op == OpKind::ArgMax || node.op == OpKind::ArgMin)
    emit_arg_kernel(ctx, out, loop, kernel);
  else if (node.op == OpKind::CumSum)
    emit_cumsum_kernel(ctx, out, loop, kernel);
  else
    emit_reduce_kernel(ctx, out, loop, kernel);
  out.line();
  emit_launch(ctx, out, kernel,
              {ctx.pointer(node.inputs[0], false), ctx.pointer(node.outputs[0], true)});
  return true;
}

} // namespace stitch
