// The Regional scheme: a row space of `rows` x `row_length`, the row being the trailing axes of
// the group's full shape. Row ops (Reduce* and GlobalAveragePool / GlobalMaxPool over the
// trailing axes; softmax and the normalizations arrive lowered to these by lower-composites)
// run with their pointwise producers computed on the fly and their pointwise consumers reading
// per-row values broadcast along the row.
//
// Every tensor of the group is either an element value (it varies along the row) or a row
// value (one per row: a reduction's result, a row-invariant input, pointwise math on those).
// A pointwise node whose result has the per-row layout (the leading axes, the row's axes
// dropped or kept as 1: [2,16] or [2,16,1] in the row space [2,16,64]) is evaluated once per
// row, its inputs read at their numpy-broadcast index into that result, as an attention mask's
// `(1 - mask) * -10000` is.
// A row op needs whole passes over the row: a reduction's result exists after the pass that
// accumulates it, so the kernel makes as many passes as its longest chain of row ops needs:
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
// Inputs that hold a whole [rows, row_length] block are read once from global memory and kept
// in registers (the plan's RowCache) or in dynamic shared memory when read by several passes;
// smaller inputs (a scale per column, a mask broadcast over heads) are read where used. Every
// reduction accumulates in the same fixed order as the single-op kernels (a thread's elements
// in increasing k, then warp and block butterflies), in fp32 for float data.
#include "emitter/kernel_fused.h"

#include <algorithm>
#include <cctype>
#include <optional>
#include <set>

#include "emitter/kernels.h"
#include "emitter/pointwise_expression.h"
#include "emitter/row_kernel.h"
#include "graph/error.h"
#include "graph/infer_context.h"
#include "planner/reduction_mapping.h"

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
  RegionalWriter(const GroupEmitContext& ctx, const FusedSignature& sig,
                 const std::vector<int32_t>& nodes, int64_t rows, int64_t length)
      : ctx_(ctx), g_(ctx.graph()), sig_(sig), nodes_(nodes), rows_(rows), length_(length) {}

  void analyze();
  void write(const BlockRange& blocks, CodeWriter& out);
  std::string summary() const;

private:
  // ---- the row space ----
  Shape padded(const Shape& s) const; // right-aligned to full_, leading 1s
  bool broadcasts_to_full(const Shape& s) const;
  bool varies_along_row(const Shape& s) const;
  std::string row_index(const Shape& s) const;     // a row-invariant input's index from `line`
  std::string element_index(const Shape& s) const; // an element input's index from line and k
  int stage_of(TensorId t) const;
  bool is_row_value(TensorId t) const { return row_value_.count(t) > 0; }

  void add_row_op(const Node& node);
  bool per_row_layout(const Shape& s) const;
  void add_per_row_node(int32_t n, const std::vector<bool>& produced);
  void check_row_op_space(const Node& node);
  std::string new_row_name() { return fmt::format("r{}", next_row_++); }

  // ---- code ----
  void open_lines(const BlockRange& blocks, CodeWriter& out) const;
  void open_pass(CodeWriter& out) const;
  std::string combine(const std::string& value, const std::string& functor) const;
  std::string leader() const;
  int64_t threads_per_row() const;
  int64_t registers_per_thread() const;
  // Writes pass `pass` (reading inputs, accumulating its stats, the last one writing outputs);
  // records in `reads` which cached-input candidates it read.
  void write_pass(int pass, CodeWriter& out, std::map<TensorId, std::set<int>>* reads);
  void write_row_values(int stage, CodeWriter& out);

  const GroupEmitContext& ctx_;
  const Graph& g_;
  const FusedSignature& sig_;
  const std::vector<int32_t>& nodes_;
  int64_t rows_, length_;
  Shape full_;
  size_t split_ = 0; // full_[split_:] is the row

  std::map<TensorId, int> stage_;               // the pass from which a value can be computed
  std::map<TensorId, std::string> row_value_;   // row values: tensor -> name in the row scope
  std::map<TensorId, std::string> row_literal_; // literals, usable in both scopes
  std::vector<int32_t> row_pointwise_;          // pointwise nodes computing row values
  std::vector<int32_t> element_pointwise_;      // pointwise nodes computing element values
  std::vector<TensorId> row_inputs_;            // row-invariant inputs loaded once per row
  // Inputs of per-row nodes, loaded once per row at their broadcast index into the node's
  // per-row result: {tensor, index, name}; and (node, operand) -> that name.
  struct PerRowLoad {
    TensorId tensor;
    std::string index, name;
  };
  std::vector<PerRowLoad> per_row_loads_;
  std::map<std::pair<int32_t, TensorId>, std::string> per_row_operand_;
  std::vector<RowStat> stats_;
  std::vector<TensorId> element_outputs_, row_outputs_;
  int passes_ = 0, output_pass_ = -1;
  int next_row_ = 0;

  RowCache cache_ = RowCache::None;
  std::map<TensorId, int> cached_; // cached input -> the pass that loads it
  std::map<TensorId, std::string> cache_name_;
  std::map<TensorId, int64_t> cache_offset_; // byte offset in dynamic shared memory
};

