// The RegionalSpec printer: a row space of `rows` x `row_length`, the row being the trailing
// axes of the spec's space. Row ops (the reductions of the reduction table over the trailing
// axes; softmax and the normalizations arrive lowered to these by lower-composites) run with
// their pointwise producers computed on the fly and their pointwise consumers reading per-row
// values broadcast along the row. Legality (planner/legality_regional.cpp) decided every role,
// pass and cache; this file prints them:
//
//   for (line ...) {                                   // a thread, warp or block per row
//     float row0[24];                                  // the row of in0, kept between passes
//     float acc0 = 0.0f;                               // pass 0: ReduceMean's sum
//     for (j ...) { k = lane + j * 32; row0[j] = in0[base + k]; acc0 += row0[j]; }
//     acc0 = warp_allreduce(acc0, Sum);  const float r0 = acc0 / 768.0f;
//     float acc1 = 0.0f;                               // pass 1: the variance's sum
//     for (j ...) { t0 = sub(row0[j], r0); t1 = pow_(t0, 2.0f); acc1 += t1; }
//     ...                                              // row math: r1 = acc1 / 768, r2 = ...
//     for (j ...) { ...; out0[base + k] = t4; }        // last pass: the full-row outputs
//     if (lane == 0) out1[line] = r3;                  // per-row outputs
//   }
//
// A Gather member (an embedding lookup) reads its index once per row and the picked data row
// where its consumers read the result:
//
//     const int64_t g0_line = line;                      // the lookup's row
//     const int64_t g0_index = stitch::movement::wrap_index(in1[g0_line], 30522);
//     const int64_t g0_row = g0_index < 0 ? -1 : g0_index * 768;
//     ... in a pass:  const float g0 = g0_row < 0 ? float(0) : float(in0[g0_row + k]);
//
// Inputs that hold a whole [rows, row_length] block are read once from global memory and kept
// in registers or in dynamic shared memory (the spec's RowCache) when read by several passes;
// smaller inputs (a scale per column, a mask broadcast over heads) are read where used. Every
// reduction accumulates in the same fixed order as the single-op kernels (a thread's elements
// in increasing k, then warp and block butterflies), in fp32 for float data.
#include "emitter/kernel_fused.h"

#include <algorithm>
#include <cctype>
#include <set>

#include "emitter/kernels.h"
#include "emitter/pointwise_expression.h"
#include "emitter/row_kernel.h"
#include "graph/error.h"
#include "graph/reductions.h"

namespace stitch {

namespace {

// `text` with every whole identifier `name` replaced by `replacement`.
std::string replace_identifier(const std::string& text, const std::string& name,
                               const std::string& replacement) {
  auto ident = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; };
  std::string out;
  size_t i = 0;
  while (i < text.size()) {
    if (text.compare(i, name.size(), name) == 0 && (i == 0 || !ident(text[i - 1])) &&
        (i + name.size() == text.size() || !ident(text[i + name.size()]))) {
      out += replacement;
      i += name.size();
    } else {
      out += text[i++];
    }
  }
  return out;
}

// One accumulator of a row op, accumulated over the row in pass `pass`.
struct RowStat {
  int pass = 0;
  std::string name;     // "acc0"
  std::string type;     // accumulator ctype
  std::string identity; // initial value
  std::string functor;  // combines the row's threads' partials
  std::string what;     // for the comment: "the sum of 'x'"
  // Writes the accumulation of one element (the scope gives element values).
  std::function<void(ValueScope&)> accumulate;
  // Row-scope lines after the combine (definitions of the row values it yields).
  std::vector<std::string> after;
};

class RegionalWriter {
public:
  RegionalWriter(const GroupEmitContext& ctx, const FusedSignature& sig, const RegionalSpec& spec);

