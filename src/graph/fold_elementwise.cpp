// Host evaluators for the Elementwise, Broadcast and Reduction ops that constant folding
// runs (fold_elementwise, fold_reduce). Values are computed in one of two domains, whatever
// the stored dtype: int64 with C semantics (wrapping add/sub/mul, truncating division) for
// integer and bool operands, or double for floating operands, rounded to the output dtype
// on store. A fold declines (returns no values) where the result is not well defined
// (integer division by zero) or not representable this way (uint64 beyond int64).
// Attributes and reduce axes are read through NodeContext and op_params.h, as the shape
// rules read them.
#include <algorithm>
#include <cmath>
#include <limits>
#include <numbers>
#include <optional>
#include <string>

#include "graph/constant.h"
#include "graph/error.h"
#include "graph/fold.h"
#include "graph/op_params.h"
#include "graph/reductions.h"

namespace stitch {

namespace {

// One input's values in the domain of its dtype.
struct Operand {
  bool is_float = false;
  std::vector<int64_t> ints;
  std::vector<double> floats;
  Shape shape;
  double real(int64_t i) const { return is_float ? floats[i] : static_cast<double>(ints[i]); }
};

Operand load(const Tensor& t) {
  Operand op;
  op.is_float = dtype_is_float(t.dtype);
  op.shape = t.shape;
  if (op.is_float)
    op.floats = constant_as_double(t);
  else
    op.ints = constant_as_int64(t);
  return op;
}

// Calls fn(output_index, offsets) for each output element, offsets[k] being the element of
// operand k that numpy broadcasting pairs with it.
template <typename Fn>
void for_each_broadcast(const Shape& out, const std::vector<Operand>& ops, Fn fn) {
  size_t rank = out.size(), n_ops = ops.size();
  // strides[k][d]: how far operand k's offset moves when output axis d steps (0 if broadcast).
  std::vector<std::vector<int64_t>> strides(n_ops, std::vector<int64_t>(rank, 0));
  for (size_t k = 0; k < n_ops; ++k) {
    const Shape& s = ops[k].shape;
    int64_t stride = 1;
    for (size_t j = s.size(); j-- > 0;) {
      size_t d = rank - s.size() + j;
      strides[k][d] = s[j] == 1 ? 0 : stride;
      stride *= s[j];
    }
  }
  int64_t total = shape_elements(out);
  std::vector<int64_t> index(rank, 0), offsets(n_ops, 0);
  for (int64_t i = 0; i < total; ++i) {
    fn(i, offsets);
    for (size_t d = rank; d-- > 0;) {
      ++index[d];
      for (size_t k = 0; k < n_ops; ++k)
        offsets[k] += strides[k][d];
      if (index[d] < out[d]) break;
      for (size_t k = 0; k < n_ops; ++k)
        offsets[k] -= strides[k][d] * out[d];
      index[d] = 0;
    }
  }
}

int64_t wrap_add(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b));
}
int64_t wrap_sub(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) - static_cast<uint64_t>(b));
}
int64_t wrap_mul(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) * static_cast<uint64_t>(b));
}

// a^b for b >= 0 by squaring, wrapping like repeated C multiplication.
int64_t int_pow(int64_t a, int64_t b) {
  int64_t result = 1;
  for (; b > 0; b >>= 1) {
    if (b & 1) result = wrap_mul(result, a);
    a = wrap_mul(a, a);
  }
  return result;
}

double round_half_even(double x) {
  double r = std::round(x); // half away from zero
  if (std::fabs(x - std::trunc(x)) == 0.5) r = 2.0 * std::round(x / 2.0);
  return r;
}

// The attributes an evaluation reads, looked up once per node.
struct Params {
  double alpha = 0, beta = 0, gamma = 0, lo = 0, hi = 0;
  bool fmod = false, tanh_gelu = false, detect_negative = true, detect_positive = true;
};