Shape RegionalWriter::padded(const Shape& s) const {
  Shape p(full_.size() - std::min(full_.size(), s.size()), 1);
  p.insert(p.end(), s.begin(), s.end());
  return p;
}

bool RegionalWriter::broadcasts_to_full(const Shape& s) const {
  if (s.size() > full_.size()) return false;
  Shape p = padded(s);
  for (size_t d = 0; d < p.size(); ++d)
    if (p[d] != 1 && p[d] != full_[d]) return false;
  return true;
}

bool RegionalWriter::varies_along_row(const Shape& s) const {
  Shape p = padded(s);
  for (size_t d = split_; d < p.size(); ++d)
    if (p[d] != 1) return true;
  return false;
}

std::string RegionalWriter::row_index(const Shape& s) const {
  Shape p = padded(s);
  return broadcast_offset(Shape(p.begin(), p.begin() + split_),
                          Shape(full_.begin(), full_.begin() + split_), "line");
}

std::string RegionalWriter::element_index(const Shape& s) const {
  Shape p = padded(s);
  bool across_rows = false;
  for (size_t d = 0; d < split_; ++d)
    across_rows |= p[d] != 1;
  if (!across_rows)
    return broadcast_offset(Shape(p.begin() + split_, p.end()),
                            Shape(full_.begin() + split_, full_.end()), "k");
  return broadcast_offset(p, full_, "base + k");
}

int RegionalWriter::stage_of(TensorId t) const {
  auto it = stage_.find(t);
  return it == stage_.end() ? 0 : it->second;
}

void RegionalWriter::check_row_op_space(const Node& node) {
  ReductionSpace space = reduction_space(g_, node);
  const Tensor& x = g_.tensor(node.inputs[0]);
  if (!space.rows() || space.lines != rows_ || space.length != length_ ||
      x.elements() != rows_ * length_)
    refuse_fused(ctx_, fmt::format("node '{}' ({}) works on {} lines of {} elements, not the "
                                   "group's {} rows of {} contiguous elements",
                                   node.name, op_name(node.op), space.lines, space.length, rows_,
                                   length_));
  if (is_row_value(node.inputs[0]) || !varies_along_row(x.shape))
    refuse_fused(ctx_, fmt::format("node '{}' ({}) reduces a value that is constant along the row",
                                   node.name, op_name(node.op)));
}

