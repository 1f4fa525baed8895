// infer_node_dims: one symbolic rule per op, from its inputs' expressions to its outputs'.
#include "graph/infer_dims.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <optional>

#include "graph/constant.h"
#include "graph/op_params.h"

namespace stitch {

namespace {

// The largest number of elements a value carried as expressions may have (a shape is a few).
constexpr int64_t kMaxSymbolicValues = 64;

// A symbolic rule's view of its node: the inputs as expressions, the outputs to set.
class SymContext {
public:
  explicit SymContext(InferContext& ctx)
      : ctx(ctx), ranges(ctx.graph().symbol_ranges()), dims_(ctx.num_outputs()),
        values_(ctx.num_outputs()) {}

  InferContext& ctx;
  const SymbolRanges ranges;

  bool present(int i) const { return ctx.has_input(i); }
  SymShape in(int i) const { return ctx.input(i).sym_shape(); }
  int64_t rank(int i) const { return ctx.rank(i); }
  bool depends(int i) const {
    return present(i) && (ctx.input(i).is_dynamic() || !ctx.input(i).sym_values.empty());
  }
  // Whether any input's shape or value depends on the symbols (else the node is static).
  bool any_input_depends() const {
    for (int i = 0; i < ctx.num_inputs(); ++i)
      if (depends(i)) return true;
    return false;
  }

  // The elements of input i as expressions: its symbolic values, or its constant integers;
  // nullopt for any other input.
  std::optional<std::vector<DimExpr>> values(int i) const {
    if (!present(i)) return std::nullopt;
    const Tensor& t = ctx.input(i);
    if (!t.sym_values.empty()) return t.sym_values;
    if (!t.is_constant() || t.is_dynamic() || t.elements() > kMaxSymbolicValues)
      return std::nullopt;
    if (t.dtype != DType::Int64 && t.dtype != DType::Int32 && t.dtype != DType::Bool)
      return std::nullopt;
    std::vector<int64_t> v = constant_as_int64(t);
    return std::vector<DimExpr>(v.begin(), v.end());
  }
  // Input i's values, which the op needs as a shape operand.
  std::vector<DimExpr> required_values(int i, const char* what) const {
    std::optional<std::vector<DimExpr>> v = values(i);
    if (!v)
      ctx.fail("{} (input {}) is computed at run time from data, not from the shapes: the "
               "output shape cannot be known before the run",
               what, i);
    return *v;
  }
  // Input i's values, which must not depend on the symbols (an axis list, a repeat count).
  std::vector<int64_t> constant_values(int i, const char* what) const {
    std::vector<DimExpr> v = required_values(i, what);
    std::vector<int64_t> out;
    for (const DimExpr& e : v) {
      if (!e.is_constant())
        ctx.fail("{} (input {}) is {}, which depends on the symbolic dims; stitchc needs it "
                 "constant",
                 what, i, sym_shape_to_string(v));
      out.push_back(e.constant_value());
    }
    return out;
  }

  void set(int i, SymShape dims) {
    if (i < ctx.num_outputs()) dims_[i] = std::move(dims);
  }
  void set_values(int i, std::vector<DimExpr> values) {
    if (i < ctx.num_outputs()) values_[i] = std::move(values);
  }
  const std::optional<SymShape>& out_dims(int i) const { return dims_[i]; }
  const std::optional<std::vector<DimExpr>>& out_values(int i) const { return values_[i]; }

  DimExpr min(const DimExpr& a, const DimExpr& b) const { return DimExpr::min(a, b, &ranges); }
  DimExpr max(const DimExpr& a, const DimExpr& b) const { return DimExpr::max(a, b, &ranges); }
  DimBounds bounds(const DimExpr& e) const { return e.bounds(ranges); }

  [[noreturn]] void unsupported(const std::string& why) const {
    std::vector<std::string> shapes;
    for (int i = 0; i < ctx.num_inputs(); ++i)
      if (depends(i)) shapes.push_back(fmt::format("input {} {}", i, describe(i)));
    ctx.fail("{}; its inputs depend on the symbolic dims ({}); bind them with --dim NAME=VALUE",
             why, fmt::join(shapes, ", "));
  }