Params read_params(const NodeContext& ctx) {
  Params p;
  switch (ctx.op()) {
  case OpKind::LeakyRelu:
    p.alpha = ctx.attr_float("alpha", 0.01);
    break;
  case OpKind::Elu:
  case OpKind::Celu:
    p.alpha = ctx.attr_float("alpha", 1.0);
    break;
  case OpKind::Selu:
    p.alpha = ctx.attr_float("alpha", 1.67326319217681884765625);
    p.gamma = ctx.attr_float("gamma", 1.05070102214813232421875);
    break;
  case OpKind::HardSigmoid:
    p.alpha = ctx.attr_float("alpha", 0.2);
    p.beta = ctx.attr_float("beta", 0.5);
    break;
  case OpKind::Gelu:
    p.tanh_gelu = ctx.attr_string("approximate", "none") == "tanh";
    break;
  case OpKind::Mod:
    p.fmod = ctx.attr_flag("fmod", false);
    break;
  case OpKind::IsInf:
    p.detect_negative = ctx.attr_int("detect_negative", 1) != 0;
    p.detect_positive = ctx.attr_int("detect_positive", 1) != 0;
    break;
  case OpKind::Clip: // before opset 11 the bounds are attributes
    p.lo = ctx.attr_float("min", -std::numeric_limits<double>::infinity());
    p.hi = ctx.attr_float("max", std::numeric_limits<double>::infinity());
    break;
  default:
    break;
  }
  return p;
}

double softplus(double x) { return x > 30 ? x : std::log1p(std::exp(x)); }

// One output element in the double domain; `a` holds the operands (Clip: x, min, max with
// NaN standing for an omitted bound).
std::optional<double> eval_real(OpKind op, const Params& p, const double* a, size_t n) {
  double x = a[0], y = n > 1 ? a[1] : 0.0;
  switch (op) {
  case OpKind::Abs:
    return std::fabs(x);
  case OpKind::Neg:
    return -x;
  case OpKind::Exp:
    return std::exp(x);
  case OpKind::Log:
    return std::log(x);
  case OpKind::Sqrt:
    return std::sqrt(x);
  case OpKind::Reciprocal:
    return 1.0 / x;
  case OpKind::Sin:
    return std::sin(x);
  case OpKind::Cos:
    return std::cos(x);
  case OpKind::Tanh:
    return std::tanh(x);
  case OpKind::Sigmoid:
    return 1.0 / (1.0 + std::exp(-x));
  case OpKind::Relu:
    return x < 0 ? 0.0 : x;
  case OpKind::LeakyRelu:
    return x < 0 ? p.alpha * x : x;
  case OpKind::Elu:
    return x < 0 ? p.alpha * (std::exp(x) - 1.0) : x;
  case OpKind::Selu:
    return x > 0 ? p.gamma * x : p.gamma * (p.alpha * std::exp(x) - p.alpha);
  case OpKind::Celu:
    return std::max(0.0, x) + std::min(0.0, p.alpha * (std::exp(x / p.alpha) - 1.0));
  case OpKind::Gelu:
    if (p.tanh_gelu)
      return 0.5 * x *
             (1.0 + std::tanh(std::sqrt(2.0 / std::numbers::pi) * (x + 0.044715 * x * x * x)));
    return 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0)));
  case OpKind::Erf:
    return std::erf(x);
  case OpKind::HardSigmoid:
    return std::max(0.0, std::min(1.0, p.alpha * x + p.beta));
  case OpKind::HardSwish:
    return x * std::max(0.0, std::min(1.0, x / 6.0 + 0.5));
  case OpKind::Softplus:
    return softplus(x);
  case OpKind::Softsign:
    return x / (1.0 + std::fabs(x));
  case OpKind::Mish:
    return x * std::tanh(softplus(x));
  case OpKind::Floor:
    return std::floor(x);
  case OpKind::Ceil:
    return std::ceil(x);
  case OpKind::Round:
    return round_half_even(x);
  case OpKind::Sign:
    return x > 0 ? 1.0 : (x < 0 ? -1.0 : x);
  case OpKind::Clip: {
    double lo = n > 1 && !std::isnan(a[1]) ? a[1] : p.lo,
           hi = n > 2 && !std::isnan(a[2]) ? a[2] : p.hi;
    double r = x < lo ? lo : x; // min(max(x, lo), hi): with lo > hi every value is hi
    return r > hi ? hi : r;
  }
  case OpKind::IsNaN:
    return std::isnan(x) ? 1.0 : 0.0;
  case OpKind::IsInf:
    return (std::isinf(x) && ((x > 0 && p.detect_positive) || (x < 0 && p.detect_negative))) ? 1.0
                                                                                             : 0.0;
  case OpKind::Add:
    return x + y;
  case OpKind::Sub:
    return x - y;
  case OpKind::Mul:
    return x * y;
  case OpKind::Div:
    return x / y;
  case OpKind::Mod: {
    double r = std::fmod(x, y);
    if (!p.fmod && r != 0 && (r < 0) != (y < 0)) r += y; // the result takes the divisor's sign
    return r;
  }
  case OpKind::Pow:
    return std::pow(x, y);
  case OpKind::Max:
  case OpKind::Min: {
    double r = x;
    for (size_t i = 1; i < n && !std::isnan(r); ++i)
      if (std::isnan(a[i]) || (op == OpKind::Max ? a[i] > r : a[i] < r)) r = a[i];
    return r;
  }
  case OpKind::Sum:
  case OpKind::Mean: {
    double s = 0;
    for (size_t i = 0; i < n; ++i)
      s += a[i];
    return op == OpKind::Mean ? s / static_cast<double>(n) : s;
  }
  case OpKind::Equal:
    return x == y ? 1.0 : 0.0;
  case OpKind::Less:
    return x < y ? 1.0 : 0.0;
  case OpKind::Greater:
    return x > y ? 1.0 : 0.0;
  case OpKind::LessOrEqual:
    return x <= y ? 1.0 : 0.0;
  case OpKind::GreaterOrEqual:
    return x >= y ? 1.0 : 0.0;
  case OpKind::Where:
    return x != 0 ? y : a[2];
  case OpKind::PRelu:
    return x < 0 ? y * x : x;
  default:
    return std::nullopt;
  }
}