void RegionalWriter::add_row_op(const Node& node) {
  check_row_op_space(node);
  const TensorId x = node.inputs[0];
  const int pass = stage_of(x);
  const std::string x_type = ctype(g_.tensor(x).dtype, ctx_);
  const int id = static_cast<int>(stats_.size());
  auto as = [](const std::string& value, const std::string& from, const std::string& to) {
    return from == to ? value : fmt::format("{}({})", to, value);
  };
  auto element = [this, x, x_type, as](ValueScope& scope, const std::string& acc) {
    return as(scope.value(x), x_type, acc);
  };
  const TensorId y = node.outputs[0];
  const std::string y_type = ctype(g_.tensor(y).dtype, ctx_);
  auto row_out = [&](TensorId t, int stage, const std::string& name) {
    row_value_[t] = name;
    stage_[t] = stage;
  };
  auto stat = [&](int p, const std::string& name, const std::string& type,
                  const std::string& identity, const std::string& functor,
                  const std::string& what) {
    RowStat s;
    s.pass = p;
    s.name = name;
    s.type = type;
    s.identity = identity;
    s.functor = functor;
    s.what = what + " of '" + node.name + "' (" + std::string(op_name(node.op)) + ")";
    return s;
  };

  switch (node.op) {
  case OpKind::ReduceSum:
  case OpKind::ReduceMean:
  case OpKind::ReduceMax:
  case OpKind::ReduceMin:
  case OpKind::ReduceProd:
  case OpKind::ReduceL1:
  case OpKind::ReduceL2:
  case OpKind::ReduceSumSquare:
  case OpKind::ReduceLogSum:
  case OpKind::GlobalAveragePool:
  case OpKind::GlobalMaxPool: {
    const DType t = g_.tensor(x).dtype;
    ReduceForm form = reduce_form(ctx_, node.op, t, length_);
    const std::string acc_type = accumulator_type(t);
    const std::string acc = fmt::format("acc{}", id);
    RowStat s = stat(pass, acc, acc_type, form.identity, form.functor, "the accumulator");
    s.accumulate = [form, acc, acc_type, element](ValueScope& scope) {
      std::string v = element(scope, acc_type);
      std::string contribution = replace_identifier(form.contribution, "v", v);
      scope.writer().line(
          replace_identifier(fmt::format(fmt::runtime(form.step), contribution), "acc", acc));
    };
    std::string r = new_row_name();
    s.after.push_back(
        fmt::format("const {} {} = {};", y_type, r,
                    convert(replace_identifier(form.finish, "acc", acc), acc_type, y_type)));
    stats_.push_back(std::move(s));
    row_out(y, pass + 1, r);
    return;
  }
  case OpKind::ReduceLogSumExp: {
    const DType t = g_.tensor(x).dtype;
    const std::string acc_type = accumulator_type(t);
    const std::string max = fmt::format("acc{}", id), sum = fmt::format("acc{}", id + 1);
    const std::string shift = new_row_name(), r = new_row_name();
    RowStat m = stat(pass, max, acc_type, fmt::format("stitch::rows::lowest<{}>()", acc_type),
                     "stitch::rows::Max{}", "the maximum");
    m.accumulate = [max, acc_type, element](ValueScope& scope) {
      scope.writer().linef("{0} = stitch::rows::Max{{}}({0}, {1});", max, element(scope, acc_type));
    };
    m.after.push_back(
        fmt::format("const {} {} = stitch::rows::finite_or_zero({});", acc_type, shift, max));
    RowStat s = stat(pass + 1, sum, acc_type, dtype_is_float(t) ? float_literal(0, t) : "0",
                     "stitch::rows::Sum{}", "the sum of exp(x - max)");
    s.accumulate = [sum, shift, acc_type, element](ValueScope& scope) {
      scope.writer().linef("{} += stitch::rows::exp_of({} - {});", sum, element(scope, acc_type),
                           shift);
    };
    s.after.push_back(fmt::format(
        "const {} {} = {};", y_type, r,
        convert(fmt::format("{} + stitch::rows::log_of({})", shift, sum), acc_type, y_type)));
    stats_.push_back(std::move(m));
    stats_.push_back(std::move(s));
    row_out(y, pass + 2, r);
    return;
  }
  default:
    refuse_fused(ctx_, fmt::format("node '{}' ({}) is neither pointwise nor a row op a Regional "
                                   "group stitches (Reduce*, GlobalAveragePool, GlobalMaxPool)",
                                   node.name, op_name(node.op)));
  }
}

// A per-row result: the layout of the row space's leading axes (the row's axes dropped or kept
// as 1), one value per row in row order, so that its element `line` is this row's value.
bool RegionalWriter::per_row_layout(const Shape& s) const {
  auto squeezed = [](const Shape& x) {
    Shape r;
    for (int64_t d : x)
      if (d != 1) r.push_back(d);
    return r;
  };
  const Shape rows = squeezed(Shape(full_.begin(), full_.begin() + split_));
  return squeezed(s) == rows && rows != squeezed(full_);
}

