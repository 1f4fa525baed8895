// Random graphs for the planner tests, deterministic per seed:
//
//   random_dag    a Graph built node by node over [R,C] tensors and their per-row and
//                 per-column values: few op kinds, small enough for exhaustive search
//                 (test_planner_exhaustive.cpp).
//   random_model  a real ONNX model (ModelBuilder) of one or several independent random DAGs
//                 over tensors of rank 1 to 4 with length-1 axes: pointwise ops with numpy
//                 broadcasting, Expand, Cast, reductions over any axes, Softmax, LogSoftmax,
//                 LayerNormalization, Transpose, Slice, Concat, Reshape, Where and MatMul
//                 (operands and result maybe transposed). Loaded like
//                 any model (load_onnx, run_pipeline), it goes through shape inference and
//                 every pass, composites lowered and reshapes made views
//                 (test_plan_property.cpp).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "model_builder.h"
#include "test_planner_graphs.h"

namespace stitch::test {

// A random DAG over [R,C] tensors, per-row [R,1] and per-column [1,C] values: pointwise ops
// (unary, and binary ones broadcasting between the three shapes), row reductions, softmax (the
// five nodes lower-composites makes of it), column reductions and, as an op that runs alone, a
// transpose there and back.
inline Graph random_dag(uint32_t seed, int op_count) {
  constexpr int64_t kRows = 48, kCols = 64;
  std::mt19937 rng(seed);
  auto pick = [&](int n) { return static_cast<int>(rng() % static_cast<uint32_t>(n)); };
  GraphBuilder b;
  std::vector<TensorId> full = {b.input({kRows, kCols}), b.input({kRows, kCols})};
  std::vector<TensorId> per_row = {b.input({kRows, 1})};
  std::vector<TensorId> per_col = {b.input({1, kCols})};
  std::vector<TensorId> produced;
  const OpKind unary[] = {OpKind::Relu, OpKind::Exp, OpKind::Neg, OpKind::Sigmoid};
  const OpKind binary[] = {OpKind::Add, OpKind::Mul, OpKind::Sub};
  for (int i = 0; i < op_count; ++i) {
    std::string name = "n" + std::to_string(i);
    int kind = pick(10);
    TensorId out;
    if (kind < 3) { // unary on any shape
      int which = pick(3);
      auto& pool = which == 0 ? full : which == 1 ? per_row : per_col;
      out = b.op(unary[pick(4)], {pool[pick(static_cast<int>(pool.size()))]}, name);
      pool.push_back(out);
    } else if (kind < 6) { // binary: full with anything, or a row value with a column value
      TensorId a = full[pick(static_cast<int>(full.size()))];
      int which = pick(4);
      TensorId c = which == 0   ? full[pick(static_cast<int>(full.size()))]
                   : which == 1 ? per_row[pick(static_cast<int>(per_row.size()))]
                   : which == 2 ? per_col[pick(static_cast<int>(per_col.size()))]
                                : kNoTensor;
      if (c == kNoTensor) {
        a = per_row[pick(static_cast<int>(per_row.size()))];
        c = per_col[pick(static_cast<int>(per_col.size()))];
      }
      out = b.op(binary[pick(3)], {a, c}, name);
      full.push_back(out);
    } else if (kind < 8) { // row reduction
      OpKind op = pick(2) ? OpKind::ReduceMax : OpKind::ReduceMean;
      out = b.op(op, {full[pick(static_cast<int>(full.size()))]}, name, {{"axes", last_axis()}});
      per_row.push_back(out);
    } else if (kind == 8) {
      if (pick(2) && i + 5 <= op_count) { // softmax, lowered: five of the nodes
        out = softmax_chain(b, full[pick(static_cast<int>(full.size()))], name);
        i += 4;
        full.push_back(out);
      } else {
        out = b.op(OpKind::ReduceMean, {full[pick(static_cast<int>(full.size()))]}, name,
                   {{"axes", std::vector<int64_t>{0}}});
        per_col.push_back(out);
      }
    } else { // runs alone: a transpose (the result is [C,R], read by nothing but the graph)
      out = b.op(OpKind::Transpose, {full[pick(static_cast<int>(full.size()))]}, name,
                 {{"perm", std::vector<int64_t>{1, 0}}});
    }
    produced.push_back(out);
  }
  Graph g = b.finish();
  // Outputs: every tensor nobody reads, and one more at random.
  std::vector<std::vector<int32_t>> consumers = g.consumers();
  for (TensorId t : produced)
    if (consumers[t].empty()) g.outputs.push_back(t);
  TensorId extra = produced[pick(static_cast<int>(produced.size()))];
  if (!consumers[extra].empty()) g.outputs.push_back(extra);
  return g;
}

// ---- random_model: random ONNX models through the driver's path ----

// Writes random DAGs into a ModelBuilder, one component at a time. Every graph input is a
// float32 tensor (random_values fills them: magnitudes in [0.25, 2]); every graph output is
// float32 too (other dtypes are cast back first). Each value carries a bound on its
// magnitude, and an op that could overflow it past kMaxBound (Exp, Mul, sums, products) is
// not drawn, so that fused and unfused plans compare within fp32 tolerance. Denominators are
// made |b| + 1.
class RandomModelWriter {
public:
  static constexpr int64_t kMaxElements = 2048;
  static constexpr double kMaxBound = 1e4;