  void write(const BlockRange& blocks, CodeWriter& out);

private:
  std::string row_index(TensorId t) const;     // a row-invariant input's index from `line`
  std::string element_index(TensorId t) const; // an element input's index from line and k
  std::string element_index_symbolic_row(TensorId t) const;
  // Over symbolic dims: `t`'s dims padded to the space's rank, and whether its leading axes
  // are the space's rows (its index is `line`) or all 1 (the same for every row): legality
  // admits only these two (legality_symbolic.cpp).
  SymShape padded_dims(TensorId t) const;
  bool per_row_symbolic(TensorId t) const;
  int stage_of(TensorId t) const;
  void add_row_op(const RegionalSpec::Member& member);
  std::string new_row_name() { return fmt::format("r{}", next_row_++); }

  void open_lines(const BlockRange& blocks, CodeWriter& out) const;
  void open_pass(CodeWriter& out) const;
  std::string combine(const std::string& value, const std::string& functor) const;
  std::string leader() const;
  int64_t threads_per_row() const;
  void write_pass(int pass, CodeWriter& out);
  void write_row_values(int stage, CodeWriter& out);
  void write_gather_rows(int stage, CodeWriter& out);
  std::string gathered_element(size_t k) const;

  const GroupEmitContext& ctx_;
  const Graph& g_;
  const FusedSignature& sig_;
  const RegionalSpec& spec_;
  size_t split_ = 0; // spec_.space[split_:] is the row