// A pointwise node whose result is per-row: evaluated once per row, before the passes or
// between them. Its operands are per-row values of the group (this row's value), literals, or
// inputs read at their numpy-broadcast index into the node's result (`line` is that result's
// element index).
void RegionalWriter::add_per_row_node(int32_t n, const std::vector<bool>& produced) {
  const Node& node = g_.nodes[n];
  const TensorId y = node.outputs[0];
  const Shape& result = g_.tensor(y).shape;
  int stage = 0;
  for (TensorId t : pointwise_operands(node)) {
    if (t == kNoTensor) continue;
    const Tensor& x = g_.tensor(t);
    if (produced[t]) {
      if (!is_row_value(t) || (!per_row_layout(x.shape) && x.elements() != 1))
        refuse_fused(ctx_, fmt::format("node '{}' ({}) computes a per-row value {} from '{}' {}, "
                                       "which is not one value per row",
                                       node.name, op_name(node.op), shape_to_string(result), x.name,
                                       shape_to_string(x.shape)));
      stage = std::max(stage, stage_of(t));
      continue;
    }
    if (auto lit = sig_.literals.find(t); lit != sig_.literals.end()) {
      row_literal_[t] = lit->second;
      continue;
    }
    const std::optional<Shape> broadcast = broadcast_shapes(x.shape, result);
    if (!broadcast || *broadcast != result)
      refuse_fused(ctx_, fmt::format("input '{}' {} of node '{}' ({}) does not broadcast to its "
                                     "per-row result {}",
                                     x.name, shape_to_string(x.shape), node.name, op_name(node.op),
                                     shape_to_string(result)));
    const std::string index = broadcast_offset(x.shape, result, "line");
    std::string name;
    for (const PerRowLoad& load : per_row_loads_)
      if (load.tensor == t && load.index == index) name = load.name;
    if (name.empty()) {
      name = fmt::format("x{}_row{}", sig_.inputs.at(t).substr(2), per_row_loads_.size());
      per_row_loads_.push_back({t, index, name});
    }
    per_row_operand_[{n, t}] = name;
  }
  stage_[y] = stage;
  row_value_[y] = new_row_name();
  row_pointwise_.push_back(n);
}