  // `float_type` (an onnx::TensorProto element type: FLOAT, FLOAT16 or BFLOAT16) is the type of
  // the float values the ops compute on: each float32 graph input is cast to it first.
  RandomModelWriter(uint32_t seed, ModelBuilder& model, int float_type = onnx::TensorProto::FLOAT)
      : rng_(seed), m_(model), float_(float_type) {}

  // One DAG of `op_count` random ops (a composite counts as one), its names prefixed by
  // `prefix`, reading fresh graph inputs and writing its unread values as graph outputs.
  void component(const std::string& prefix, int op_count) {
    prefix_ = prefix;
    pool_.clear();
    std::vector<size_t> produced;
    int inputs = 1 + pick(2);
    for (int i = 0; i < inputs; ++i)
      pool_.push_back(new_input(random_shape()));
    for (int i = 0; i < op_count; ++i) {
      size_t before = pool_.size();
      while (!random_op()) {
      }
      for (size_t v = before; v < pool_.size(); ++v)
        produced.push_back(v);
    }
    std::vector<size_t> outputs;
    for (size_t v : produced)
      if (!pool_[v].read) outputs.push_back(v);
    if (pick(2)) outputs.push_back(produced[pick(static_cast<int>(produced.size()))]);
    std::sort(outputs.begin(), outputs.end());
    outputs.erase(std::unique(outputs.begin(), outputs.end()), outputs.end());
    for (size_t v : outputs) {
      Value out = pool_[v];
      if (out.type != kFloat32) out = cast(out, kFloat32);
      m_.output(out.name);
    }
  }

private:
  static constexpr int kFloat32 = onnx::TensorProto::FLOAT;
  static constexpr int kFloat64 = onnx::TensorProto::DOUBLE;
  static constexpr int kInt32 = onnx::TensorProto::INT32;
  static constexpr int kBool = onnx::TensorProto::BOOL;

  struct Value {
    std::string name;
    std::vector<int64_t> shape;
    int type = kFloat32; // an onnx::TensorProto element type
    double bound = 2.0;  // no element's magnitude exceeds it
    bool nonnegative = false;
    bool read = false; // by some node
  };

  int pick(int n) { return static_cast<int>(rng_() % static_cast<uint32_t>(n)); }
  bool chance(int one_in) { return pick(one_in) == 0; }
  static int64_t elements(const std::vector<int64_t>& shape) {
    int64_t n = 1;
    for (int64_t d : shape)
      n *= d;
    return n;
  }
  std::string fresh(const std::string& what) { return prefix_ + what + std::to_string(next_++); }

  // Ranks 1 to 4, dims with many 1s and a few longer rows, at most kMaxElements elements.
  std::vector<int64_t> random_shape() {
    static const int64_t kDims[] = {1, 1, 2, 3, 4, 5, 6, 8, 12, 16, 24, 33, 64};
    for (;;) {
      std::vector<int64_t> shape(1 + pick(4));
      for (int64_t& d : shape)
        d = kDims[pick(static_cast<int>(std::size(kDims)))];
      if (elements(shape) <= kMaxElements) return shape;
    }
  }
  int64_t random_dim() {
    static const int64_t kDims[] = {2, 3, 4, 5, 7, 8, 16};
    return kDims[pick(static_cast<int>(std::size(kDims)))];
  }