// One output element in the int64 domain; nullopt declines the fold. `present` tells
// Clip which bounds were given.
std::optional<int64_t> eval_int(OpKind op, const Params& p, const int64_t* a, size_t n,
                                const char* present) {
  int64_t x = a[0], y = n > 1 ? a[1] : 0;
  switch (op) {
  case OpKind::Abs:
    return x < 0 ? wrap_sub(0, x) : x;
  case OpKind::Neg:
    return wrap_sub(0, x);
  case OpKind::Relu:
    return x < 0 ? 0 : x;
  case OpKind::Sign:
    return x > 0 ? 1 : (x < 0 ? -1 : 0);
  case OpKind::Clip: {
    if (n > 1 && present[1] && x < a[1]) x = a[1];
    if (n > 2 && present[2] && x > a[2]) x = a[2];
    return x;
  }
  case OpKind::Not:
    return x == 0 ? 1 : 0;
  case OpKind::Add:
    return wrap_add(x, y);
  case OpKind::Sub:
    return wrap_sub(x, y);
  case OpKind::Mul:
    return wrap_mul(x, y);
  case OpKind::Div:
    if (y == 0 || (x == std::numeric_limits<int64_t>::min() && y == -1)) return std::nullopt;
    return x / y;
  case OpKind::Mod: {
    if (y == 0) return std::nullopt;
    if (y == -1) return 0;
    int64_t r = x % y; // C: the dividend's sign (fmod=1)
    if (!p.fmod && r != 0 && (r < 0) != (y < 0)) r += y;
    return r;
  }
  case OpKind::Pow:
    if (y < 0) return std::nullopt; // handled in the double domain by the caller
    return int_pow(x, y);
  case OpKind::Max:
  case OpKind::Min: {
    int64_t r = x;
    for (size_t i = 1; i < n; ++i)
      r = op == OpKind::Max ? std::max(r, a[i]) : std::min(r, a[i]);
    return r;
  }
  case OpKind::Sum: {
    int64_t s = 0;
    for (size_t i = 0; i < n; ++i)
      s = wrap_add(s, a[i]);
    return s;
  }
  case OpKind::Equal:
    return x == y ? 1 : 0;
  case OpKind::Less:
    return x < y ? 1 : 0;
  case OpKind::Greater:
    return x > y ? 1 : 0;
  case OpKind::LessOrEqual:
    return x <= y ? 1 : 0;
  case OpKind::GreaterOrEqual:
    return x >= y ? 1 : 0;
  case OpKind::And:
    return (x != 0 && y != 0) ? 1 : 0;
  case OpKind::Or:
    return (x != 0 || y != 0) ? 1 : 0;
  case OpKind::Xor:
    return ((x != 0) != (y != 0)) ? 1 : 0;
  case OpKind::Where:
    return x != 0 ? y : a[2];
  case OpKind::PRelu:
    return x < 0 ? wrap_mul(y, x) : x;
  default:
    return std::nullopt; // e.g. Mean of integers: no agreed rounding
  }
}