  std::string describe(int i) const {
    const Tensor& t = ctx.input(i);
    std::string s = sym_shape_to_string(t.sym_shape());
    if (!t.sym_values.empty()) s += " = " + sym_shape_to_string(t.sym_values);
    return s;
  }

private:
  std::vector<std::optional<SymShape>> dims_;
  std::vector<std::optional<std::vector<DimExpr>>> values_;
};

DimExpr product(const SymShape& s, size_t begin, size_t end) {
  DimExpr p = 1;
  for (size_t i = begin; i < end; ++i)
    p = p * s[i];
  return p;
}

// numpy broadcasting of two symbolic shapes: a dim broadcasts against an equal one or a 1.
SymShape broadcast(const SymContext& c, const SymShape& a, const SymShape& b) {
  size_t rank = std::max(a.size(), b.size());
  SymShape out(rank);
  for (size_t k = 0; k < rank; ++k) {
    const DimExpr one = 1;
    const DimExpr& x = k + a.size() >= rank ? a[k + a.size() - rank] : one;
    const DimExpr& y = k + b.size() >= rank ? b[k + b.size() - rank] : one;
    if (x == y || y == one)
      out[k] = x;
    else if (x == one)
      out[k] = y;
    else
      c.unsupported(fmt::format("dims {} and {} broadcast together only where they are equal "
                                "or one of them is 1, which their ranges do not make certain",
                                x.to_string(), y.to_string()));
  }
  return out;
}

// ---- values: shape computations ----

// Elementwise over values with numpy broadcasting of one-element operands.
template <typename F> std::optional<std::vector<DimExpr>> zip_values(const SymContext& c, F f) {
  std::vector<std::vector<DimExpr>> operands;
  size_t n = 1;
  for (int i = 0; i < c.ctx.num_inputs(); ++i) {
    std::optional<std::vector<DimExpr>> v = c.values(i);
    if (!v) return std::nullopt;
    if (v->size() != 1 && n != 1 && v->size() != n) return std::nullopt;
    if (v->size() != 1) n = v->size();
    operands.push_back(std::move(*v));
  }
  std::vector<DimExpr> out;
  for (size_t k = 0; k < n; ++k) {
    std::vector<DimExpr> args;
    for (const auto& v : operands)
      args.push_back(v.size() == 1 ? v[0] : v[k]);
    out.push_back(f(args));
  }
  return out;
}

// x / d for a shape computation: exact, or floored where x is never negative and d a
// positive constant (ONNX's integer Div truncates; for such operands that is the floor).
DimExpr divide(const SymContext& c, const DimExpr& x, const DimExpr& d) {
  if (std::optional<DimExpr> q = DimExpr::exact_div(x, d)) return *q;
  if (d.is_constant() && d.constant_value() > 0 && c.bounds(x).lo >= 0)
    return DimExpr::floor_div(x, d.constant_value());
  c.unsupported(fmt::format("it divides {} by {}, which stitchc cannot express", x.to_string(),
                            d.to_string()));
}

// Whether a == b for every value of the symbols (true), for none (false), or neither.
std::optional<bool> decide_equal(const SymContext& c, const DimExpr& a, const DimExpr& b) {
  DimBounds r = c.bounds(a - b);
  if (r.lo == 0 && r.hi == 0) return true;
  if (r.lo > 0 || r.hi < 0) return false;
  return std::nullopt;
}

std::optional<bool> decide_less(const SymContext& c, const DimExpr& a, const DimExpr& b,
                                bool or_equal) {
  DimBounds r = c.bounds(a - b);
  if (or_equal ? r.hi <= 0 : r.hi < 0) return true;
  if (or_equal ? r.lo > 0 : r.lo >= 0) return false;
  return std::nullopt;
}

// The values of an arithmetic or comparison node over shape values; nullopt where an operand
// is not a shape value. Comparisons give 1 or 0.
std::optional<std::vector<DimExpr>> arithmetic_values(const SymContext& c) {
  OpKind op = c.ctx.op();
  auto decided = [&](std::optional<bool> b, const DimExpr& x, const DimExpr& y) -> DimExpr {
    if (!b)
      c.unsupported(fmt::format("it compares {} with {}, and the symbols' ranges do not decide "
                                "the result",
                                x.to_string(), y.to_string()));
    return *b ? 1 : 0;
  };
  return zip_values(c, [&](const std::vector<DimExpr>& a) -> DimExpr {
    switch (op) {
    case OpKind::Add:
    case OpKind::Sum:
      return std::accumulate(a.begin() + 1, a.end(), a[0]);
    case OpKind::Sub:
      return a[0] - a[1];
    case OpKind::Mul:
      return a[0] * a[1];
    case OpKind::Div:
      return divide(c, a[0], a[1]);
    case OpKind::Mod:
      // By a positive constant: a - d * floor(a / d), the integer Mod's (fmod 0) remainder of
      // the divisor's sign at every value; fmod 1's takes the dividend's sign, the same where
      // the dividend is never negative (tried at every value of one symbol, else its bounds).
      if (a[1].is_constant() && a[1].constant_value() > 0 &&
          (c.ctx.attr_int("fmod", 0) == 0 || c.bounds(a[0]).lo >= 0 ||
           a[0].every_value(c.ranges, [&](const SymbolValues& v) { return a[0].evaluate(v) >= 0; })
               .value_or(false)))
        return DimExpr::mod(a[0], a[1].constant_value());
      c.unsupported("it takes a remainder stitchc cannot express");
    case OpKind::Max:
      return std::accumulate(a.begin() + 1, a.end(), a[0],
                             [&](const DimExpr& x, const DimExpr& y) { return c.max(x, y); });
    case OpKind::Min:
      return std::accumulate(a.begin() + 1, a.end(), a[0],
                             [&](const DimExpr& x, const DimExpr& y) { return c.min(x, y); });
    case OpKind::Equal:
      return decided(decide_equal(c, a[0], a[1]), a[0], a[1]);
    case OpKind::Less:
      return decided(decide_less(c, a[0], a[1], false), a[0], a[1]);
    case OpKind::LessOrEqual:
      return decided(decide_less(c, a[0], a[1], true), a[0], a[1]);
    case OpKind::Greater:
      return decided(decide_less(c, a[1], a[0], false), a[0], a[1]);
    case OpKind::GreaterOrEqual:
      return decided(decide_less(c, a[1], a[0], true), a[0], a[1]);
    case OpKind::Where:
      return a[0].constant_value() != 0 ? a[1] : a[2];
    default:
      c.unsupported(fmt::format("{} over shape values is not computed symbolically", op_name(op)));
    }
  });
}

// ---- rules ----

void same_as_input(SymContext& c) { c.set(0, c.in(0)); }

void broadcast_all(SymContext& c) {
  SymShape out;
  for (int i = 0; i < c.ctx.num_inputs(); ++i)
    if (c.present(i)) out = broadcast(c, out, c.in(i));
  c.set(0, out);
  bool shape_value = true;
  for (int i = 0; i < c.ctx.num_inputs(); ++i)
    shape_value = shape_value && (!c.depends(i) || !c.ctx.input(i).sym_values.empty());
  if (c.ctx.op() == OpKind::Where && !c.ctx.input(0).is_constant()) shape_value = false;
  if (shape_value && is_static(out)) {
    std::optional<std::vector<DimExpr>> v = arithmetic_values(c);
    if (v) c.set_values(0, *v);
  }
}

void layer_norm_like(SymContext& c) {
  SymShape x = c.in(0);
  c.set(0, x);
  int64_t axis = c.ctx.normalize_axis(c.ctx.attr_int("axis", -1), c.rank(0));
  SymShape stats = x;
  for (size_t d = static_cast<size_t>(axis); d < stats.size(); ++d)
    stats[d] = 1;
  c.set(1, stats);
  c.set(2, stats);
}

void dropout(SymContext& c) {
  c.set(0, c.in(0));
  c.set(1, c.in(0));
}

void reduce(SymContext& c) {
  ReduceParams p = read_reduce_params(c.ctx);
  SymShape in = c.in(0);
  if (p.noop) return c.set(0, in);
  SymShape out;
  for (size_t d = 0; d < in.size(); ++d) {
    if (!p.reduced[d])
      out.push_back(in[d]);
    else if (p.keepdims)
      out.push_back(1);
  }
  c.set(0, out);
}

void arg_reduce(SymContext& c) {
  SymShape in = c.in(0);
  int64_t axis = c.ctx.normalize_axis(c.ctx.attr_int("axis", 0), c.rank(0));
  bool keepdims = c.ctx.attr_flag("keepdims", true);
  SymShape out;
  for (size_t d = 0; d < in.size(); ++d) {
    if (static_cast<int64_t>(d) != axis)
      out.push_back(in[d]);
    else if (keepdims)
      out.push_back(1);
  }
  c.set(0, out);
}

void same_dim(const SymContext& c, const DimExpr& a, const DimExpr& b, const char* what) {
  if (a != b)
    c.unsupported(fmt::format("its {} are {} and {}, equal only for some values of the "
                              "symbols",
                              what, a.to_string(), b.to_string()));
}

void matmul(SymContext& c) {
  SymShape a = c.in(0), b = c.in(1);
  const bool a_vector = a.size() == 1, b_vector = b.size() == 1;
  if (a_vector) a.insert(a.begin(), DimExpr(1));
  if (b_vector) b.push_back(1);
  same_dim(c, a.back(), b[b.size() - 2], "inner dims");
  SymShape batch = broadcast(c, SymShape(a.begin(), a.end() - 2), SymShape(b.begin(), b.end() - 2));
  if (!a_vector) batch.push_back(a[a.size() - 2]);
  if (!b_vector) batch.push_back(b.back());
  c.set(0, batch);
}

void gemm(SymContext& c) {
  SymShape a = c.in(0), b = c.in(1);
  if (c.ctx.attr_flag("transA", false)) std::swap(a[0], a[1]);
  if (c.ctx.attr_flag("transB", false)) std::swap(b[0], b[1]);
  same_dim(c, a[1], b[0], "inner dims");
  SymShape out{a[0], b[1]};
  if (c.present(2)) broadcast(c, out, c.in(2)); // C broadcasts to the output
  c.set(0, out);
}

void transpose(SymContext& c) {
  SymShape in = c.in(0), out;
  for (int64_t p : read_perm(c.ctx))
    out.push_back(in[p]);
  c.set(0, out);
}

void pass_values(SymContext& c) {
  if (!c.ctx.input(0).sym_values.empty()) c.set_values(0, c.ctx.input(0).sym_values);
}

void squeeze(SymContext& c) {
  SymShape in = c.in(0);
  std::vector<int64_t> axes;
  if (c.ctx.opset() < 13)
    axes = c.ctx.attr_ints("axes");
  else if (c.present(1))
    axes = c.constant_values(1, "axes");
  std::vector<bool> squeezed(in.size(), false);
  if (axes.empty()) {
    for (size_t d = 0; d < in.size(); ++d) {
      if (!in[d].is_constant() && c.bounds(in[d]).lo <= 1)
        c.unsupported(fmt::format("without axes it squeezes the dims that are 1, and dim {} "
                                  "({}) may be 1 or not",
                                  d, in[d].to_string()));
      squeezed[d] = in[d] == DimExpr(1);
    }
  }
  for (int64_t a : c.ctx.normalize_axes(axes, c.rank(0), "axes")) {
    if (in[a] != DimExpr(1))
      c.unsupported(fmt::format("it squeezes axis {} of size {}, which is 1 only for some "
                                "values of the symbols",
                                a, in[a].to_string()));
    squeezed[a] = true;
  }
  SymShape out;
  for (size_t d = 0; d < in.size(); ++d)
    if (!squeezed[d]) out.push_back(in[d]);
  c.set(0, out);
  pass_values(c);
}

void unsqueeze(SymContext& c) {
  std::vector<int64_t> axes =
      c.ctx.opset() < 13 ? c.ctx.req_ints("axes") : c.constant_values(1, "axes");
  SymShape in = c.in(0);
  int64_t out_rank = c.rank(0) + static_cast<int64_t>(axes.size());
  std::vector<bool> inserted(static_cast<size_t>(out_rank), false);
  for (int64_t a : c.ctx.normalize_axes(axes, out_rank, "axes"))
    inserted[a] = true;
  SymShape out;
  size_t next = 0;
  for (int64_t d = 0; d < out_rank; ++d)
    out.push_back(inserted[d] ? DimExpr(1) : in[next++]);
  c.set(0, out);
  pass_values(c);
}

void flatten(SymContext& c) {
  SymShape in = c.in(0);
  int64_t axis = c.ctx.attr_int("axis", 1);
  if (axis < 0) axis += c.rank(0);
  c.set(0, {product(in, 0, axis), product(in, axis, in.size())});
  pass_values(c);
}

// Whether `e` is 0 wherever `d` is, d being a constant times a product of distinct symbols
// (zero exactly where one of them is): each of those that may be 0 is a factor of every term
// of e. False where d has another form.
bool zero_with(const DimExpr& d, const DimExpr& e, const SymbolRanges& ranges) {
  DimExpr symbols_product = 1;
  for (const std::string& s : d.symbols())
    symbols_product = symbols_product * DimExpr::symbol(s);
  const std::optional<DimExpr> coefficient = DimExpr::exact_div(d, symbols_product);
  if (!coefficient || !coefficient->is_constant() || coefficient->constant_value() == 0)
    return false;
  for (const std::string& s : d.symbols()) {
    auto range = ranges.find(s);
    if (range != ranges.end() && range->second.lo > 0) continue;
    if (!DimExpr::exact_div(e, DimExpr::symbol(s))) return false;
  }
  return true;
}

void reshape(SymContext& c) {
  SymShape in = c.in(0);
  std::vector<DimExpr> requested = c.required_values(1, "the target shape");
  const bool allowzero = c.ctx.opset() >= 14 && c.ctx.attr_int("allowzero", 0) != 0;
  SymShape out;
  int inferred = -1;
  DimExpr known = 1;
  for (size_t i = 0; i < requested.size(); ++i) {
    DimExpr d = requested[i];
    if (d.is_constant() && d.constant_value() == 0 && !allowzero) {
      d = in[i];
    } else if (d.is_constant() && d.constant_value() == -1) {
      inferred = static_cast<int>(i);
      out.push_back(1);
      continue;
    } else if (!d.is_constant() && c.bounds(d).lo < 0) {
      c.unsupported(fmt::format("its target shape {} has the dim {}, which may be negative",
                                sym_shape_to_string(requested), d.to_string()));
    } else if (!d.is_constant() && c.bounds(d).lo == 0 && !allowzero &&
               (i >= in.size() || !zero_with(d, in[i], c.ranges))) {
      // Where d is 0 the target copies the input's dim i: d stands for it only where that
      // dim is 0 too.
      c.unsupported(
          fmt::format("its target shape {} has the dim {}, which may be 0 and then "
                      "copies the input's dim {}{}",
                      sym_shape_to_string(requested), d.to_string(), i,
                      i < in.size() ? " (" + in[i].to_string() + ")" : ", which it lacks"));
    }
    known = known * d;
    out.push_back(d);
  }
  DimExpr total = product(in, 0, in.size());
  if (inferred >= 0) {
    if (c.bounds(known).lo <= 0)
      c.unsupported(fmt::format("its target shape {} infers the -1 from the other dims, whose "
                                "product {} may be 0",
                                sym_shape_to_string(requested), known.to_string()));
    std::optional<DimExpr> q = DimExpr::exact_div(total, known);
    if (!q)
      c.unsupported(fmt::format("its -1 is {} elements over {}, which stitchc cannot divide "
                                "symbolically",
                                total.to_string(), known.to_string()));
    out[inferred] = *q;
  } else if (known != total) {
    c.unsupported(fmt::format("it reshapes {} elements to {}, equal only for some values of "
                              "the symbols",
                              total.to_string(), known.to_string()));
  }
  c.set(0, out);
  pass_values(c);
}

void concat(SymContext& c) {
  int64_t axis = c.ctx.normalize_axis(c.ctx.req_int("axis"), c.rank(0));
  SymShape out = c.in(0);
  for (int i = 1; i < c.ctx.num_inputs(); ++i) {
    SymShape s = c.in(i);
    for (size_t d = 0; d < s.size(); ++d)
      if (static_cast<int64_t>(d) != axis) same_dim(c, out[d], s[d], "dims outside the axis");
    out[axis] = out[axis] + s[axis];
  }
  c.set(0, out);
  if (c.rank(0) == 1) {
    std::vector<DimExpr> values;
    for (int i = 0; i < c.ctx.num_inputs(); ++i) {
      std::optional<std::vector<DimExpr>> v = c.values(i);
      if (!v) return;
      values.insert(values.end(), v->begin(), v->end());
    }
    c.set_values(0, values);
  }
}

// Slice's [start, end) on a dim of size d with step: the ONNX clamping, as expressions.
DimExpr slice_length(const SymContext& c, const DimExpr& d, DimExpr start, DimExpr end,
                     int64_t step) {
  auto resolve = [&](const DimExpr& v, int64_t lo_clamp, const DimExpr& hi_clamp) {
    // A negative constant counts from the end; every index is clamped to [lo_clamp, hi_clamp].
    DimExpr x = v;
    if (v.is_constant() && v.constant_value() < 0) {
      // Before the first element: lo_clamp, or on an empty axis with a negative step -1.
      if (v.constant_value() <= -(int64_t{1} << 62)) return c.min(DimExpr(lo_clamp), hi_clamp);
      x = d + v;
    } else if (v.is_constant() && v.constant_value() >= (int64_t{1} << 62)) {
      return hi_clamp;
    } else if (!v.is_constant() && c.bounds(v).lo < 0) {
      c.unsupported(fmt::format("its slice bound {} may be negative", v.to_string()));
    }
    // Clamped below, then above: on an empty axis a negative step's bounds both become -1.
    if (x == hi_clamp) return hi_clamp;
    return c.min(c.max(DimExpr(lo_clamp), x), hi_clamp);
  };
  if (step > 0) {
    DimExpr s = resolve(start, 0, d), e = resolve(end, 0, d);
    return DimExpr::ceil_div(c.max(DimExpr(0), e - s), step);
  }
  DimExpr s = resolve(start, 0, d - 1), e = resolve(end, -1, d - 1);
  return DimExpr::ceil_div(c.max(DimExpr(0), s - e), -step);
}

void slice(SymContext& c) {
  SymShape in = c.in(0);
  std::vector<DimExpr> starts, ends;
  std::vector<int64_t> axes, steps;
  if (c.ctx.opset() < 10) {
    for (int64_t v : c.ctx.req_ints("starts"))
      starts.push_back(v);
    for (int64_t v : c.ctx.req_ints("ends"))
      ends.push_back(v);
    axes = c.ctx.attr_ints("axes");
  } else {
    starts = c.required_values(1, "starts");
    ends = c.required_values(2, "ends");
    if (c.present(3)) axes = c.constant_values(3, "axes");
    if (c.present(4)) steps = c.constant_values(4, "steps");
  }
  if (axes.empty())
    for (size_t i = 0; i < starts.size(); ++i)
      axes.push_back(static_cast<int64_t>(i));
  if (steps.empty()) steps.assign(starts.size(), 1);
  axes = c.ctx.normalize_axes(axes, c.rank(0), "axes");
  SymShape out = in;
  for (size_t i = 0; i < axes.size(); ++i)
    out[axes[i]] = slice_length(c, in[axes[i]], starts[i], ends[i], steps[i]);
  c.set(0, out);
  // A slice of a shape value by constant bounds: the selected elements. (Bounds computed from
  // the symbols may keep the length and still move the elements: then the slice's value is
  // no shape value, and is refused if it was folded.)
  bool constant_bounds = true;
  for (int i = 1; i < c.ctx.num_inputs(); ++i)
    constant_bounds = constant_bounds && !c.depends(i);
  if (c.rank(0) == 1 && constant_bounds && !c.ctx.input(0).sym_values.empty() &&
      !c.ctx.input(0).is_dynamic()) {
    std::vector<DimExpr> v = c.ctx.input(0).sym_values;
    for (const SliceAxis& s : read_slice_params(c.ctx)) {
      std::vector<DimExpr> picked;
      for (int64_t k = 0; k < s.length; ++k)
        picked.push_back(v[static_cast<size_t>(s.start + k * s.step)]);
      v = picked;
    }
    c.set_values(0, v);
  }
}

void split(SymContext& c) {
  SymShape in = c.in(0);
  int64_t axis = c.ctx.normalize_axis(c.ctx.attr_int("axis", 0), c.rank(0));
  int64_t outputs = c.ctx.num_outputs();
  const DimExpr& dim = in[axis];
  std::vector<DimExpr> sizes;
  if (c.ctx.opset() < 13) {
    for (int64_t v : c.ctx.attr_ints("split"))
      sizes.push_back(v);
  } else if (c.present(1)) {
    sizes = c.required_values(1, "split");
  }
  if (sizes.empty()) {
    if (c.ctx.opset() >= 18 && c.ctx.has_attr("num_outputs")) {
      DimExpr chunk = DimExpr::ceil_div(dim, outputs);
      sizes.assign(static_cast<size_t>(outputs - 1), chunk);
      sizes.push_back(dim - chunk * DimExpr(outputs - 1));
      if (c.bounds(sizes.back()).lo < 0)
        c.unsupported(fmt::format("its last part, {}, is negative for some values of the symbols",
                                  sizes.back().to_string()));
    } else {
      std::optional<DimExpr> part = DimExpr::exact_div(dim, DimExpr(outputs));
      if (!part)
        c.unsupported(fmt::format("it splits {} evenly into {}, which holds only for some "
                                  "values of the symbols",
                                  dim.to_string(), outputs));
      sizes.assign(static_cast<size_t>(outputs), *part);
    }
  }
  DimExpr sum = 0;
  for (const DimExpr& s : sizes)
    sum = sum + s;
  same_dim(c, sum, dim, "split sizes' sum and axis");
  for (int64_t i = 0; i < outputs; ++i) {
    SymShape out = in;
    out[axis] = sizes[i];
    c.set(static_cast<int>(i), out);
  }
}

void gather(SymContext& c) {
  SymShape data = c.in(0), indices = c.in(1);
  int64_t axis = c.ctx.normalize_axis(c.ctx.attr_int("axis", 0), c.rank(0));
  SymShape out(data.begin(), data.begin() + axis);
  out.insert(out.end(), indices.begin(), indices.end());
  out.insert(out.end(), data.begin() + axis + 1, data.end());
  c.set(0, out);
  // Gather of a shape value with constant indices: the picked elements.
  const Tensor& d = c.ctx.input(0);
  if (c.rank(0) == 1 && !d.sym_values.empty() && c.ctx.input(1).is_constant() && !c.depends(1)) {
    std::vector<DimExpr> picked;
    for (int64_t k : read_const_indices(c.ctx, 1, 0, d.shape[0], "indices"))
      picked.push_back(d.sym_values[static_cast<size_t>(k)]);
    c.set_values(0, picked);
  }
}

void cast(SymContext& c) {
  c.set(0, c.in(0));
  const Tensor& out = c.ctx.graph().tensor(c.ctx.node().outputs[0]);
  if (!c.ctx.input(0).sym_values.empty() &&
      (out.dtype == DType::Int64 || out.dtype == DType::Int32))
    c.set_values(0, c.ctx.input(0).sym_values);
}

void identity(SymContext& c) {
  c.set(0, c.in(0));
  pass_values(c);
}

void expand(SymContext& c) {
  std::vector<DimExpr> target = c.required_values(1, "the target shape");
  c.set(0, broadcast(c, c.in(0), target));
}

void tile(SymContext& c) {
  SymShape in = c.in(0);
  std::vector<DimExpr> repeats = c.required_values(1, "repeats");
  for (size_t d = 0; d < in.size(); ++d)
    in[d] = in[d] * repeats[d];
  c.set(0, in);
}

void shape(SymContext& c) {
  DimRange r = read_shape_range(c.ctx);
  SymShape in = c.in(0);
  c.set(0, {DimExpr(r.end - r.start)});
  c.set_values(0, std::vector<DimExpr>(in.begin() + r.start, in.begin() + r.end));
}

void size(SymContext& c) {
  SymShape in = c.in(0);
  c.set(0, {});
  c.set_values(0, {product(in, 0, in.size())});
}

void constant_of_shape(SymContext& c) { c.set(0, c.required_values(0, "the shape")); }

void range(SymContext& c) {
  if (c.ctx.dtype(0) != DType::Int64 && c.ctx.dtype(0) != DType::Int32)
    c.unsupported("a floating-point Range over symbolic bounds has no exact element count");
  DimExpr start = c.required_values(0, "start")[0], limit = c.required_values(1, "limit")[0];
  std::vector<int64_t> delta = c.constant_values(2, "delta");
  if (delta[0] == 0) c.ctx.fail("delta must not be 0");
  DimExpr count = delta[0] > 0 ? DimExpr::ceil_div(limit - start, delta[0])
                               : DimExpr::ceil_div(start - limit, -delta[0]);
  c.set(0, {c.max(DimExpr(0), count)});
}

// Conv, ConvTranspose, pooling, and the other ops whose batch dim passes through: only the
// leading dim of input 0 may be symbolic (the spatial dims and the other inputs are static).
void batch_only(SymContext& c) {
  SymShape x = c.in(0);
  for (int i = 0; i < c.ctx.num_inputs(); ++i)
    if (c.depends(i) && (i != 0 || !is_static(SymShape(x.begin() + 1, x.end()))))
      c.unsupported(fmt::format("{} takes symbolic dims in its leading (batch) dim only",
                                op_name(c.ctx.op())));
  for (int k = 0; k < c.ctx.num_outputs(); ++k) {
    if (!c.ctx.has_output(k)) continue;
    const Tensor& out = c.ctx.graph().tensor(c.ctx.node().outputs[k]);
    SymShape dims = sym_shape_of(out.shape);
    if (dims.empty() || out.shape[0] != c.ctx.shape(0)[0])
      c.unsupported(fmt::format("{} does not keep the batch dim", op_name(c.ctx.op())));
    dims[0] = x[0];
    c.set(k, dims);
  }
}

// The extent of spatial axis i of a forward window (Conv, MaxPool, AveragePool) sliding over
// `in`, as rule_conv and rule_pool compute it at fixed sizes (shape_rules_compute.cpp's
// window_output). SAME gives ceil(in / stride) windows; at a stride above 1 its padding depends
// on the size, and the window kernels and library calls pad by the run's (window_pads over
// expressions: a Conv through a padded copy of X, ConvSpec's pre_pad_begin; the window
// kernels by WindowGeometry's pad_begin_dims).
DimExpr window_extent(const SymContext& c, const WindowParams& w, size_t i, const DimExpr& in,
                      bool ceil_mode) {
  const int64_t extent = (w.kernel[i] - 1) * w.dilations[i] + 1, stride = w.strides[i];
  if (w.auto_pad == AutoPad::SameUpper || w.auto_pad == AutoPad::SameLower) {
    if (stride == 1) return in;
    if (c.bounds(in).lo < 1)
      c.unsupported(fmt::format("auto_pad SAME over spatial axis {} ({}), which may be empty for "
                                "some values of the symbols",
                                i, in.to_string()));
    return DimExpr::ceil_div(in, stride);
  }
  const AxisPads pads = window_pads(w, i, 0, 0); // NOTSET or VALID: the sizes are not used
  const DimExpr span = in + (pads.begin + pads.end - extent);
  if (c.bounds(span).lo < 0)
    c.unsupported(fmt::format("spatial axis {} ({}, padded by {} and {}) may be smaller than the "
                              "kernel extent {} for some values of the symbols",
                              i, in.to_string(), pads.begin, pads.end, extent));
  if (!ceil_mode) return DimExpr::floor_div(span, stride) + 1;
  // A partial last window counts unless it would start in the end padding: at most as many
  // windows as starts inside the input and the begin padding.
  if (pads.end >= extent)
    c.unsupported(fmt::format("ceil_mode with an end pad of {} on spatial axis {}, not less than "
                              "the kernel extent {}",
                              pads.end, i, extent));
  return c.min(DimExpr::ceil_div(span, stride) + 1, DimExpr::ceil_div(in + pads.begin, stride));
}

// Conv, ConvTranspose and the pooling ops over symbolic image and spatial axes: the output's
// spatial extents as expressions of the input's (window_extent; ConvTranspose's
// stride * (in - 1) + output_padding + dilated kernel - pads, or in * stride with SAME). The
// channels, the weights and the bias are fixed.
void spatial_window(SymContext& c) {
  const SymShape x = c.in(0);
  if (x.size() < 3 || is_static(SymShape(x.begin() + 2, x.end()))) return batch_only(c);
  const OpKind op = c.ctx.op();
  const std::string name(op_name(op));
  for (int i = 1; i < c.ctx.num_inputs(); ++i)
    if (c.depends(i))
      c.unsupported(
          fmt::format("{} takes symbolic dims in X only (its weights and bias fixed)", name));
  if (!x[1].is_constant()) c.unsupported(fmt::format("{} over symbolic channels", name));
  const Shape planned = c.ctx.graph().tensor(c.ctx.node().outputs[0]).shape;
  SymShape out = {x[0], DimExpr(planned[1])};
  const size_t n = x.size() - 2;
  if (op == OpKind::GlobalAveragePool || op == OpKind::GlobalMaxPool) {
    out.resize(x.size(), DimExpr(1));
  } else {
    const bool conv = op == OpKind::Conv || op == OpKind::ConvTranspose;
    std::vector<int64_t> kernel =
        conv ? std::vector<int64_t>(c.ctx.shape(1).begin() + 2, c.ctx.shape(1).end())
             : c.ctx.req_ints("kernel_shape");
    const WindowParams w = read_window_params(c.ctx, kernel);
    if (op == OpKind::ConvTranspose) {
      if (!c.ctx.attr_ints("output_shape").empty())
        c.unsupported("ConvTranspose with a fixed output_shape over symbolic spatial axes");
      const std::vector<int64_t> output_padding =
          c.ctx.attr_ints("output_padding", std::vector<int64_t>(n, 0));
      for (size_t i = 0; i < n; ++i) {
        const DimExpr& in = x[i + 2];
        if (w.auto_pad == AutoPad::SameUpper || w.auto_pad == AutoPad::SameLower) {
          out.push_back(in * w.strides[i]);
          continue;
        }
        const int64_t pads = w.auto_pad == AutoPad::Valid ? 0 : w.pads[i] + w.pads[i + n];
        const int64_t extent = (w.kernel[i] - 1) * w.dilations[i] + 1;
        out.push_back((in - 1) * w.strides[i] + (output_padding[i] + extent - pads));
        if (c.bounds(out.back()).lo < 0)
          c.unsupported(fmt::format("ConvTranspose's spatial axis {} ({}) may be negative for "
                                    "some values of the symbols",
                                    i, out.back().to_string()));
      }
    } else {
      const bool ceil_mode = !conv && c.ctx.attr_flag("ceil_mode", false);
      for (size_t i = 0; i < n; ++i)
        out.push_back(window_extent(c, w, i, x[i + 2], ceil_mode));
    }
  }
  c.set(0, out);
  if (op == OpKind::MaxPool) c.set(1, out); // Indices
}

// DepthToSpace and SpaceToDepth over symbolic images and spatial extents (the channels
// fixed): DepthToSpace multiplies the extents by the block size; SpaceToDepth divides them, which
// needs extents that are multiples of it at every value of the symbols (2*k, say).
void depth_space(SymContext& c) {
  const SymShape x = c.in(0);
  if (x.size() != 4 || !x[1].is_constant()) return batch_only(c);
  const int64_t b = c.ctx.req_int("blocksize");
  const int64_t channels = x[1].constant_value();
  if (c.ctx.op() == OpKind::DepthToSpace) {
    c.set(0, {x[0], DimExpr(channels / (b * b)), x[2] * b, x[3] * b});
    return;
  }
  SymShape out = {x[0], DimExpr(channels * b * b)};
  for (size_t d = 2; d < 4; ++d) {
    std::optional<DimExpr> q = DimExpr::exact_div(x[d], DimExpr(b));
    if (!q)
      c.unsupported(fmt::format("SpaceToDepth needs spatial axis {} ({}) to be a multiple of the "
                                "block size {} at every value of the symbols",
                                d - 2, x[d].to_string(), b));
    out.push_back(*q);
  }
  c.set(0, out);
}

// Pad: each axis grows by its pads. Pads computed from the symbolic dims (a length padded to a
// multiple of a block: (block - length % block) % block) are the run's, never negative (a
// crop's window would be the run's too); reflect and edge padding also keep them below the
// axis's extent. Constant pads may crop, as long as every value of the symbols leaves elements.
void pad(SymContext& c) {
  const SymShape x = c.in(0);
  for (int i = 2; i < c.ctx.num_inputs(); ++i)
    if (c.depends(i))
      c.unsupported("Pad with a fill value or axes computed from the symbolic dims");
  const std::vector<DimExpr> pads = read_sym_pads_per_axis(c.ctx);
  const std::string mode = c.ctx.attr_string("mode", "constant");
  const bool constant_mode = mode == "constant";
  // Whether `e` is never negative: by its bounds, else at every value of its one symbol.
  auto never_negative = [&](const DimExpr& e) {
    return c.bounds(e).lo >= 0 || e.every_value(c.ranges, [&](const SymbolValues& v) {
                                     return e.evaluate(v) >= 0;
                                   }).value_or(false);
  };
  SymShape out = x;
  for (size_t d = 0; d < x.size(); ++d) {
    const DimExpr &begin = pads[d], &end = pads[d + x.size()];
    out[d] = x[d] + begin + end;
    if (!begin.is_constant() || !end.is_constant()) {
      for (const DimExpr* p : {&begin, &end}) {
        if (!never_negative(*p))
          c.unsupported(fmt::format("its pad {} of axis {}, computed from the symbolic dims, may "
                                    "be negative (a crop of the run's)",
                                    p->to_string(), d));
        if (mode == "reflect" && !never_negative(x[d] - 1 - *p))
          c.unsupported(fmt::format("its reflect pad {} of axis {} may reach the axis's "
                                    "extent {}",
                                    p->to_string(), d, x[d].to_string()));
      }
      continue;
    }
    const int64_t b = begin.constant_value(), e = end.constant_value();
    if (x[d].is_constant() || (b == 0 && e == 0)) continue;
    const DimExpr kept = x[d] - (std::max<int64_t>(0, -b) + std::max<int64_t>(0, -e));
    if (c.bounds(kept).lo < (constant_mode ? 0 : 1))
      c.unsupported(fmt::format("its pads [{}, {}] may crop axis {} ({}) to {} elements for "
                                "some values of the symbols",
                                b, e, d, x[d].to_string(), constant_mode ? "fewer than no" : "no"));
  }
  c.set(0, out);
}

// floor(in * scale) as an expression for `in` of at most `most`: floor(in * p / 2^k), the scale
// being the fraction p / 2^k (every float32 scale is one: 2, 0.5, 1.5, 0.3 as 10066330 / 2^25).
// The shape rule's double product in * scale is exact, and so the same, while in * p stays
// below 2^53; nullopt where it may not (or for a scale needing 2^k beyond 2^62).
std::optional<DimExpr> scaled_extent(const DimExpr& in, double scale, int64_t most) {
  for (int k = 0; k <= 62; ++k) {
    const auto q = int64_t{1} << k;
    const double p = scale * static_cast<double>(q);
    if (p != std::floor(p)) continue;
    if (!(p < 9.0e15) || static_cast<double>(std::max<int64_t>(most, 1)) * p >= 9007199254740992.0)
      return std::nullopt;
    return DimExpr::floor_div(in * static_cast<int64_t>(p), q);
  }
  return std::nullopt;
}

// Resize over symbolic dims: each resized axis's extent as an expression. By scales (constant):
// floor(in * scale) as floor(in * p / 2^k) (scaled_extent); the kernel maps coordinates by that
// scale. By sizes, constant or computed from the symbols (a `Shape` of another tensor): the
// sizes, the kernel's scale being out / in of the run (stretching only). The roi must be
// constant, tf_crop_and_resize is refused, and no antialiased filter is widened by a run's
// scale (its taps would be the run's).
void resize(SymContext& c) {
  const SymShape in = c.in(0);
  auto refuse = [&](const std::string& why) {
    c.unsupported(fmt::format("Resize over symbolic dims {}", why));
  };
  const int opset = c.ctx.opset();
  const int scales_input = opset < 11 ? 1 : 2, sizes_input = opset < 11 ? -1 : 3;
  for (int i = 1; i < c.ctx.num_inputs(); ++i)
    if (i != sizes_input && c.depends(i)) refuse("needs a constant roi and constant scales");
  std::vector<int64_t> axes;
  for (int64_t d = 0; d < c.rank(0); ++d)
    axes.push_back(d);
  std::string policy = "stretch";
  if (opset >= 18) {
    axes = c.ctx.normalize_axes(c.ctx.attr_ints("axes", axes), c.rank(0), "axes");
    policy = c.ctx.attr_string("keep_aspect_ratio_policy", "stretch");
  }
  if (opset >= 11 &&
      c.ctx.attr_string("coordinate_transformation_mode", "half_pixel") == "tf_crop_and_resize")
    refuse("does not crop (tf_crop_and_resize)");
  const bool antialias = opset >= 18 && c.ctx.attr_int("antialias", 0) != 0 &&
                         c.ctx.attr_string("mode", "nearest") != "nearest";
  const bool by_sizes =
      sizes_input > 0 && c.present(sizes_input) && c.ctx.input(sizes_input).elements() > 0;
  std::vector<DimExpr> sizes;
  std::vector<double> scales;
  if (by_sizes)
    sizes = c.required_values(sizes_input, "sizes");
  else
    scales = c.ctx.const_floats(scales_input, "scales");
  const Shape planned = c.ctx.graph().tensor(c.ctx.node().outputs[0]).shape;
  SymShape out = in;
  for (size_t i = 0; i < axes.size(); ++i) {
    const auto d = static_cast<size_t>(axes[i]);
    const bool symbolic = !in[d].is_constant() || (by_sizes && !sizes[i].is_constant());
    if (!symbolic) {
      out[d] = planned[d]; // as the shape rule resized it
      continue;
    }
    const std::string axis = fmt::format("axis {} ({})", d, in[d].to_string());
    if (by_sizes) {
      if (sizes[i] == in[d]) continue; // the axis's own extent: left alone
      if (policy != "stretch")
        refuse(fmt::format("keeps no aspect ratio ({}) over its symbolic {}", policy, axis));
      if (antialias) refuse(fmt::format("antialiases {} by a scale of the run", axis));
      out[d] = sizes[i];
    } else {
      std::optional<DimExpr> extent = scaled_extent(in[d], scales[i], c.bounds(in[d]).hi);
      if (!extent)
        refuse(fmt::format("scales its symbolic {} by {}, whose products with the axis's sizes "
                           "a double does not hold exactly (the output size would depend on "
                           "rounding)",
                           axis, scales[i]));
      out[d] = *extent;
    }
    if (c.bounds(in[d]).lo < 1 && c.bounds(out[d]).hi > 0)
      refuse(fmt::format("may resize its {}, empty for some values of the symbols, to elements "
                         "it would have to read",
                         axis));
  }
  c.set(0, out);
}

void topk(SymContext& c) {
  SymShape in = c.in(0);
  int64_t axis = c.ctx.normalize_axis(c.ctx.attr_int("axis", -1), c.rank(0));
  std::vector<DimExpr> k = c.required_values(1, "K");
  // The kernel selects k of the axis' elements: never more than the axis holds.
  const DimExpr spare = in[axis] - k[0];
  if (c.bounds(spare).lo < 0 &&
      !spare.every_value(c.ranges, [&](const SymbolValues& v) { return spare.evaluate(v) >= 0; })
           .value_or(false))
    c.unsupported(fmt::format("its k {} may be larger than axis {} ({}) for some values of the "
                              "symbols",
                              k[0].to_string(), axis, in[axis].to_string()));
  in[axis] = k[0];
  c.set(0, in);
  c.set(1, in);
}

void scatter_like(SymContext& c) { c.set(0, c.in(0)); }

// GatherElements: the indices' shape; off the gathered axis they must not outgrow the data at
// any value of the symbols (the kernel reads the data at their coordinates).
void gather_elements(SymContext& c) {
  const SymShape data = c.in(0), indices = c.in(1);
  const auto axis = static_cast<size_t>(c.ctx.normalize_axis(c.ctx.attr_int("axis", 0), c.rank(0)));
  for (size_t d = 0; d < data.size() && d < indices.size(); ++d)
    if (d != axis && indices[d] != data[d] && c.bounds(indices[d]).hi > c.bounds(data[d]).lo)
      c.unsupported(fmt::format("its indices {} may be larger than its data {} on axis {} for "
                                "some values of the symbols",
                                sym_shape_to_string(indices), sym_shape_to_string(data), d));
  c.set(0, indices);
}

// GatherND: indices' leading dims, then data's dims past the batch dims and the indexed ones
// (indices' last dim, which must be constant).
void gather_nd(SymContext& c) {
  SymShape data = c.in(0), indices = c.in(1);
  const DimExpr& depth = indices.back();
  if (!depth.is_constant())
    c.unsupported(fmt::format("its index depth {} is symbolic", depth.to_string()));
  const int64_t batch_dims = c.ctx.attr_int("batch_dims", 0);
  for (int64_t i = 0; i < batch_dims; ++i)
    same_dim(c, data[i], indices[i], "batch dims");
  size_t skip = static_cast<size_t>(batch_dims + depth.constant_value());
  SymShape out(indices.begin(), indices.end() - 1);
  out.insert(out.end(), data.begin() + static_cast<std::ptrdiff_t>(skip), data.end());
  c.set(0, out);
}

// Einsum: each label's dim over the operands, broadcast as numpy would (a 1 against any
// other dim), then the output labels' dims.
void einsum(SymContext& c) {
  const EinsumLabels labels = read_einsum_labels(c.ctx);
  std::map<int, DimExpr> dims;
  for (size_t i = 0; i < labels.inputs.size(); ++i) {
    const SymShape in = c.in(static_cast<int>(i));
    for (size_t a = 0; a < labels.inputs[i].size(); ++a) {
      auto [it, inserted] = dims.emplace(labels.inputs[i][a], in[a]);
      if (!inserted) it->second = broadcast(c, {it->second}, {in[a]}).front();
    }
  }
  SymShape out;
  for (int label : labels.output)
    out.push_back(dims.at(label));
  c.set(0, out);
}

// Attention (opset 23): Y, the present keys and values and the scores over the batch and the
// sequences (op_params' read_attention_dims).
void attention(SymContext& c) {
  const AttentionParams a = read_attention_params(c.ctx);
  const AttentionDims d = read_attention_dims(c.ctx);
  if (!d.not_symbolic.empty()) c.unsupported(d.not_symbolic);
  if (a.four_d)
    c.set(0, {d.batch, a.q_heads, d.q_sequence, a.v_head});
  else
    c.set(0, {d.batch, d.q_sequence, a.q_heads * a.v_head});
  c.set(1, {d.batch, a.kv_heads, d.total, a.head});
  c.set(2, {d.batch, a.kv_heads, d.total, a.v_head});
  c.set(3, {d.batch, a.q_heads, d.q_sequence, d.total});
}

using SymRule = void (*)(SymContext&);

SymRule sym_rule(OpKind op) {
  switch (op) {
  case OpKind::Abs:
  case OpKind::Neg:
  case OpKind::Relu:
  case OpKind::Sign:
  case OpKind::Ceil:
  case OpKind::Celu:
  case OpKind::Cos:
  case OpKind::Elu:
  case OpKind::Erf:
  case OpKind::Exp:
  case OpKind::Floor:
  case OpKind::Gelu:
  case OpKind::HardSigmoid:
  case OpKind::HardSwish:
  case OpKind::LeakyRelu:
  case OpKind::Log:
  case OpKind::Mish:
  case OpKind::Reciprocal:
  case OpKind::Round:
  case OpKind::Selu:
  case OpKind::Sigmoid:
  case OpKind::Sin:
  case OpKind::Softplus:
  case OpKind::Softsign:
  case OpKind::Sqrt:
  case OpKind::Tanh:
  case OpKind::Not:
  case OpKind::IsInf:
  case OpKind::IsNaN:
  case OpKind::Clip:
  case OpKind::CastLike:
  case OpKind::Softmax:
  case OpKind::LogSoftmax:
  case OpKind::InstanceNormalization:
  case OpKind::GroupNormalization:
  case OpKind::Trilu:
  case OpKind::CumSum:
  case OpKind::PRelu:
  case OpKind::RotaryEmbedding:
  case OpKind::BatchNormalization:
    return same_as_input;
  case OpKind::Add:
  case OpKind::Div:
  case OpKind::Max:
  case OpKind::Mean:
  case OpKind::Min:
  case OpKind::Mod:
  case OpKind::Mul:
  case OpKind::Sub:
  case OpKind::Sum:
  case OpKind::And:
  case OpKind::Or:
  case OpKind::Xor:
  case OpKind::Equal:
  case OpKind::Greater:
  case OpKind::GreaterOrEqual:
  case OpKind::Less:
  case OpKind::LessOrEqual:
  case OpKind::Where:
  case OpKind::Pow:
    return broadcast_all;
  case OpKind::LayerNormalization:
  case OpKind::RMSNormalization:
    return layer_norm_like;
  case OpKind::Dropout:
    return dropout;
  case OpKind::ReduceL1:
  case OpKind::ReduceL2:
  case OpKind::ReduceLogSum:
  case OpKind::ReduceLogSumExp:
  case OpKind::ReduceMax:
  case OpKind::ReduceMean:
  case OpKind::ReduceMin:
  case OpKind::ReduceProd:
  case OpKind::ReduceSum:
  case OpKind::ReduceSumSquare:
    return reduce;
  case OpKind::ArgMax:
  case OpKind::ArgMin:
    return arg_reduce;
  case OpKind::MatMul:
    return matmul;
  case OpKind::Gemm:
    return gemm;
  case OpKind::Transpose:
    return transpose;
  case OpKind::Squeeze:
    return squeeze;
  case OpKind::Unsqueeze:
    return unsqueeze;
  case OpKind::Flatten:
    return flatten;
  case OpKind::Reshape:
    return reshape;
  case OpKind::Concat:
    return concat;
  case OpKind::Slice:
    return slice;
  case OpKind::Split:
    return split;
  case OpKind::Gather:
    return gather;
  case OpKind::Cast:
    return cast;
  case OpKind::Identity:
    return identity;
  case OpKind::Expand:
    return expand;
  case OpKind::Tile:
    return tile;
  case OpKind::Shape:
    return shape;
  case OpKind::Size:
    return size;
  case OpKind::ConstantOfShape:
    return constant_of_shape;
  case OpKind::Range:
    return range;
  case OpKind::Conv:
  case OpKind::ConvTranspose:
  case OpKind::AveragePool:
  case OpKind::MaxPool:
  case OpKind::GlobalAveragePool:
  case OpKind::GlobalMaxPool:
    return spatial_window;
  case OpKind::DepthToSpace:
  case OpKind::SpaceToDepth:
    return depth_space;
  case OpKind::Pad:
    return pad;
  case OpKind::TopK:
    return topk;
  case OpKind::Resize:
    return resize;
  case OpKind::ScatterND:
    return scatter_like;
  case OpKind::GatherElements:
    return gather_elements;
  case OpKind::GatherND:
    return gather_nd;
  case OpKind::Einsum:
    return einsum;
  case OpKind::Attention:
    return attention;
  default:
    return nullptr;
  }
}

bool is_integer(DType t) { return t == DType::Int64 || t == DType::Int32; }

} // namespace

namespace {

// Runs the op's symbolic rule on a node some input of which depends on the symbols, and checks
// each output's expressions against its shape at the planning values.
void run_symbolic_rule(SymContext& c) {
  InferContext& ctx = c.ctx;
  SymRule rule = sym_rule(ctx.op());
  if (!rule)
    c.unsupported(fmt::format("stitchc does not yet express {}'s output shape over symbolic "
                              "dims",
                              op_name(ctx.op())));
  rule(c);
  const SymbolValues planning = ctx.graph().planning_values();
  for (int k = 0; k < ctx.num_outputs(); ++k) {
    if (ctx.node().outputs[k] == kNoTensor) continue;
    const Tensor& out = ctx.graph().tensor(ctx.node().outputs[k]);
    const std::optional<SymShape>& dims = c.out_dims(k);
    STITCH_INTERNAL_CHECK(dims, "the symbolic rule of {} gives no shape for output {}",
                          op_name(ctx.op()), k);
    Shape at_planning;
    for (const DimExpr& d : *dims)
      at_planning.push_back(d.evaluate(planning));
    STITCH_INTERNAL_CHECK(at_planning == out.shape,
                          "{} output '{}': the symbolic shape {} is {} at the planning values, "
                          "but the shape rule gives {}",
                          op_name(ctx.op()), out.name, sym_shape_to_string(*dims),
                          shape_to_string(at_planning), shape_to_string(out.shape));
  }
}

} // namespace

void infer_node_dims(InferContext& ctx) {
  Graph& graph = ctx.graph();
  if (graph.symbols.empty()) return;
  SymContext c(ctx);
  if (!c.any_input_depends()) return;
  run_symbolic_rule(c);
  const SymbolValues planning = graph.planning_values();
  const Node& node = ctx.node();
  for (int k = 0; k < ctx.num_outputs(); ++k) {
    if (node.outputs[k] == kNoTensor) continue;
    Tensor& out = graph.tensor(node.outputs[k]);
    const SymShape& dims = *c.out_dims(k);
    out.dims = is_static(dims) ? SymShape{} : dims;
    const std::optional<std::vector<DimExpr>>& values = c.out_values(k);
    if (values) {
      STITCH_INTERNAL_CHECK(out.is_constant() && !out.is_dynamic() &&
                                out.elements() == static_cast<int64_t>(values->size()),
                            "{} output '{}' has values as expressions but was not folded",
                            op_name(ctx.op()), out.name);
      std::vector<int64_t> folded = constant_as_int64(out);
      for (size_t i = 0; i < values->size(); ++i)
        STITCH_INTERNAL_CHECK((*values)[i].evaluate(planning) == folded[i],
                              "{} output '{}': the value {} is {} at the planning values, but "
                              "folding gives {}",
                              op_name(ctx.op()), out.name, sym_shape_to_string(*values),
                              (*values)[i].evaluate(planning), folded[i]);
      if (is_static(*values)) continue; // the symbols cancel: the folded value is the value
      STITCH_INTERNAL_CHECK(is_integer(out.dtype), "{} output '{}' is a {} with symbolic values",
                            op_name(ctx.op()), out.name, dtype_name(out.dtype));
      out.sym_values = *values;
      continue;
    }
    if (out.is_dynamic()) {
      out.constant.reset(); // its shape varies: computed at run time
      continue;
    }
    if (out.is_constant())
      c.unsupported(fmt::format("its output '{}' is a value computed from the symbolic dims "
                                "other than a shape, which stitchc does not compute at run "
                                "time",
                                out.name));
  }
}

void derive_dims(Graph& graph, const std::string& pass) {
  if (graph.symbols.empty()) return;
  for (Node& node : graph.nodes) {
    InferContext ctx(graph, node);
    SymContext c(ctx);
    if (!c.any_input_depends()) {
      for (TensorId t : node.outputs)
        if (t != kNoTensor) graph.tensor(t).dims.clear();
      continue;
    }
    try {
      if (node.op == OpKind::View) {
        // A view keeps the expressions its output had as the node it replaced (make-views).
        const Tensor& out = graph.tensor(node.outputs[0]);
        SymShape in = ctx.input(0).sym_shape(), dims = out.sym_shape();
        STITCH_INTERNAL_CHECK(product(in, 0, in.size()) == product(dims, 0, dims.size()),
                              "View '{}' of {} as {}: the element counts differ", out.name,
                              sym_shape_to_string(in), sym_shape_to_string(dims));
        continue;
      }
      run_symbolic_rule(c);
    } catch (const UserError& e) {
      internal_fail("after {}: node '{}' ({}): the symbolic shape no longer derives: {}", pass,
                    node.name, op_name(node.op), e.reason());
    }
    for (int k = 0; k < ctx.num_outputs(); ++k)
      if (node.outputs[k] != kNoTensor) {
        const SymShape& dims = *c.out_dims(k);
        graph.tensor(node.outputs[k]).dims = is_static(dims) ? SymShape{} : dims;
      }
  }
}

} // namespace stitch