  // `out` = the numpy broadcast of two shapes; false when they are incompatible, or it holds
  // more than kMaxElements.
  static bool broadcast(const std::vector<int64_t>& a, const std::vector<int64_t>& b,
                        std::vector<int64_t>& out) {
    size_t rank = std::max(a.size(), b.size());
    out.assign(rank, 1);
    for (size_t i = 0; i < rank; ++i) {
      int64_t x = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
      int64_t y = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
      if (x != y && x != 1 && y != 1) return false;
      out[i] = std::max(x, y);
    }
    return elements(out) <= kMaxElements;
  }

  // A shape that broadcasts with `shape`: the same, per-axis ([C,1] against [R,C]), a trailing
  // suffix (rank-changing), or growing `shape`'s length-1 axes ([R,1] against [1,C]), maybe
  // with a new leading axis.
  std::vector<int64_t> partner_shape(const std::vector<int64_t>& shape) {
    std::vector<int64_t> t = shape, out;
    switch (pick(4)) {
    case 0:
      break;
    case 1:
      for (int64_t& d : t)
        if (chance(2)) d = 1;
      break;
    case 2:
      if (t.empty()) break;
      t.erase(t.begin(), t.begin() + pick(static_cast<int>(t.size())));
      for (int64_t& d : t)
        if (chance(3)) d = 1;
      break;
    default:
      for (int64_t& d : t)
        d = d == 1 ? random_dim() : (chance(2) ? 1 : d);
      if (t.size() < 4 && chance(3)) t.insert(t.begin(), random_dim());
    }
    return broadcast(shape, t, out) ? t : shape;
  }

  void add(Value v) { pool_.push_back(std::move(v)); }
  Value new_input(const std::vector<int64_t>& shape) {
    Value v{fresh("in"), shape};
    m_.input(v.name, kFloat32, shape);
    return float_ == kFloat32 ? v : cast(v, float_);
  }
  bool floating(int type) const { return type == kFloat32 || type == kFloat64 || type == float_; }
  std::string ints(const std::vector<int64_t>& values) {
    std::string name = fresh("k");
    m_.initializer_i64(name, {static_cast<int64_t>(values.size())}, values);
    return name;
  }
  std::string scalar(float value) {
    std::string name = fresh("k");
    m_.initializer_f32(name, {}, {value});
    return name;
  }
  // A node `op` reading `inputs` and writing `out`, which it names.
  onnx::NodeProto& node(const std::string& op, std::vector<std::string> inputs, Value& out) {
    out.name = fresh("v");
    return m_.node(op, inputs, {out.name}, fresh(op + "_"));
  }
  Value cast(const Value& v, int type) {
    Value out = v;
    out.type = type;
    out.read = false;
    if (type == kInt32) out.bound = std::floor(v.bound);
    set_attr_int(node("Cast", {v.name}, out), "to", type);
    return out;
  }
  // `v` itself, or a new value of `v` cast to `type`.
  Value as_type(Value v, int type) { return v.type == type ? v : cast(v, type); }
  // |v| + 1, for denominators and logarithms.
  Value abs_plus_one(const Value& v) {
    Value magnitude = v, one = {scalar(1.0f), {}, kFloat32};
    node("Abs", {v.name}, magnitude);
    Value out{"", v.shape, v.type, v.bound + 1, true};
    node("Add", {magnitude.name, as_type(one, v.type).name}, out);
    return out;
  }

  // An operand: one of the last few values half the time (deep chains), else any.
  size_t operand() {
    int n = static_cast<int>(pool_.size());
    return static_cast<size_t>(chance(2) ? std::max(0, n - 1 - pick(3)) : pick(n));
  }
  Value& use(size_t v) {
    pool_[v].read = true;
    return pool_[v];
  }
  // A second operand for `a`: an existing value of its type that broadcasts with it, or a
  // fresh input of a partner shape.
  Value partner(const Value& a) {
    std::vector<int64_t> out;
    if (chance(2)) {
      size_t v = operand();
      if (pool_[v].type == a.type && broadcast(a.shape, pool_[v].shape, out)) return use(v);
    }
    return as_type(new_input(partner_shape(a.shape)), a.type);
  }