// ---- Reductions ----

template <typename T> T reduce_init(ReduceCombine combine) {
  switch (combine) {
  case ReduceCombine::Prod:
    return T(1);
  case ReduceCombine::Max:
    return std::numeric_limits<T>::has_infinity ? -std::numeric_limits<T>::infinity()
                                                : std::numeric_limits<T>::lowest();
  case ReduceCombine::Min:
    return std::numeric_limits<T>::has_infinity ? std::numeric_limits<T>::infinity()
                                                : std::numeric_limits<T>::max();
  default:
    return T(0);
  }
}

double reduce_step(ReduceCombine combine, double acc, double v) {
  switch (combine) {
  case ReduceCombine::Prod:
    return acc * v;
  case ReduceCombine::Max:
    return (std::isnan(acc) || !(std::isnan(v) || v > acc)) ? acc : v;
  case ReduceCombine::Min:
    return (std::isnan(acc) || !(std::isnan(v) || v < acc)) ? acc : v;
  default:
    return acc + v;
  }
}

int64_t reduce_step(ReduceCombine combine, int64_t acc, int64_t v) {
  switch (combine) {
  case ReduceCombine::Prod:
    return wrap_mul(acc, v);
  case ReduceCombine::Max:
    return std::max(acc, v);
  case ReduceCombine::Min:
    return std::min(acc, v);
  default:
    return wrap_add(acc, v);
  }
}

// Each element's term of the reduction (|v|, v * v, or v itself).
double reduce_term(ReduceTerm term, double v) {
  return term == ReduceTerm::Abs ? std::fabs(v) : term == ReduceTerm::Square ? v * v : v;
}
int64_t reduce_term(ReduceTerm term, int64_t v) {
  return term == ReduceTerm::Abs      ? (v < 0 ? wrap_mul(v, -1) : v)
         : term == ReduceTerm::Square ? wrap_mul(v, v)
                                      : v;
}

// Reduces `values` (of shape `in`) over the `reduced` axes into `out_elements` accumulators.
template <typename T>
std::vector<T> reduce_values(const ReductionRule& rule, const std::vector<T>& values,
                             const Shape& in, const std::vector<bool>& reduced,
                             int64_t out_elements) {
  std::vector<T> acc(static_cast<size_t>(out_elements), reduce_init<T>(rule.combine));
  // out_stride[d]: how far the output index moves when input axis d steps (0 if reduced);
  // index: the multi-index of the input element being read.
  size_t rank = in.size();
  std::vector<int64_t> out_stride(rank, 0), index(rank, 0);
  int64_t stride = 1;
  for (size_t d = rank; d-- > 0;) {
    if (reduced[d]) continue;
    out_stride[d] = stride;
    stride *= in[d];
  }
  int64_t out = 0;
  for (size_t i = 0; i < values.size(); ++i) {
    acc[out] = reduce_step(rule.combine, acc[out], reduce_term(rule.term, values[i]));
    for (size_t d = rank; d-- > 0;) {
      ++index[d];
      out += out_stride[d];
      if (index[d] < in[d]) break;
      out -= out_stride[d] * in[d];
      index[d] = 0;
    }
  }
  return acc;
}

} // namespace

