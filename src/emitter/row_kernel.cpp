// LineLoop and the index helpers of reduction kernels.
#include "emitter/row_kernel.h"

#include <cmath>

#include "graph/reductions.h"

#include "graph/error.h"

namespace stitch {

namespace {

int64_t product(const Shape& s, size_t from, size_t to) {
  int64_t p = 1;
  for (size_t d = from; d < to; ++d)
    p *= s[d];
  return p;
}

} // namespace

LineLoop::LineLoop(const GroupEmitContext& ctx, ReductionSpace space)
    : ctx_(ctx), space_(std::move(space)), mapping_(ctx.group().mapping) {
  strides_.assign(space_.dims.size(), 1);
  for (size_t d = space_.dims.size(); d-- > 1;)
    strides_[d - 1] = strides_[d] * space_.dims[d];
  STITCH_INTERNAL_CHECK(mapping_ == ThreadMapping::Flat || space_.rows(),
                        "group {}: a row mapping for lines that are not rows", ctx.group().id);
  STITCH_INTERNAL_CHECK(mapping_ == ThreadMapping::Flat || ctx.group().launch.block[0] % 32 == 0,
                        "group {}: a row mapping needs whole warps", ctx.group().id);
}

int64_t LineLoop::threads_per_line() const {
  return threads_per_row(mapping_, ctx_.group().launch.block[0]);
}

std::string LineLoop::describe() const {
  std::string elements;
  if (space_.length == 1)
    elements = "element";
  else if (space_.rows())
    elements = "contiguous elements";
  else if (space_.single_block())
    elements = fmt::format("elements {} apart", space_.inner_dims ? space_.inner_dims->to_string()
                                                                  : std::to_string(space_.inner));
  else
    elements = "elements over several axes";
  const char* who = mapping_ == ThreadMapping::Flat         ? "one thread"
                    : mapping_ == ThreadMapping::WarpPerRow ? "a warp"
                                                            : "a block";
  const LaunchConfig& launch = ctx_.group().launch;
  return fmt::format(
      "{} line{} of {} {}, {} per line",
      launch.work_per_block > 0 ? launch.work.to_string() : std::to_string(space_.lines),
      launch.work_per_block == 0 && space_.lines == 1 ? "" : "s",
      space_.length_dims ? space_.length_dims->to_string() : std::to_string(space_.length),
      elements, who);
}

std::string LineLoop::element_start() const {
  switch (mapping_) {
  case ThreadMapping::Flat:
    return "0";
  case ThreadMapping::WarpPerRow:
    return "lane";
  case ThreadMapping::BlockPerRow:
    return "thread";
  }
  return "0";
}

std::string LineLoop::element_step() const {
  return mapping_ == ThreadMapping::Flat ? "++k" : fmt::format("k += {}", threads_per_line());
}

void LineLoop::open_lines(CodeWriter& out) const {
  const LaunchConfig& launch = ctx_.group().launch;
  if (launch.work_per_block > 0)
    out.linef("const int64_t lines = {};  // independent reductions: {}",
              dim_code(ctx_.graph(), launch.work), launch.work.to_string());
  else
    out.linef("const int64_t lines = {};  // independent reductions", space_.lines);
  if (space_.length_dims)
    out.linef("const int64_t length = {};  // elements per line: {}",
              dim_code(ctx_.graph(), *space_.length_dims), space_.length_dims->to_string());
  else
    out.linef("const int64_t length = {};  // elements per line", space_.length);
  if (space_.inner_dims)
    out.linef("const int64_t inner = {};  // their distance: {}",
              dim_code(ctx_.graph(), *space_.inner_dims), space_.inner_dims->to_string());
  switch (mapping_) {
  case ThreadMapping::Flat:
    out.line("const int64_t first_line = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;");
    out.line("const int64_t line_stride = int64_t(gridDim.x) * blockDim.x;");
    break;
  case ThreadMapping::WarpPerRow:
    out.line("const int lane = threadIdx.x % 32;");
    out.line("const int64_t first_line = (int64_t(blockIdx.x) * blockDim.x + threadIdx.x) / 32;");
    out.line("const int64_t line_stride = int64_t(gridDim.x) * (blockDim.x / 32);");
    break;
  case ThreadMapping::BlockPerRow:
    out.line("const int thread = threadIdx.x;");
    out.line("const int64_t first_line = blockIdx.x;");
    out.line("const int64_t line_stride = gridDim.x;");
    break;
  }
  out.open("for (int64_t line = first_line; line < lines; line += line_stride)");
  // Over symbolic dims the lines are rows of `length` contiguous elements, or columns of
  // `length` elements `inner` apart (legality's symbolic_lines).
  const bool symbolic = space_.length_dims || launch.work_per_block > 0;
  const std::string length = space_.length_dims ? "length" : std::to_string(space_.length);
  if (!symbolic)
    out.linef("const int64_t base = {};", line_base());
  else if (space_.rows())
    out.linef("const int64_t base = line * {};", length);
  else if (space_.inner_dims) // columns the run's extents apart
    out.linef("const int64_t base = {} * (length * inner) + {};",
              index_div(launch.index32, "line", "inner"),
              index_mod(launch.index32, "line", "inner"));
  else
    out.linef("const int64_t base = (line / {0}) * ({1} * {0}) + line % {0};", space_.inner,
              length);
}

void LineLoop::open_elements(CodeWriter& out) const {
  out.open(fmt::format("for (int64_t k = {}; k < length; {})", element_start(), element_step()));
}

std::string LineLoop::line_base() const {
  std::vector<std::pair<int64_t, int64_t>> kept;
  for (size_t d = 0; d < space_.dims.size(); ++d)
    if (!space_.reduced[d]) kept.emplace_back(space_.dims[d], strides_[d]);
  return offset_expression("line", kept);
}

std::string LineLoop::element_offset(const std::string& k) const {
  // Over symbolic dims, elements `inner` apart (legality's symbolic_lines), whatever axes the
  // planning binding dropped from the space.
  if (space_.length_dims || ctx_.group().launch.work_per_block > 0) {
    if (space_.rows()) return k;
    return fmt::format("{} * {}", k, space_.inner_dims ? "inner" : std::to_string(space_.inner));
  }
  std::vector<std::pair<int64_t, int64_t>> reduced;
  for (size_t d = 0; d < space_.dims.size(); ++d)
    if (space_.reduced[d]) reduced.emplace_back(space_.dims[d], strides_[d]);
  return offset_expression(k, reduced);
}

std::string LineLoop::combine(const std::string& value, const std::string& op) const {
  switch (mapping_) {
  case ThreadMapping::Flat:
    return value;
  case ThreadMapping::WarpPerRow:
    return fmt::format("stitch::rows::warp_allreduce({}, {})", value, op);
  case ThreadMapping::BlockPerRow:
    return fmt::format("stitch::rows::block_allreduce({}, {})", value, op);
  }
  return value;
}

std::string LineLoop::leader() const {
  switch (mapping_) {
  case ThreadMapping::Flat:
    return "";
  case ThreadMapping::WarpPerRow:
    return "lane == 0";
  case ThreadMapping::BlockPerRow:
    return "thread == 0";
  }
  return "";
}

void LineLoop::leader_writes(CodeWriter& out, const std::string& statement) const {
  std::string guard = leader();
  if (guard.empty())
    out.line(statement);
  else
    out.linef("if ({}) {}", guard, statement);
}

std::string offset_expression(const std::string& var,
                              const std::vector<std::pair<int64_t, int64_t>>& dims) {
  int64_t total = 1;
  for (const auto& [size, stride] : dims)
    total *= size;
  if (total == 0) return "0"; // an empty space: the expression is never evaluated
  std::vector<std::string> terms;
  int64_t divisor = total;
  for (size_t i = 0; i < dims.size(); ++i) {
    const auto [size, stride] = dims[i];
    divisor /= size;
    if (size == 1) continue;
    std::string coord = var;
    if (divisor > 1) coord = fmt::format("{} / {}", coord, divisor);
    if (i > 0) coord = fmt::format("{} % {}", coord, size);
    bool compound = coord != var;
    if (stride == 1)
      terms.push_back(coord);
    else if (compound)
      terms.push_back(fmt::format("({}) * {}", coord, stride));
    else
      terms.push_back(fmt::format("{} * {}", coord, stride));
  }
  if (terms.empty()) return "0";
  return fmt::format("{}", fmt::join(terms, " + "));
}

std::string broadcast_offset(const Shape& operand, const Shape& full, const std::string& linear) {
  int64_t elements = shape_elements(operand);
  if (elements == 1) return "0";
  std::string index = linear.find(' ') == std::string::npos ? linear : "(" + linear + ")";
  size_t lead = 0;
  while (lead < operand.size() && operand[lead] == 1)
    ++lead;
  Shape core(operand.begin() + lead, operand.end());
  if (core.size() <= full.size() &&
      std::equal(core.begin(), core.end(), full.end() - static_cast<long>(core.size()))) {
    return elements == shape_elements(full) ? linear : fmt::format("{} % {}", index, elements);
  }
  size_t offset = full.size() - operand.size();
  std::vector<std::string> terms;
  for (size_t d = 0; d < operand.size(); ++d) {
    if (operand[d] == 1) continue;
    size_t f = d + offset;
    int64_t divisor = product(full, f + 1, full.size());
    int64_t stride = product(operand, d + 1, operand.size());
    std::string coord = divisor > 1 ? fmt::format("{} / {} % {}", index, divisor, full[f])
                                    : fmt::format("{} % {}", index, full[f]);
    terms.push_back(stride == 1 ? coord : fmt::format("({}) * {}", coord, stride));
  }
  return fmt::format("{}", fmt::join(terms, " + "));
}

std::string float_literal(double value, DType t) {
  if (std::isnan(value)) return "NAN";
  if (std::isinf(value)) return value < 0 ? "-INFINITY" : "INFINITY";
  std::string s =
      t == DType::Float64 ? fmt::format("{:.17g}", value) : fmt::format("{:.9g}", value);
  if (s.find_first_of(".e") == std::string::npos) s += ".0";
  return t == DType::Float64 ? s : s + "f";
}

std::string kernel_head(const GroupEmitContext& ctx, const std::string& kernel,
                        const std::vector<std::string>& params) {
  const LaunchConfig& launch = ctx.group().launch;
  // A cooperative kernel also promises the blocks per SM its grid needs resident.
  const std::string bounds = launch.cooperative && launch.min_blocks_per_sm > 1
                                 ? fmt::format("{}, {}", launch.block[0], launch.min_blocks_per_sm)
                                 : fmt::format("{}", launch.block[0]);
  return fmt::format("__global__ void __launch_bounds__({}) {}({})", bounds, kernel,
                     fmt::join(params, ", "));
}

std::string accumulator_type(DType t) {
  switch (accumulator_dtype(t)) {
  case DType::Float32:
    return "float";
  case DType::Float64:
    return "double";
  case DType::UInt64:
    return "uint64_t";
  default:
    return "int64_t";
  }
}

std::string convert(const std::string& value, const std::string& from, const std::string& to) {
  if (from == to) return value;
  return fmt::format("stitch::ops::cast_to<{}>({})", to, value);
}

std::string symbolic_broadcast_offset(const Graph& graph, const SymShape& operand,
                                      const SymShape& full, const std::string& linear) {
  if (operand == full) return linear;
  const size_t offset = full.size() - operand.size();
  std::vector<std::string> terms;
  DimExpr stride = 1, divisor = 1; // the operand's stride and the full shape's, innermost first
  for (size_t d = operand.size(); d-- > 0;) {
    const DimExpr& extent = full[d + offset];
    if (!is_one(operand[d])) {
      std::string coord =
          divisor == DimExpr(1) ? linear : fmt::format("{} / {}", linear, dim_code(graph, divisor));
      if (d + offset > 0) coord = fmt::format("{} % {}", coord, dim_code(graph, extent));
      terms.push_back(
          stride == DimExpr(1) ? coord : fmt::format("({}) * {}", coord, dim_code(graph, stride)));
      stride = stride * operand[d];
    }
    divisor = divisor * extent;
  }
  return terms.empty() ? "0" : fmt::format("{}", fmt::join(terms, " + "));
}

ReduceForm reduce_form(const GroupEmitContext& ctx, OpKind op, DType t, int64_t length,
                       bool runtime_length) {
  const ReductionRule* rule = reduction_rule(op);
  STITCH_INTERNAL_CHECK(rule != nullptr && rule->passes() == 1,
                        "reduce_form: {} is not a one-pass reduction", op_name(op));
  const std::string in = ctype(t, ctx);
  const bool is_float = dtype_is_float(t);
  ReduceForm f;
  switch (rule->combine) {
  case ReduceCombine::Sum:
  case ReduceCombine::LogSumExp:
    f = {"stitch::rows::Sum{}", "acc += {};", is_float ? float_literal(0, t) : "0"};
    break;
  case ReduceCombine::Prod:
    f = {"stitch::rows::Prod{}", "acc *= {};", is_float ? float_literal(1, t) : "1"};
    break;
  case ReduceCombine::Max:
    f = {"stitch::rows::Max{}", "acc = stitch::rows::Max{{}}(acc, {});",
         fmt::format("stitch::rows::lowest<{}>()", in)};
    break;
  case ReduceCombine::Min:
    f = {"stitch::rows::Min{}", "acc = stitch::rows::Min{{}}(acc, {});",
         fmt::format("stitch::rows::highest<{}>()", in)};
    break;
  }
  switch (rule->term) {
  case ReduceTerm::Value:
    f.contribution = "v";
    break;
  case ReduceTerm::Abs:
    f.contribution = "stitch::rows::abs_of(v)";
    break;
  case ReduceTerm::Square:
    f.contribution = "v * v";
    break;
  }
  switch (rule->finish) {
  case ReduceFinish::None:
  case ReduceFinish::Shifted:
    f.finish = "acc";
    break;
  case ReduceFinish::Mean:
    if (runtime_length) // an empty row (a range from 0): NaN in floats, 0 in integers
      f.finish = is_float ? fmt::format("acc / static_cast<{}>(length)", accumulator_type(t))
                          : "(length > 0 ? acc / length : 0)";
    else if (is_float)
      f.finish = fmt::format("acc / {}", float_literal(static_cast<double>(length), t));
    else
      f.finish = length > 0 ? fmt::format("acc / {}", length) : "0";
    break;
  case ReduceFinish::Sqrt:
    f.finish = "stitch::rows::sqrt_of(acc)";
    break;
  case ReduceFinish::Log:
    f.finish = "stitch::rows::log_of(acc)";
    break;
  }
  return f;
}

} // namespace stitch