  // Draws one op kind and adds it; false when the kind does not fit the drawn operand.
  bool random_op() {
    size_t v = operand();
    Value a = pool_[v];
    bool is_float = floating(a.type);
    int kind = pick(21);
    bool done = kind < 4     ? unary(a)
                : kind < 8   ? binary(a)
                : kind < 11  ? reduce(a)
                : kind == 11 ? is_float && softmax(a)
                : kind == 12 ? a.type == float_ && layer_norm(a)
                : kind == 13 ? where(a)
                : kind == 14 ? expand(a)
                : kind == 15 ? cast_op(a)
                : kind == 16 ? transpose(a)
                : kind == 17 ? slice(a)
                : kind == 18 ? concat(a)
                : kind == 19 ? reshape(a)
                             : a.type == float_ && matmul(a);
    if (done) pool_[v].read = true;
    return done;
  }

  bool unary(const Value& a) {
    struct Op {
      const char* name;
      bool floats_only;
    };
    static const Op kOps[] = {{"Neg", false},     {"Abs", false},     {"Relu", false},
                              {"Tanh", true},     {"Sigmoid", true},  {"Sin", true},
                              {"Softsign", true}, {"Exp", true},      {"Sqrt", true},
                              {"Erf", true},      {"Softplus", true}, {"LeakyRelu", true}};
    const Op& op = kOps[pick(static_cast<int>(std::size(kOps)))];
    std::string name = op.name;
    if (op.floats_only && !floating(a.type)) return false;
    if (name == "Exp" && a.bound > 4) return false;
    if (name == "Sqrt" && !a.nonnegative) return false;
    Value out = a;
    out.read = false;
    if (name == "Abs" || name == "Relu") out.nonnegative = true;
    if (name == "Tanh" || name == "Sin" || name == "Softsign" || name == "Erf") out.bound = 1;
    if (name == "Sin" || name == "Neg") out.nonnegative = false;
    if (name == "Sigmoid") out = {"", a.shape, a.type, 1, true};
    if (name == "Exp") out = {"", a.shape, a.type, std::exp(a.bound), true};
    if (name == "Sqrt") out.bound = std::sqrt(a.bound);
    if (name == "Softplus") out = {"", a.shape, a.type, a.bound + 1, true};
    node(name, {a.name}, out);
    add(out);
    return true;
  }

  bool binary(const Value& a) {
    static const char* kOps[] = {"Add", "Sub", "Mul", "Max", "Min", "Div"};
    std::string name = kOps[pick(static_cast<int>(std::size(kOps)))];
    if (name == "Div" && a.type == kInt32) return false;
    Value b = partner(a);
    Value out = a;
    out.read = false;
    broadcast(a.shape, b.shape, out.shape);
    out.nonnegative = false;
    out.bound = name == "Add" || name == "Sub" ? a.bound + b.bound
                : name == "Mul"                ? a.bound * b.bound
                                               : std::max(a.bound, b.bound);
    if (out.bound > kMaxBound) name = "Max";
    if (name == "Div") { // a / (|b| + 1)
      b = abs_plus_one(b);
      out.bound = a.bound;
    }
    node(name, {a.name, b.name}, out);
    add(out);
    return true;
  }