void RegionalWriter::analyze() {
  const FusionGroup& group = ctx_.group();
  if (group.mapping != ThreadMapping::WarpPerRow && group.mapping != ThreadMapping::BlockPerRow &&
      group.mapping != ThreadMapping::Flat)
    refuse_fused(ctx_, "unknown mapping");
  if (group.mapping != ThreadMapping::Flat && group.launch.block[0] % 32 != 0)
    refuse_fused(ctx_, fmt::format("a {} mapping needs whole warps, not blocks of {}",
                                   mapping_name(group.mapping), group.launch.block[0]));
  // The full shape: the highest-rank tensor of rows x row_length elements.
  const int64_t elements = rows_ * length_;
  full_ = regional_space_shape(g_, nodes_, rows_, length_);
  if (full_.empty() && elements != 1)
    refuse_fused(ctx_,
                 fmt::format("no tensor of the group has rows x row_length = {} x {} elements",
                             rows_, length_));
  // The row: the most trailing axes whose product is row_length.
  split_ = full_.size();
  int64_t product = 1;
  size_t best = full_.size();
  for (size_t d = full_.size(); d-- > 0;) {
    product *= full_[d];
    if (product == length_) best = d;
    if (product > length_ && length_ > 0) break;
  }
  if (length_ != 1 && best == full_.size())
    refuse_fused(ctx_, fmt::format("no trailing axes of {} hold rows of {} elements",
                                   shape_to_string(full_), length_));
  split_ = best;

  const std::vector<bool> produced = produced_by(g_, nodes_);
  // Inputs: row-invariant ones are row values loaded once per row.
  auto classify_input = [&](TensorId t) {
    if (produced[t] || stage_.count(t) || row_literal_.count(t)) return;
    stage_[t] = 0;
    if (auto lit = sig_.literals.find(t); lit != sig_.literals.end()) {
      row_literal_[t] = lit->second;
      return;
    }
    if (!broadcasts_to_full(g_.tensor(t).shape))
      refuse_fused(ctx_, fmt::format("input '{}' {} does not broadcast to the row space {}",
                                     g_.tensor(t).name, shape_to_string(g_.tensor(t).shape),
                                     shape_to_string(full_)));
    if (!varies_along_row(g_.tensor(t).shape)) {
      row_value_[t] = "x" + sig_.inputs.at(t).substr(2);
      row_inputs_.push_back(t);
    }
  };
  for (int32_t n : nodes_) {
    const Node& node = g_.nodes[n];
    if (is_pointwise(node) && per_row_layout(g_.tensor(node.outputs[0]).shape)) {
      add_per_row_node(n, produced);
      continue;
    }
    const std::vector<TensorId> operands =
        is_pointwise(node) ? pointwise_operands(node) : fused_value_inputs(node);
    for (TensorId t : operands)
      if (t != kNoTensor) classify_input(t);
    if (is_pointwise(node)) {
      const TensorId y = node.outputs[0];
      bool row = true;
      int stage = 0;
      for (TensorId t : operands) {
        if (t == kNoTensor) continue;
        stage = std::max(stage, stage_of(t));
        if (!is_row_value(t) && !row_literal_.count(t)) row = false;
        if (is_row_value(t) && !broadcasts_to_full(g_.tensor(t).shape))
          refuse_fused(ctx_, fmt::format("the per-row value '{}' {} does not broadcast along the "
                                         "rows of {}",
                                         g_.tensor(t).name, shape_to_string(g_.tensor(t).shape),
                                         shape_to_string(full_)));
        if (is_row_value(t) && !row && varies_along_row(g_.tensor(t).shape))
          refuse_fused(ctx_, fmt::format("the per-row value '{}' {} would broadcast along the row",
                                         g_.tensor(t).name, shape_to_string(g_.tensor(t).shape)));
      }
      stage_[y] = stage;
      if (row) {
        row_value_[y] = new_row_name();
        row_pointwise_.push_back(n);
        continue;
      }
      element_pointwise_.push_back(n);
      if (!broadcasts_to_full(g_.tensor(y).shape)) {
        refuse_fused(ctx_, fmt::format("'{}' {} does not broadcast to the row space {}",
                                       g_.tensor(y).name, shape_to_string(g_.tensor(y).shape),
                                       shape_to_string(full_)));
      }
      continue;
    }
    add_row_op(node);
  }
  // Outputs: full rows written in the last pass, per-row values once per row.
  for (const auto& [t, name] : sig_.outputs) {
    if (!produced[t]) continue; // another part's (Independent)
    const Tensor& tensor = g_.tensor(t);
    if (is_row_value(t)) {
      if (tensor.elements() != rows_)
        refuse_fused(ctx_, fmt::format("the per-row output '{}' {} does not hold one value per row",
                                       tensor.name, shape_to_string(tensor.shape)));
      row_outputs_.push_back(t);
    } else {
      if (tensor.elements() != rows_ * length_ || !broadcasts_to_full(tensor.shape))
        refuse_fused(ctx_, fmt::format("the output '{}' {} is neither full-row ({}) nor per-row",
                                       tensor.name, shape_to_string(tensor.shape),
                                       shape_to_string(full_)));
      element_outputs_.push_back(t);
      output_pass_ = std::max(output_pass_, stage_of(t));
    }
  }
  passes_ = output_pass_ + 1;
  for (const RowStat& s : stats_)
    passes_ = std::max(passes_, s.pass + 1);
  if (!element_outputs_.empty()) output_pass_ = passes_ - 1;

  // The row cache: full-row inputs read by more than one pass.
  CodeWriter scratch;
  std::map<TensorId, std::set<int>> reads;
  for (int p = 0; p < passes_; ++p)
    write_pass(p, scratch, &reads);
  int64_t bytes_per_element = 0, shared_bytes = 0;
  for (const auto& [t, passes] : reads) {
    if (passes.size() < 2) continue;
    cached_[t] = *passes.begin();
    bytes_per_element += dtype_size(g_.tensor(t).dtype);
  }
  if (cached_.empty()) return;
  cache_ = row_cache(group, length_, bytes_per_element);
  for (const auto& [t, first] : cached_) {
    const std::string& param = sig_.inputs.at(t);
    cache_name_[t] = "row" + param.substr(2);
    cache_offset_[t] = shared_bytes;
    shared_bytes += (length_ * dtype_size(g_.tensor(t).dtype) + 15) / 16 * 16;
  }
  if (cache_ == RowCache::Shared && (group.mapping != ThreadMapping::BlockPerRow ||
                                     group.launch.dynamic_shared_bytes < shared_bytes))
    cache_ = RowCache::None;
  if (cache_ == RowCache::None) {
    cached_.clear();
    cache_name_.clear();
  }
}

std::string RegionalWriter::summary() const {
  const char* who = ctx_.group().mapping == ThreadMapping::Flat         ? "a thread"
                    : ctx_.group().mapping == ThreadMapping::WarpPerRow ? "a warp"
                                                                        : "a block";
  std::string cache =
      cache_ == RowCache::Registers ? "the row inputs are kept in registers between passes"
      : cache_ == RowCache::Shared  ? "the row inputs are kept in shared memory between passes"
      : passes_ > 1                 ? "each pass reads its inputs from global memory"
                                    : "one pass over the row";
  return fmt::format("{} rows of {} elements, {} per row, {} pass{}; {}.", rows_, length_, who,
                     passes_, passes_ == 1 ? "" : "es", cache);
}