FoldResult fold_elementwise(const Graph& graph, const Node& node) {
  std::vector<Operand> ops;
  std::vector<char> present;
  bool real_domain = false;
  for (size_t i = 0; i < node.inputs.size(); ++i) {
    present.push_back(node.inputs[i] != kNoTensor);
    if (!present.back()) {
      ops.push_back(Operand{true, {0}, {NAN}, {}}); // an omitted Clip bound: NaN / ignored
      continue;
    }
    const Tensor& t = graph.tensor(node.inputs[i]);
    if (t.dtype == DType::UInt64) return {};
    ops.push_back(load(t));
    bool is_condition = node.op == OpKind::Where && i == 0;
    real_domain = real_domain || (ops.back().is_float && !is_condition);
  }
  const Tensor& out = graph.tensor(node.outputs[0]);
  Params params = read_params(NodeContext(graph, node));
  int64_t total = out.elements();
  size_t n = ops.size();
  std::vector<double> args_real(n);
  std::vector<int64_t> args_int(n);
  // An integer Pow with a negative exponent is computed in double and truncated, as ONNX
  // Runtime does.
  bool needs_real = false;
  if (!real_domain && node.op == OpKind::Pow)
    for (int64_t e : ops[1].ints)
      needs_real = needs_real || e < 0;
  if (real_domain || needs_real) {
    std::vector<double> result(static_cast<size_t>(total));
    bool declined = false;
    for_each_broadcast(out.shape, ops, [&](int64_t i, const std::vector<int64_t>& off) {
      for (size_t k = 0; k < n; ++k)
        args_real[k] = ops[k].real(off[k]);
      std::optional<double> v = eval_real(node.op, params, args_real.data(), n);
      if (!v)
        declined = true;
      else
        result[i] = *v;
    });
    if (declined) return {};
    return {make_constant_from_double(out.dtype, result)};
  }
  std::vector<int64_t> result(static_cast<size_t>(total));
  bool declined = false;
  for_each_broadcast(out.shape, ops, [&](int64_t i, const std::vector<int64_t>& off) {
    for (size_t k = 0; k < n; ++k)
      args_int[k] = ops[k].ints[off[k]];
    std::optional<int64_t> v = eval_int(node.op, params, args_int.data(), n, present.data());
    if (!v)
      declined = true;
    else
      result[i] = *v;
  });
  if (declined) return {};
  return {make_constant_from_int64(out.dtype, result)};
}

FoldResult fold_reduce(const Graph& graph, const Node& node) {
  const Tensor& in = graph.tensor(node.inputs[0]);
  const Tensor& out = graph.tensor(node.outputs[0]);
  const ReductionRule* rule = reduction_rule(node.op);
  if (rule == nullptr || rule->passes() != 1) return {};
  ReduceParams reduce = read_reduce_params(NodeContext(graph, node));
  if (reduce.noop) return {in.constant}; // noop_with_empty_axes: the input as it is
  int64_t count = in.elements() / std::max<int64_t>(out.elements(), 1);
  if (dtype_is_float(in.dtype)) {
    std::vector<double> acc =
        reduce_values(*rule, constant_as_double(in), in.shape, reduce.reduced, out.elements());
    for (double& v : acc)
      switch (rule->finish) {
      case ReduceFinish::Mean:
        v /= static_cast<double>(count);
        break;
      case ReduceFinish::Sqrt:
        v = std::sqrt(v);
        break;
      case ReduceFinish::Log:
        v = std::log(v);
        break;
      default:
        break;
      }
    return {make_constant_from_double(out.dtype, acc)};
  }
  // Integers: the plain sums, products and extremes (and their mean); no agreed rounding for
  // the others.
  if (in.dtype == DType::UInt64 || rule->term != ReduceTerm::Value ||
      (rule->finish != ReduceFinish::None && rule->finish != ReduceFinish::Mean))
    return {};
  bool empty = in.elements() == 0;
  if (empty && rule->combine != ReduceCombine::Sum && rule->combine != ReduceCombine::Prod)
    return {};
  std::vector<int64_t> acc =
      reduce_values(*rule, constant_as_int64(in), in.shape, reduce.reduced, out.elements());
  if (rule->finish == ReduceFinish::Mean)
    for (int64_t& v : acc)
      v /= count;
  return {make_constant_from_int64(out.dtype, acc)};
}

} // namespace stitch