  // Reduce* over one axis anywhere, several axes, or all of them; keepdims 0 or 1. ReduceLogSum
  // reduces |a| + 1, so that its sums are positive.
  bool reduce(const Value& a) {
    static const char* kFloatOps[] = {
        "ReduceSum", "ReduceMean", "ReduceMax",       "ReduceMin",  "ReduceSumSquare",
        "ReduceL1",  "ReduceL2",   "ReduceLogSumExp", "ReduceProd", "ReduceLogSum"};
    static const char* kIntOps[] = {"ReduceSum", "ReduceMax", "ReduceMin"};
    std::string name = a.type != kInt32 ? kFloatOps[pick(static_cast<int>(std::size(kFloatOps)))]
                                        : kIntOps[pick(static_cast<int>(std::size(kIntOps)))];
    int rank = static_cast<int>(a.shape.size());
    if (rank == 0) return false;
    std::vector<int64_t> axes;
    int mode = pick(10);
    if (mode < 6) {
      axes = {pick(rank)};
    } else if (mode < 9) {
      for (int d = 0; d < rank; ++d)
        if (chance(2)) axes.push_back(d);
      if (axes.empty()) axes = {pick(rank)};
    }
    bool keepdims = chance(2);
    Value out{"", {}, a.type};
    int64_t count = 1;
    for (int d = 0; d < rank; ++d) {
      bool reduced = axes.empty() || std::count(axes.begin(), axes.end(), d);
      if (reduced) count *= a.shape[d];
      if (!reduced || keepdims) out.shape.push_back(reduced ? 1 : a.shape[d]);
    }
    double n = static_cast<double>(count);
    out.bound = a.bound;
    out.nonnegative = a.nonnegative;
    if (name == "ReduceSum") out.bound = a.bound * n;
    if (name == "ReduceSumSquare") out = {"", out.shape, a.type, a.bound * a.bound * n, true};
    if (name == "ReduceL1") out = {"", out.shape, a.type, a.bound * n, true};
    if (name == "ReduceL2") out = {"", out.shape, a.type, a.bound * std::sqrt(n), true};
    if (name == "ReduceLogSumExp") {
      if (a.bound > 40) return false;
      out.bound = a.bound + std::log(n) + 1;
      out.nonnegative = false;
    }
    if (name == "ReduceProd") out.bound = std::pow(a.bound, n);
    if (name == "ReduceLogSum") out = {"", out.shape, a.type, std::log(n * (a.bound + 1)), true};
    if (out.bound > kMaxBound) return false;
    for (int64_t& axis : axes)
      if (chance(3)) axis -= rank;
    std::vector<std::string> inputs = {a.name};
    if (name == "ReduceLogSum") inputs = {abs_plus_one(a).name};
    if (name == "ReduceSum" && !axes.empty()) inputs.push_back(ints(axes));
    onnx::NodeProto& n_proto = node(name, inputs, out);
    if (name != "ReduceSum" && !axes.empty()) set_attr_ints(n_proto, "axes", axes);
    set_attr_int(n_proto, "keepdims", keepdims);
    add(out);
    return true;
  }

  bool softmax(const Value& a) {
    bool log = chance(3);
    int rank = static_cast<int>(a.shape.size());
    if (rank == 0) return false;
    int64_t axis = pick(2 * rank) - rank;
    Value out{"", a.shape, a.type, 1, true};
    if (log) {
      double n = static_cast<double>(a.shape[axis < 0 ? axis + rank : axis]);
      out = {"", a.shape, a.type, 2 * a.bound + std::log(n) + 1, false};
    }
    set_attr_int(node(log ? "LogSoftmax" : "Softmax", {a.name}, out), "axis", axis);
    add(out);
    return true;
  }

  // LayerNormalization over the axes from `axis` on, with scale and (mostly) bias inputs of
  // the normalized shape; sometimes its Mean output too.
  bool layer_norm(const Value& a) {
    int rank = static_cast<int>(a.shape.size());
    if (rank == 0) return false;
    int64_t axis = pick(2 * rank) - rank;
    std::vector<int64_t> normalized(a.shape.begin() + (axis < 0 ? axis + rank : axis),
                                    a.shape.end());
    std::vector<std::string> inputs = {a.name, new_input(normalized).name};
    if (!chance(4)) inputs.push_back(new_input(normalized).name);
    double n = static_cast<double>(elements(normalized));
    Value y{"", a.shape, a.type, 2 * std::sqrt(n) + 2};
    y.name = fresh("v");
    std::vector<std::string> outputs = {y.name};
    Value mean{fresh("v"), a.shape, kFloat32, a.bound};
    for (size_t d = a.shape.size() - normalized.size(); d < a.shape.size(); ++d)
      mean.shape[d] = 1;
    bool with_mean = chance(3);
    if (with_mean) outputs.push_back(mean.name);
    onnx::NodeProto& n_proto = m_.node("LayerNormalization", inputs, outputs, fresh("LayerNorm_"));
    set_attr_int(n_proto, "axis", axis);
    add(y);
    if (with_mean) add(mean);
    return true;
  }