  std::map<TensorId, int> stage_;             // values of the group: the pass they exist from
  std::map<TensorId, std::string> row_value_; // row values: tensor -> name in the row scope
  std::vector<int32_t> element_nodes_;        // pointwise nodes computing element values
  std::vector<std::string> per_row_load_names_;
  std::vector<RowStat> stats_;
  int next_row_ = 0;
  std::map<TensorId, size_t> gather_of_; // a Gather's result -> its index in spec_.gathers
  std::map<TensorId, const RegionalSpec::CachedRow*> cached_;
  std::map<TensorId, std::string> cache_name_;
};

RegionalWriter::RegionalWriter(const GroupEmitContext& ctx, const FusedSignature& sig,
                               const RegionalSpec& spec)
    : ctx_(ctx), g_(ctx.graph()), sig_(sig), spec_(spec), split_(spec.row_axes_from) {
  if (spec_.mapping != ThreadMapping::Flat && spec_.block % 32 != 0)
    ctx_.spec_error(fmt::format("a {} mapping needs whole warps, not blocks of {}",
                                mapping_name(spec_.mapping), spec_.block));
  for (TensorId t : spec_.row_inputs) {
    auto param = sig_.inputs.find(t);
    if (param == sig_.inputs.end())
      ctx_.spec_error(
          fmt::format("the row input '{}' is not a kernel parameter", g_.tensor(t).name));
    row_value_[t] = "x" + param->second.substr(2);
  }
  for (size_t k = 0; k < spec_.per_row_loads.size(); ++k)
    per_row_load_names_.push_back(
        fmt::format("x{}_row{}", sig_.inputs.at(spec_.per_row_loads[k].tensor).substr(2), k));
  for (const RegionalSpec::Member& m : spec_.members) {
    const TensorId y = g_.nodes[m.node].outputs[0];
    switch (m.role) {
    case RegionalSpec::Role::Element:
      element_nodes_.push_back(m.node);
      stage_[y] = m.stage;
      break;
    case RegionalSpec::Role::Row:
      row_value_[y] = new_row_name();
      stage_[y] = m.stage;
      break;
    case RegionalSpec::Role::Reduce:
      add_row_op(m);
      break;
    case RegionalSpec::Role::Gather:
      stage_[y] = m.stage;
      break;
    }
  }
  for (size_t k = 0; k < spec_.gathers.size(); ++k) {
    const RegionalSpec::GatherRow& gather = spec_.gathers[k];
    if (!sig_.inputs.count(gather.data) ||
        (!gather.indices_in_group && !sig_.inputs.count(gather.indices)))
      ctx_.spec_error(fmt::format("the lookup '{}' reads a table or indices that are not kernel "
                                  "parameters",
                                  g_.nodes[gather.node].name));
    gather_of_[g_.nodes[gather.node].outputs[0]] = k;
  }
  for (const RegionalSpec::CachedRow& row : spec_.cached) {
    cached_[row.tensor] = &row;
    auto gather = gather_of_.find(row.tensor);
    cache_name_[row.tensor] = gather != gather_of_.end()
                                  ? fmt::format("row_g{}", gather->second)
                                  : "row" + sig_.inputs.at(row.tensor).substr(2);
  }
}

SymShape RegionalWriter::padded_dims(TensorId t) const {
  SymShape p = g_.tensor(t).sym_shape();
  p.insert(p.begin(), spec_.space_dims.size() - std::min(spec_.space_dims.size(), p.size()),
           DimExpr(1));
  return p;
}

bool RegionalWriter::per_row_symbolic(TensorId t) const {
  const SymShape p = padded_dims(t);
  for (size_t d = 0; d < split_; ++d)
    if (!is_one(p[d])) return true;
  return false;
}

std::string RegionalWriter::row_index(TensorId t) const {
  if (!spec_.space_dims.empty()) {
    // Over symbolic dims: one value, one per row, or broadcast along some of the rows' axes.
    if (!per_row_symbolic(t)) return "0";
    const SymShape p = padded_dims(t);
    const SymShape rows(p.begin(), p.begin() + static_cast<std::ptrdiff_t>(split_));
    const SymShape space_rows = spec_.rows_dims();
    if (squeezed(rows) == squeezed(space_rows)) return "line";
    return symbolic_broadcast_offset(g_, rows, space_rows, "line");
  }
  const Shape& s = g_.tensor(t).shape;
  const Shape& full = spec_.space;
  Shape p(full.size() - std::min(full.size(), s.size()), 1);
  p.insert(p.end(), s.begin(), s.end());
  return broadcast_offset(Shape(p.begin(), p.begin() + split_),
                          Shape(full.begin(), full.begin() + split_), "line");
}

std::string RegionalWriter::element_index(TensorId t) const {
  if (spec_.row_length_dims) return element_index_symbolic_row(t);
  const Shape& s = g_.tensor(t).shape;
  const Shape& full = spec_.space;
  Shape p(full.size() - std::min(full.size(), s.size()), 1);
  p.insert(p.end(), s.begin(), s.end());
  const bool symbolic = !spec_.space_dims.empty();
  bool across_rows = false;
  for (size_t d = 0; d < split_; ++d)
    across_rows |= p[d] != 1;
  if (symbolic) across_rows = per_row_symbolic(t);
  const std::string within = broadcast_offset(Shape(p.begin() + split_, p.end()),
                                              Shape(full.begin() + split_, full.end()), "k");
  if (!across_rows) return within;
  if (symbolic ? padded_dims(t) == spec_.space_dims : p == full) return "base + k";
  // The operand's row (from `line`, the same for the whole row) times its row length, plus the
  // element's place in that row (from k): no division of the flat index base + k per element.
  const int64_t inner = shape_elements(Shape(p.begin() + split_, p.end()));
  const std::string row = row_index(t);
  const bool plain = row.find(' ') == std::string::npos;
  const std::string start = inner == 1 ? row
                            : plain    ? fmt::format("{} * {}", row, inner)
                                       : fmt::format("({}) * {}", row, inner);
  return within == "0" ? start : fmt::format("{} + {}", start, within);
}

// Over a row of the run's length: the operand's place in the row is k where it holds the whole
// row, 0 where it is one value along it, else its broadcast offset by the run's extents; its
// row (from `line`) times the run's elements of its row.
std::string RegionalWriter::element_index_symbolic_row(TensorId t) const {
  const SymShape p = padded_dims(t);
  const SymShape row(p.begin() + static_cast<std::ptrdiff_t>(split_), p.end());
  const SymShape space_row = spec_.row_dims();
  const std::string within = row == space_row ? "k"
                             : squeezed(row).empty()
                                 ? "0"
                                 : symbolic_broadcast_offset(g_, row, space_row, "k");
  if (!per_row_symbolic(t)) return within;
  if (p == spec_.space_dims) return "base + k";
  const DimExpr inner = sym_elements(row);
  const std::string line = row_index(t);
  const std::string start =
      is_one(inner)
          ? line
          : fmt::format("{} * {}", line.find(' ') == std::string::npos ? line : "(" + line + ")",
                        dim_code(g_, inner));
  return within == "0" ? start : fmt::format("{} + {}", start, within);
}

int RegionalWriter::stage_of(TensorId t) const {
  auto it = stage_.find(t);
  return it == stage_.end() ? 0 : it->second;
}

void RegionalWriter::add_row_op(const RegionalSpec::Member& member) {
  const Node& node = g_.nodes[member.node];
  const ReductionRule* rule = reduction_rule(node.op);
  if (rule == nullptr)
    ctx_.spec_error(fmt::format("node '{}' ({}) is a row op without a reduction rule", node.name,
                                op_name(node.op)));
  const TensorId x = node.inputs[0];
  const int pass = member.stage;
  const DType t = g_.tensor(x).dtype;
  const std::string x_type = ctype(t, ctx_);
  const std::string acc_type = accumulator_type(t);
  const int id = static_cast<int>(stats_.size());
  auto element = [x, x_type](ValueScope& scope, const std::string& acc) {
    return x_type == acc ? scope.value(x) : fmt::format("{}({})", acc, scope.value(x));
  };
  const TensorId y = node.outputs[0];
  const DType y_dtype = g_.tensor(y).dtype;
  const std::string y_type = ctype(y_dtype, ctx_);
  auto stat = [&](int p, const std::string& name, const std::string& identity,
                  const std::string& functor, const std::string& what) {
    RowStat s;
    s.pass = p;
    s.name = name;
    s.type = acc_type;
    s.identity = identity;
    s.functor = functor;
    s.what = what + " of '" + node.name + "' (" + std::string(op_name(node.op)) + ")";
    return s;
  };
  if (rule->combine != ReduceCombine::LogSumExp) {
    const ReduceForm form =
        reduce_form(ctx_, node.op, t, spec_.row_length, spec_.row_length_dims.has_value());
    const std::string acc = fmt::format("acc{}", id);
    RowStat s = stat(pass, acc, form.identity, form.functor, "the accumulator");
    s.accumulate = [form, acc, acc_type, element](ValueScope& scope) {
      const std::string v = element(scope, acc_type);
      const std::string contribution = replace_identifier(form.contribution, "v", v);
      scope.writer().line(
          replace_identifier(fmt::format(fmt::runtime(form.step), contribution), "acc", acc));
    };
    const std::string r = new_row_name();
    s.after.push_back(
        fmt::format("const {} {} = {};", y_type, r,
                    rounded_to(y_dtype, convert(replace_identifier(form.finish, "acc", acc),
                                                acc_type, y_type))));
    stats_.push_back(std::move(s));
    row_value_[y] = r;
    stage_[y] = pass + 1;
    return;
  }
  // log(sum(exp(x - max))) + max: the maximum in one pass, the shifted sum in the next.
  const std::string max = fmt::format("acc{}", id), sum = fmt::format("acc{}", id + 1);
  const std::string shift = new_row_name(), r = new_row_name();
  RowStat m = stat(pass, max, fmt::format("stitch::rows::lowest<{}>()", acc_type),
                   "stitch::rows::Max{}", "the maximum");
  m.accumulate = [max, acc_type, element](ValueScope& scope) {
    scope.writer().linef("{0} = stitch::rows::Max{{}}({0}, {1});", max, element(scope, acc_type));
  };
  m.after.push_back(
      fmt::format("const {} {} = stitch::rows::finite_or_zero({});", acc_type, shift, max));
  RowStat s = stat(pass + 1, sum, dtype_is_float(t) ? float_literal(0, t) : "0",
                   "stitch::rows::Sum{}", "the sum of exp(x - max)");
  s.accumulate = [sum, shift, acc_type, element](ValueScope& scope) {
    scope.writer().linef("{} += stitch::rows::exp_of({} - {});", sum, element(scope, acc_type),
                         shift);
  };
  s.after.push_back(fmt::format(
      "const {} {} = {};", y_type, r,
      rounded_to(y_dtype, convert(fmt::format("{} + stitch::rows::log_of({})", shift, sum),
                                  acc_type, y_type))));
  stats_.push_back(std::move(m));
  stats_.push_back(std::move(s));
  row_value_[y] = r;
  stage_[y] = pass + 2;
}

int64_t RegionalWriter::threads_per_row() const {
  return stitch::threads_per_row(spec_.mapping, spec_.block);
}

void RegionalWriter::open_lines(const BlockRange& blocks, CodeWriter& out) const {
  // Over symbolic dims the rows the space's leading axes hold (a Regional group's launch covers
  // them as its work; an Independent group's work is its parts' blocks).
  const DimExpr lines =
      spec_.space_dims.empty() ? DimExpr(spec_.rows) : sym_elements(spec_.rows_dims());
  if (!lines.is_constant())
    out.linef("const int64_t lines = {};  // rows: {}", dim_code(g_, lines), lines.to_string());
  else
    out.linef("const int64_t lines = {};  // rows", spec_.rows);
  if (spec_.row_length_dims)
    out.linef("const int64_t length = {};  // elements per row: {}",
              dim_code(g_, *spec_.row_length_dims), spec_.row_length_dims->to_string());
  else
    out.linef("const int64_t length = {};  // elements per row", spec_.row_length);
  switch (spec_.mapping) {
  case ThreadMapping::Flat:
    out.linef("const int64_t first_line = int64_t({}) * blockDim.x + threadIdx.x;", blocks.index);
    out.linef("const int64_t line_stride = int64_t({}) * blockDim.x;", blocks.count);
    break;
  case ThreadMapping::WarpPerRow:
    out.line("const int lane = threadIdx.x % 32;");
    out.linef("const int64_t first_line = (int64_t({}) * blockDim.x + threadIdx.x) / 32;",
              blocks.index);
    out.linef("const int64_t line_stride = int64_t({}) * (blockDim.x / 32);", blocks.count);
    break;
  case ThreadMapping::BlockPerRow:
    out.line("const int thread = threadIdx.x;");
    out.linef("const int64_t first_line = {};", blocks.index);
    out.linef("const int64_t line_stride = {};", blocks.count);
    break;
  }
  if (spec_.cache == RowCache::Shared) {
    out.line("STITCH_DYNAMIC_SHARED(unsigned char, row_bytes);  // the cached rows");
    for (const auto& [t, name] : cache_name_)
      out.linef("{0}* const {1} = reinterpret_cast<{0}*>(row_bytes + {2});",
                storage_ctype(g_.tensor(t).dtype, ctx_), name, cached_.at(t)->shared_offset);
  }
  out.open("for (int64_t line = first_line; line < lines; line += line_stride)");
  if (spec_.row_length_dims)
    out.line("const int64_t base = line * length;");
  else
    out.linef("const int64_t base = line * {};", spec_.row_length);
}

void RegionalWriter::open_pass(CodeWriter& out) const {
  const ThreadMapping m = spec_.mapping;
  const std::string start = m == ThreadMapping::Flat         ? "0"
                            : m == ThreadMapping::WarpPerRow ? "lane"
                                                             : "thread";
  const int64_t step = threads_per_row();
  if (spec_.cache == RowCache::Registers) {
    out.line("STITCH_UNROLL");
    out.open(fmt::format("for (int j = 0; j < {}; ++j)", spec_.elements_per_thread));
    out.linef("const int64_t k = {};",
              m == ThreadMapping::Flat ? "j" : fmt::format("{} + j * {}", start, step));
    out.line("if (k >= length) break;");
    return;
  }
  out.open(fmt::format("for (int64_t k = {}; k < length; {})", start,
                       step == 1 ? "++k" : fmt::format("k += {}", step)));
}

std::string RegionalWriter::combine(const std::string& value, const std::string& functor) const {
  switch (spec_.mapping) {
  case ThreadMapping::Flat:
    return value;
  case ThreadMapping::WarpPerRow:
    return fmt::format("stitch::rows::warp_allreduce({}, {})", value, functor);
  case ThreadMapping::BlockPerRow:
    return fmt::format("stitch::rows::block_allreduce({}, {})", value, functor);
  }
  return value;
}

std::string RegionalWriter::leader() const {
  switch (spec_.mapping) {
  case ThreadMapping::Flat:
    return "";
  case ThreadMapping::WarpPerRow:
    return "if (lane == 0) ";
  case ThreadMapping::BlockPerRow:
    return "if (thread == 0) ";
  }
  return "";
}

void RegionalWriter::write_pass(int pass, CodeWriter& out) {
  std::vector<const RowStat*> stats;
  for (const RowStat& s : stats_)
    if (s.pass == pass) stats.push_back(&s);
  const bool writes = pass == spec_.output_pass;
  std::vector<std::string> what;
  for (const RowStat* s : stats)
    what.push_back(s->what);
  if (writes) what.push_back("the full-row outputs");
  out.comment(fmt::format("Pass {}: {}.", pass, fmt::join(what, "; ")));
  for (const RowStat* s : stats)
    out.linef("{} {} = {};", s->type, s->name, s->identity);
  open_pass(out);
  ValueScope scope(ctx_, element_nodes_, out, [&](TensorId t) -> std::string {
    if (auto lit = sig_.literals.find(t); lit != sig_.literals.end()) return lit->second;
    if (auto row = row_value_.find(t); row != row_value_.end()) {
      if (stage_of(t) > pass)
        ctx_.spec_error(fmt::format("row value '{}' used in pass {} before it exists",
                                    g_.tensor(t).name, pass));
      return row->second;
    }
    // An input that varies along the row (or a looked-up row): from global memory, or from the
    // row cache after the pass that read it first.
    const Tensor& tensor = g_.tensor(t);
    const std::string type = ctype(tensor.dtype, ctx_);
    auto gather = gather_of_.find(t);
    auto param = sig_.inputs.find(t);
    if (gather == gather_of_.end() && param == sig_.inputs.end())
      ctx_.spec_error(fmt::format("'{}' is read but is neither an input, a literal nor a row value",
                                  g_.tensor(t).name));
    const std::string name = gather != gather_of_.end() ? fmt::format("g{}", gather->second)
                                                        : "x" + param->second.substr(2);
    if (gather != gather_of_.end() && stage_of(t) > pass)
      ctx_.spec_error(fmt::format("the lookup '{}' is used in pass {} before its index exists",
                                  tensor.name, pass));
    auto cached = cached_.find(t);
    std::string cache_element;
    if (cached != cached_.end())
      cache_element = cache_name_.at(t) + (spec_.cache == RowCache::Registers ? "[j]" : "[k]");
    if (cached != cached_.end() && pass > cached->second->first_pass) {
      out.linef("const {} {} = {};", type, name, cache_element);
      return name;
    }
    if (gather != gather_of_.end())
      out.linef("const {} {} = {};", type, name, gathered_element(gather->second));
    else
      out.linef("const {} {} = {}[{}];", type, name, param->second, element_index(t));
    if (cached != cached_.end()) out.linef("{} = {};", cache_element, name);
    return name;
  });
  for (const RowStat* s : stats)
    s->accumulate(scope);
  if (writes)
    for (TensorId t : spec_.element_outputs)
      out.linef("{}[base + k] = {};", sig_.outputs.at(t), scope.value(t));
  out.close();
}

void RegionalWriter::write_row_values(int stage, CodeWriter& out) {
  for (const RegionalSpec::Member& m : spec_.members) {
    if (m.role != RegionalSpec::Role::Row || m.stage != stage) continue;
    const Node& node = g_.nodes[m.node];
    const TensorId y = node.outputs[0];
    const std::vector<TensorId> operands = value_operands(node);
    std::vector<std::string> values;
    for (size_t k = 0; k < operands.size(); ++k) {
      const TensorId t = operands[k];
      if (t == kNoTensor)
        values.emplace_back();
      else if (auto lit = sig_.literals.find(t); lit != sig_.literals.end())
        values.push_back(lit->second);
      else if (k < m.loads.size() && m.loads[k] >= 0)
        values.push_back(per_row_load_names_.at(m.loads[k]));
      else if (auto row = row_value_.find(t); row != row_value_.end())
        values.push_back(row->second);
      else
        ctx_.spec_error(fmt::format("the row node '{}' ({}) reads '{}', which is no row value",
                                    node.name, op_name(node.op), g_.tensor(t).name));
    }
    out.comment(
        fmt::format("{} = '{}' ({}), one per row", row_value_.at(y), node.name, op_name(node.op)));
    out.linef("const {} {} = {};", ctype(g_.tensor(y).dtype, ctx_), row_value_.at(y),
              pointwise_expression(ctx_, node, values));
  }
}

// The lookups whose index exists from `stage` on (an input's: before pass 0): which data row
// each reads for this row, -1 for an index out of range.
void RegionalWriter::write_gather_rows(int stage, CodeWriter& out) {
  for (size_t k = 0; k < spec_.gathers.size(); ++k) {
    const RegionalSpec::GatherRow& gather = spec_.gathers[k];
    const Node& node = g_.nodes[gather.node];
    if (stage_of(node.outputs[0]) != stage) continue;
    if (spec_.row_length_dims)
      ctx_.spec_error(fmt::format("the lookup '{}' reads rows of a fixed table into rows of {} "
                                  "elements",
                                  node.name, spec_.row_length_dims->to_string()));
    const Shape rows(spec_.space.begin(),
                     spec_.space.begin() + static_cast<std::ptrdiff_t>(split_));
    out.comment(fmt::format("g{} = '{}' (Gather): for each row, one row of {} of '{}'", k,
                            node.name, spec_.row_length, g_.tensor(gather.data).name));
    // The lookup's rows are (o, j): o over the data's axes before the gathered one (one value
    // unless a batch of tables), j over the indices.
    const bool tables = shape_elements(gather.out_rows) != gather.count;
    std::string index;
    if (gather.indices_in_group) {
      index = row_value_.at(gather.indices);
      out.linef("const int64_t g{}_line = line;", k);
    } else if (!spec_.space_dims.empty()) {
      // Over symbolic dims: the lookup's row of this row, its broadcast axes divided out by
      // the run's extents.
      out.linef("const int64_t g{}_line = {};", k,
                symbolic_broadcast_offset(g_, gather.out_rows_dims, spec_.rows_dims(), "line"));
      index = fmt::format("{}[g{}_line]", sig_.inputs.at(gather.indices), k);
    } else {
      out.linef("const int64_t g{}_line = {};", k, broadcast_offset(gather.out_rows, rows, "line"));
      index =
          tables ? fmt::format("{}[g{}_line % {}]", sig_.inputs.at(gather.indices), k, gather.count)
                 : fmt::format("{}[g{}_line]", sig_.inputs.at(gather.indices), k);
    }
    out.linef("const int64_t g{0}_index = stitch::movement::wrap_index({1}, {2});", k, index,
              gather.dim);
    if (tables)
      out.linef("const int64_t g{0}_row = g{0}_index < 0 ? -1 : (g{0}_line / {1} * {2} + "
                "g{0}_index) * {3};",
                k, gather.count, gather.dim, spec_.row_length);
    else
      out.linef("const int64_t g{0}_row = g{0}_index < 0 ? -1 : g{0}_index * {1};", k,
                spec_.row_length);
  }
}

// Element k of this row of lookup `g`k; zero for an index out of range.
std::string RegionalWriter::gathered_element(size_t k) const {
  const RegionalSpec::GatherRow& gather = spec_.gathers[k];
  const DType dtype = g_.tensor(gather.data).dtype;
  return fmt::format("g{0}_row < 0 ? {1}(0) : {1}({2}[g{0}_row + k])", k, ctype(dtype, ctx_),
                     sig_.inputs.at(gather.data));
}

void RegionalWriter::write(const BlockRange& blocks, CodeWriter& out) {
  open_lines(blocks, out);
  if (spec_.cache == RowCache::Registers)
    for (const auto& [t, name] : cache_name_)
      out.linef("{} {}[{}];  // this thread's elements of {}'s row",
                ctype(g_.tensor(t).dtype, ctx_), name, spec_.elements_per_thread,
                gather_of_.count(t) ? fmt::format("g{}", gather_of_.at(t)) : sig_.inputs.at(t));
  for (TensorId t : spec_.row_inputs)
    out.linef("const {} {} = {}[{}];  // one per row", ctype(g_.tensor(t).dtype, ctx_),
              row_value_.at(t), sig_.inputs.at(t), row_index(t));
  for (size_t k = 0; k < spec_.per_row_loads.size(); ++k) {
    const RegionalSpec::PerRowLoad& load = spec_.per_row_loads[k];
    const std::string index =
        spec_.space_dims.empty()
            ? broadcast_offset(g_.tensor(load.tensor).shape, load.against, "line")
        : per_row_symbolic(load.tensor) ? "line"
                                        : "0";
    out.linef("const {} {} = {}[{}];  // one per row", ctype(g_.tensor(load.tensor).dtype, ctx_),
              per_row_load_names_[k], sig_.inputs.at(load.tensor), index);
  }
  write_row_values(0, out);
  write_gather_rows(0, out);
  for (int p = 0; p < spec_.passes; ++p) {
    write_pass(p, out);
    for (const RowStat& s : stats_) {
      if (s.pass != p) continue;
      if (spec_.mapping != ThreadMapping::Flat)
        out.linef("{} = {};", s.name, combine(s.name, s.functor));
      for (const std::string& line : s.after)
        out.line(line);
    }
    write_row_values(p + 1, out);
    write_gather_rows(p + 1, out);
  }
  for (TensorId t : spec_.row_outputs)
    out.linef("{}{}[line] = {};", leader(), sig_.outputs.at(t), row_value_.at(t));
  out.close();
}

} // namespace