int64_t RegionalWriter::threads_per_row() const {
  switch (ctx_.group().mapping) {
  case ThreadMapping::Flat:
    return 1;
  case ThreadMapping::WarpPerRow:
    return 32;
  case ThreadMapping::BlockPerRow:
    return ctx_.group().launch.block[0];
  }
  return 1;
}

int64_t RegionalWriter::registers_per_thread() const {
  return std::max<int64_t>(1, (length_ + threads_per_row() - 1) / threads_per_row());
}

void RegionalWriter::open_lines(const BlockRange& blocks, CodeWriter& out) const {
  out.linef("const int64_t lines = {};  // rows", rows_);
  out.linef("const int64_t length = {};  // elements per row", length_);
  switch (ctx_.group().mapping) {
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
  if (cache_ == RowCache::Shared) {
    out.line("STITCH_DYNAMIC_SHARED(unsigned char, row_bytes);  // the cached rows");
    for (const auto& [t, name] : cache_name_)
      out.linef("{0}* const {1} = reinterpret_cast<{0}*>(row_bytes + {2});",
                ctype(g_.tensor(t).dtype, ctx_), name, cache_offset_.at(t));
  }
  out.open("for (int64_t line = first_line; line < lines; line += line_stride)");
  out.linef("const int64_t base = line * {};", length_);
}

void RegionalWriter::open_pass(CodeWriter& out) const {
  const ThreadMapping m = ctx_.group().mapping;
  const std::string start = m == ThreadMapping::Flat         ? "0"
                            : m == ThreadMapping::WarpPerRow ? "lane"
                                                             : "thread";
  const int64_t step = threads_per_row();
  if (cache_ == RowCache::Registers) {
    out.line("STITCH_UNROLL");
    out.open(fmt::format("for (int j = 0; j < {}; ++j)", registers_per_thread()));
    out.linef("const int64_t k = {};",
              m == ThreadMapping::Flat ? "j" : fmt::format("{} + j * {}", start, step));
    out.line("if (k >= length) break;");
    return;
  }
  out.open(fmt::format("for (int64_t k = {}; k < length; {})", start,
                       step == 1 ? "++k" : fmt::format("k += {}", step)));
}

std::string RegionalWriter::combine(const std::string& value, const std::string& functor) const {
  switch (ctx_.group().mapping) {
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
  switch (ctx_.group().mapping) {
  case ThreadMapping::Flat:
    return "";
  case ThreadMapping::WarpPerRow:
    return "if (lane == 0) ";
  case ThreadMapping::BlockPerRow:
    return "if (thread == 0) ";
  }
  return "";
}

void RegionalWriter::write_pass(int pass, CodeWriter& out,
                                std::map<TensorId, std::set<int>>* reads) {
  std::vector<const RowStat*> stats;
  for (const RowStat& s : stats_)
    if (s.pass == pass) stats.push_back(&s);
  const bool writes = pass == output_pass_;
  std::vector<std::string> what;
  for (const RowStat* s : stats)
    what.push_back(s->what);
  if (writes) what.push_back("the full-row outputs");
  out.comment(fmt::format("Pass {}: {}.", pass, fmt::join(what, "; ")));
  for (const RowStat* s : stats)
    out.linef("{} {} = {};", s->type, s->name, s->identity);
  open_pass(out);
  ValueScope scope(ctx_, element_pointwise_, out, [&](TensorId t) -> std::string {
    if (auto lit = row_literal_.find(t); lit != row_literal_.end()) return lit->second;
    if (auto row = row_value_.find(t); row != row_value_.end()) {
      STITCH_INTERNAL_CHECK(stage_of(t) <= pass,
                            "group {}: row value '{}' used in pass {} before "
                            "it exists",
                            ctx_.group().id, g_.tensor(t).name, pass);
      return row->second;
    }
    // An input that varies along the row: from global memory, or from the row cache after
    // the pass that read it first.
    const Tensor& tensor = g_.tensor(t);
    const std::string& param = sig_.inputs.at(t);
    const std::string name = "x" + param.substr(2);
    const std::string type = ctype(tensor.dtype, ctx_);
    if (reads != nullptr && tensor.elements() == rows_ * length_) (*reads)[t].insert(pass);
    auto cached = cached_.find(t);
    std::string cache_element;
    if (cached != cached_.end())
      cache_element = cache_name_.at(t) + (cache_ == RowCache::Registers ? "[j]" : "[k]");
    if (cached != cached_.end() && pass > cached->second) {
      out.linef("const {} {} = {};", type, name, cache_element);
      return name;
    }
    out.linef("const {} {} = {}[{}];", type, name, param, element_index(tensor.shape));
    if (cached != cached_.end()) out.linef("{} = {};", cache_element, name);
    return name;
  });
  for (const RowStat* s : stats)
    s->accumulate(scope);
  if (writes)
    for (TensorId t : element_outputs_)
      out.linef("{}[base + k] = {};", sig_.outputs.at(t), scope.value(t));
  out.close();
}

void RegionalWriter::write_row_values(int stage, CodeWriter& out) {
  for (int32_t n : row_pointwise_) {
    const Node& node = g_.nodes[n];
    const TensorId y = node.outputs[0];
    if (stage_of(y) != stage) continue;
    std::vector<std::string> values;
    for (TensorId t : pointwise_operands(node)) {
      if (t == kNoTensor)
        values.emplace_back();
      else if (auto lit = row_literal_.find(t); lit != row_literal_.end())
        values.push_back(lit->second);
      else if (auto load = per_row_operand_.find({n, t}); load != per_row_operand_.end())
        values.push_back(load->second);
      else
        values.push_back(row_value_.at(t));
    }
    out.comment(
        fmt::format("{} = '{}' ({}), one per row", row_value_.at(y), node.name, op_name(node.op)));
    out.linef("const {} {} = {};", ctype(g_.tensor(y).dtype, ctx_), row_value_.at(y),
              pointwise_expression(ctx_, node, values));
  }
}

void RegionalWriter::write(const BlockRange& blocks, CodeWriter& out) {
  open_lines(blocks, out);
  if (cache_ == RowCache::Registers)
    for (const auto& [t, name] : cache_name_)
      out.linef("{} {}[{}];  // this thread's elements of {}'s row",
                ctype(g_.tensor(t).dtype, ctx_), name, registers_per_thread(), sig_.inputs.at(t));
  for (TensorId t : row_inputs_)
    out.linef("const {} {} = {}[{}];  // one per row", ctype(g_.tensor(t).dtype, ctx_),
              row_value_.at(t), sig_.inputs.at(t), row_index(g_.tensor(t).shape));
  for (const PerRowLoad& load : per_row_loads_)
    out.linef("const {} {} = {}[{}];  // one per row", ctype(g_.tensor(load.tensor).dtype, ctx_),
              load.name, sig_.inputs.at(load.tensor), load.index);
  write_row_values(0, out);
  for (int p = 0; p < passes_; ++p) {
    write_pass(p, out, nullptr);
    for (const RowStat& s : stats_) {
      if (s.pass != p) continue;
      if (ctx_.group().mapping != ThreadMapping::Flat)
        out.linef("{} = {};", s.name, combine(s.name, s.functor));
      for (const std::string& line : s.after)
        out.line(line);
    }
    write_row_values(p + 1, out);
  }
  for (TensorId t : row_outputs_)
    out.linef("{}{}[line] = {};", leader(), sig_.outputs.at(t), row_value_.at(t));
  out.close();
}

} // namespace

void emit_regional_body(const GroupEmitContext& ctx, const FusedSignature& sig,
                        const std::vector<int32_t>& nodes, int64_t rows, int64_t row_length,
                        const BlockRange& blocks, CodeWriter& out) {
  RegionalWriter writer(ctx, sig, nodes, rows, row_length);
  writer.analyze();
  out.comment(writer.summary());
  writer.write(blocks, out);
}

void emit_fused_regional(const GroupEmitContext& ctx, CodeWriter& out) {
  const FusionGroup& group = ctx.group();
  FusedSignature sig = fused_signature(ctx, group.nodes);
  RegionalWriter writer(ctx, sig, group.nodes, group.rows, group.row_length);
  writer.analyze();
  const std::string kernel = fused_kernel_name(ctx);
  fused_kernel_banner(ctx, sig, group.nodes,
                      fmt::format("Fused group {} (Regional): {}", group.id, writer.summary()),
                      out);
  out.open(kernel_head(ctx, kernel, sig.params));
  writer.write(BlockRange{}, out);
  out.close();
  out.line();
  emit_launch(ctx, out, kernel, sig.args);
}

} // namespace stitch