  // Where(cond, a, b), cond a comparison of a with a partner or a constant.
  bool where(const Value& a) {
    Value threshold = chance(2) ? partner(a) : as_type({scalar(0.5f), {}, kFloat32}, a.type);
    Value cond{"", {}, kBool};
    broadcast(a.shape, threshold.shape, cond.shape);
    node(chance(2) ? "Greater" : "Less", {a.name, threshold.name}, cond);
    Value b = partner({"", cond.shape, a.type});
    Value out = a;
    out.read = false;
    broadcast(cond.shape, b.shape, out.shape);
    out.bound = std::max(a.bound, b.bound);
    out.nonnegative = a.nonnegative && b.nonnegative;
    node("Where", {cond.name, a.name, b.name}, out);
    add(out);
    return true;
  }

  // Expand to a shape that grows length-1 axes, adds leading ones, or (bidirectionally)
  // names 1 where the value has more.
  bool expand(const Value& a) {
    std::vector<int64_t> target = a.shape;
    for (int64_t& d : target)
      d = d == 1 ? (chance(2) ? random_dim() : 1) : (chance(4) ? 1 : d);
    if (target.size() < 4 && chance(2)) target.insert(target.begin(), random_dim());
    Value out = a;
    out.read = false;
    if (!broadcast(a.shape, target, out.shape)) return false;
    node("Expand", {a.name, ints(target)}, out);
    add(out);
    return true;
  }

  bool cast_op(const Value& a) {
    const int types[] = {float_, float_ == kFloat32 ? kFloat64 : kFloat32, kInt32};
    int type = types[pick(3)];
    if (type == a.type) return false;
    add(cast(a, type));
    return true;
  }

  bool transpose(const Value& a) {
    if (a.shape.size() < 2) return false;
    add(transposed(a, random_perm(static_cast<int>(a.shape.size()))));
    return true;
  }

  // A random permutation of `rank` axes other than the identity.
  std::vector<int64_t> random_perm(int rank) {
    std::vector<int64_t> perm(rank);
    for (int d = 0; d < rank; ++d)
      perm[d] = d;
    while (std::is_sorted(perm.begin(), perm.end()))
      for (int d = rank - 1; d > 0; --d)
        std::swap(perm[d], perm[pick(d + 1)]);
    return perm;
  }
  Value transposed(const Value& a, const std::vector<int64_t>& perm) {
    Value out = a;
    out.read = false;
    for (size_t d = 0; d < perm.size(); ++d)
      out.shape[d] = a.shape[static_cast<size_t>(perm[d])];
    set_attr_ints(node("Transpose", {a.name}, out), "perm", perm);
    return out;
  }

  // A MatMul of `a` (or a transpose of it) with a fresh B [k, n] or batched like A, B maybe
  // made by a Transpose of its input, the product maybe transposed: the layouts a GEMM library
  // call may read and write in place.
  bool matmul(const Value& a) {
    if (a.shape.size() < 2) return false;
    const std::vector<int64_t> lhs_perm =
        chance(2) ? random_perm(static_cast<int>(a.shape.size())) : std::vector<int64_t>{};
    const int64_t k = lhs_perm.empty() ? a.shape.back() : a.shape[lhs_perm.back()];
    const int64_t n = random_dim();
    const double bound = static_cast<double>(k) * a.bound * 2.0;
    if (bound > kMaxBound || k < 1 || elements(a.shape) / k * n > kMaxElements) return false;
    Value lhs = lhs_perm.empty() ? a : transposed(a, lhs_perm);
    std::vector<int64_t> b_shape = {k, n};
    if (chance(2)) b_shape.insert(b_shape.begin(), lhs.shape.begin(), lhs.shape.end() - 2);
    Value rhs;
    if (b_shape.size() >= 2 && chance(2)) {
      const std::vector<int64_t> perm = random_perm(static_cast<int>(b_shape.size()));
      std::vector<int64_t> stored(b_shape.size());
      for (size_t d = 0; d < perm.size(); ++d)
        stored[static_cast<size_t>(perm[d])] = b_shape[d];
      rhs = transposed(as_type(new_input(stored), a.type), perm);
    } else {
      rhs = as_type(new_input(b_shape), a.type);
    }
    // B's batch axes are A's or none: they broadcast.
    std::vector<int64_t> out_shape(lhs.shape.begin(), lhs.shape.end() - 2);
    out_shape.push_back(lhs.shape[lhs.shape.size() - 2]);
    out_shape.push_back(n);
    Value out{"", out_shape, a.type, bound, false};
    node("MatMul", {lhs.name, rhs.name}, out);
    if (chance(3)) out = transposed(out, random_perm(static_cast<int>(out.shape.size())));
    add(out);
    return true;
  }