std::string regional_summary(const RegionalSpec& spec) {
  const char* who = spec.mapping == ThreadMapping::Flat         ? "a thread"
                    : spec.mapping == ThreadMapping::WarpPerRow ? "a warp"
                                                                : "a block";
  const std::string cache =
      spec.cache == RowCache::Registers ? "; the row inputs are kept in registers between passes"
      : spec.cache == RowCache::Shared ? "; the row inputs are kept in shared memory between passes"
      : spec.passes > 1                ? "; each pass reads its inputs from global memory"
                                       : "";
  // Over symbolic dims the rows are an expression of the symbols (the launch's work).
  std::string rows = std::to_string(spec.rows);
  if (!spec.space_dims.empty()) rows = sym_elements(spec.rows_dims()).to_string();
  const std::string length = spec.row_length_dims ? fmt::format("{} (at most {} per thread)",
                                                                spec.row_length_dims->to_string(),
                                                                spec.elements_per_thread)
                                                  : std::to_string(spec.row_length);
  return fmt::format("{} rows of {} elements, {} per row, {} pass{}{}.", rows, length, who,
                     spec.passes, spec.passes == 1 ? "" : "es", cache);
}

void emit_regional_body(const GroupEmitContext& ctx, const FusedSignature& sig,
                        const RegionalSpec& spec, const BlockRange& blocks, CodeWriter& out) {
  RegionalWriter writer(ctx, sig, spec);
  out.comment(regional_summary(spec));
  writer.write(blocks, out);
}

void emit_fused_regional(const GroupEmitContext& ctx, CodeWriter& out) {
  const FusionGroup& group = ctx.group();
  const RegionalSpec& spec = ctx.spec<RegionalSpec>();
  const FusedSignature sig = fused_signature(ctx, spec.io);
  RegionalWriter writer(ctx, sig, spec);
  const std::string kernel = fused_kernel_name(ctx);
  fused_kernel_banner(
      ctx, sig, group.nodes,
      fmt::format("Fused group {} (Regional): {}", group.id, regional_summary(spec)), out);
  std::vector<std::string> params = sig.params;
  for (const std::string& p : launch_symbol_params(ctx))
    params.push_back(p);
  out.open(kernel_head(ctx, kernel, params));
  writer.write(BlockRange{}, out);
  out.close();
  out.line();
  emit_launch(ctx, out, kernel, sig.args);
}

} // namespace stitch