  // Slice one or two axes: forward with step 1 or 2, or backward with step -1; bounds
  // sometimes negative.
  bool slice(const Value& a) {
    int rank = static_cast<int>(a.shape.size());
    std::vector<int64_t> starts, ends, axes, steps;
    Value out = a;
    out.read = false;
    for (int d = 0; d < rank; ++d) {
      int64_t len = a.shape[d];
      if (len < 2 || !chance(2)) continue;
      int64_t step = pick(4) == 3 ? -1 : 1 + pick(2);
      int64_t start, end, kept;
      if (step > 0) {
        start = pick(static_cast<int>(len) - 1);
        end = start + 1 + pick(static_cast<int>(len - start));
        kept = (end - start + step - 1) / step;
      } else {
        start = 1 + pick(static_cast<int>(len) - 1);
        end = static_cast<int64_t>(pick(static_cast<int>(start))) - 1; // -1: before element 0
        kept = start - end;
        if (end < 0) end = -len - 1;
      }
      if (chance(3)) start -= len;
      starts.push_back(start);
      ends.push_back(end);
      axes.push_back(chance(3) ? d - rank : d);
      steps.push_back(step);
      out.shape[d] = kept;
    }
    if (axes.empty()) return false;
    node("Slice", {a.name, ints(starts), ints(ends), ints(axes), ints(steps)}, out);
    add(out);
    return true;
  }

  // Concat along any axis with an existing value of a matching shape, or a fresh input.
  bool concat(const Value& a) {
    int rank = static_cast<int>(a.shape.size());
    if (rank == 0) return false;
    int axis = pick(rank);
    size_t other = operand();
    Value b = pool_[other];
    bool fits = b.type == a.type && b.shape.size() == a.shape.size();
    for (int d = 0; fits && d < rank; ++d)
      fits = d == axis || b.shape[d] == a.shape[d];
    if (!fits) {
      b.shape = a.shape;
      b.shape[axis] = random_dim();
    }
    Value out = a;
    out.read = false;
    out.shape[axis] += b.shape[axis];
    if (elements(out.shape) > kMaxElements) return false;
    if (fits)
      pool_[other].read = true;
    else
      b = as_type(new_input(b.shape), a.type);
    out.bound = std::max(a.bound, b.bound);
    out.nonnegative = a.nonnegative && b.nonnegative;
    set_attr_int(node("Concat", {a.name, b.name}, out), "axis", chance(3) ? axis - rank : axis);
    add(out);
    return true;
  }

  // Reshape to rank 1 to 4 with the same elements: the prime factors spread over the axes,
  // sometimes one of them written -1.
  bool reshape(const Value& a) {
    std::vector<int64_t> factors;
    int64_t n = elements(a.shape);
    for (int64_t p = 2; p * p <= n; ++p)
      for (; n % p == 0; n /= p)
        factors.push_back(p);
    if (n > 1) factors.push_back(n);
    std::vector<int64_t> shape(1 + pick(4), 1);
    for (int64_t f : factors)
      shape[pick(static_cast<int>(shape.size()))] *= f;
    if (shape == a.shape) return false;
    Value out = a;
    out.read = false;
    out.shape = shape;
    if (chance(4)) shape[pick(static_cast<int>(shape.size()))] = -1;
    node("Reshape", {a.name, ints(shape)}, out);
    add(out);
    return true;
  }

  std::mt19937 rng_;
  ModelBuilder& m_;
  int float_;
  std::string prefix_;
  std::vector<Value> pool_;
  int next_ = 0;
};

// A model of `components` independent random DAGs, named "c0_", "c1_", ..., each of 3 to 12
// ops. Load it with load_graph (test_emit_fused_support.h).
inline ModelBuilder random_model(uint32_t seed, int components,
                                 int float_type = onnx::TensorProto::FLOAT) {
  ModelBuilder m(17);
  RandomModelWriter writer(seed, m, float_type);
  std::mt19937 sizes(seed);
  for (int c = 0; c < components; ++c)
    writer.component("c" + std::to_string(c) + "_", 3 + static_cast<int>(sizes() % 10));
  return m;
}

} // namespace stitch::test
