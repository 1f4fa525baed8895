// lower-composites: one lowering function per composite ONNX op (see lower_composites.h).
#include "graph/lower_composites.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <optional>
#include <set>

#include "graph/constant.h"
#include "graph/error.h"
#include "graph/infer_context.h"
#include "graph/infer_dims.h"
#include "graph/op_params.h"
#include "graph/shape_rules.h"

namespace stitch {

namespace {

// Emits the primitive nodes that replace one composite node, in order, into `out`.
class Lowering {
public:
  Lowering(Graph& graph, const Node& composite, std::set<std::string>& names,
           std::vector<Node>& out)
      : graph_(graph), composite_(composite), names_(names), out_(out), first_(out.size()),
        base_(composite.name.empty() ? graph.tensor(composite.outputs[0]).name : composite.name) {}

  NodeContext context() const { return NodeContext(graph_, composite_); }
  TensorId input(int i) const {
    return i < static_cast<int>(composite_.inputs.size()) ? composite_.inputs[i] : kNoTensor;
  }
  TensorId output(int i) const {
    return i < static_cast<int>(composite_.outputs.size()) ? composite_.outputs[i] : kNoTensor;
  }
  DType dtype(TensorId t) const { return graph_.tensor(t).dtype; }
  Shape shape(TensorId t) const { return graph_.tensor(t).shape; }
  SymShape sym_shape(TensorId t) const { return graph_.tensor(t).sym_shape(); }

  // A new node writing a new tensor "<composite>/<role>", typed by its shape rule.
  TensorId op(OpKind kind, std::vector<TensorId> inputs, const std::string& role,
              std::map<std::string, Attribute> attrs = {}) {
    TensorId out = new_tensor(role);
    emit(kind, std::move(inputs), out, std::move(attrs));
    return out;
  }

  // A Reduce* over `axes` keeping them (size 1), with the axes where the node's opset has them.
  TensorId reduce(OpKind kind, TensorId x, const std::vector<int64_t>& axes,
                  const std::string& role) {
    std::map<std::string, Attribute> attrs = {{"keepdims", Attribute{int64_t{1}}}};
    std::vector<TensorId> inputs = {x};
    if (axes.empty())
      attrs["noop_with_empty_axes"] = Attribute{int64_t{1}}; // rows of one element
    else if (composite_.opset >= reduce_axes_input_opset(kind))
      inputs.push_back(int64_constant(role + "Axes", {static_cast<int64_t>(axes.size())}, axes));
    else
      attrs["axes"] = Attribute{axes};
    return op(kind, std::move(inputs), role, std::move(attrs));
  }

  // `x` as `to`: a Cast node, a converted constant, or `x` itself.
  TensorId cast(TensorId x, DType to) {
    if (x == kNoTensor || dtype(x) == to) return x;
    const Tensor& t = graph_.tensor(x);
    if (t.is_constant() && t.view_of == kNoTensor)
      return constant(t.name + "/" + std::string(dtype_name(to)), to, t.shape,
                      constant_as_double(t));
    return op(OpKind::Cast, {x}, t.name.substr(t.name.rfind('/') + 1) + "Cast",
              {{"to", Attribute{int64_t{dtype_onnx_code(to)}}}});
  }

  // `x` under `to` (same element count): a Reshape node, a constant sharing the bytes, or `x`.
  // The target may be symbolic (a batch or sequence): its constant carries the expressions.
  TensorId reshape(TensorId x, const SymShape& to, const std::string& role) {
    if (x == kNoTensor || graph_.tensor(x).sym_shape() == to) return x;
    const Tensor& t = graph_.tensor(x);
    if (t.is_constant() && t.view_of == kNoTensor && is_static(to)) {
      Tensor r = t;
      r.name = fresh_name(base_ + "/" + role);
      r.shape.clear();
      for (const DimExpr& d : to)
        r.shape.push_back(d.constant_value());
      return graph_.add_tensor(std::move(r));
    }
    const TensorId target = int_values(role + "Shape", to);
    std::map<std::string, Attribute> attrs;
    for (const DimExpr& d : to)
      if (d == DimExpr(0)) attrs["allowzero"] = Attribute{int64_t{1}};
    return op(OpKind::Reshape, {x, target}, role, std::move(attrs));
  }

  // `x` with its axes permuted (axis j of the result is axis perm[j] of `x`): a Transpose
  // node, a permuted constant, or `x` itself.
  TensorId transpose(TensorId x, const std::vector<int64_t>& perm, const std::string& role) {
    bool identity = true;
    for (size_t j = 0; j < perm.size(); ++j)
      identity = identity && perm[j] == static_cast<int64_t>(j);
    if (identity) return x;
    const Tensor& t = graph_.tensor(x);
    if (t.is_constant() && t.view_of == kNoTensor) {
      Shape shape;
      for (int64_t p : perm)
        shape.push_back(t.shape[static_cast<size_t>(p)]);
      auto data = std::make_shared<ConstantData>();
      data->bytes = transpose_bytes(t.constant->bytes, t.shape, perm,
                                    static_cast<size_t>(dtype_size(t.dtype)));
      return constant_tensor(base_ + "/" + role, t.dtype, std::move(shape), std::move(data));
    }
    return op(OpKind::Transpose, {x}, role, {{"perm", Attribute{perm}}});
  }

  // A constant int64 list of `values` (a shape, say), which may depend on the symbols: its
  // elements at the planning binding, and their expressions (set_shape_value). With `scalar`,
  // a 0-D tensor of the one value (Range's limit, Trilu's k).
  TensorId int_values(const std::string& role, const SymShape& values, bool scalar = false) {
    const TensorId t = int64_constant(role, {}, {});
    set_shape_value(graph_, graph_.tensor(t), values);
    if (scalar) graph_.tensor(t).shape.clear();
    return t;
  }

  TensorId ints(const std::string& role, const std::vector<int64_t>& values) {
    return int64_constant(role, {static_cast<int64_t>(values.size())}, values);
  }

  // Slice of `x` along `axis`: [start, end) by `step`.
  TensorId slice(TensorId x, int64_t axis, int64_t start, int64_t end, int64_t step,
                 const std::string& role) {
    std::vector<TensorId> inputs = {x, int64_constant(role + "Starts", {1}, {start}),
                                    int64_constant(role + "Ends", {1}, {end}),
                                    int64_constant(role + "Axes", {1}, {axis})};
    if (step != 1) inputs.push_back(int64_constant(role + "Steps", {1}, {step}));
    return op(OpKind::Slice, std::move(inputs), role);
  }

  TensorId scalar(const std::string& role, DType dtype, double value) {
    return constant(base_ + "/" + role, dtype, {}, {value});
  }
  // A constant "<composite>/<role>".
  TensorId values(const std::string& role, DType dtype, Shape shape,
                  const std::vector<double>& values) {
    return constant(base_ + "/" + role, dtype, std::move(shape), values);
  }
  TensorId constant(const std::string& name, DType dtype, Shape shape,
                    const std::vector<double>& values) {
    return constant_tensor(name, dtype, std::move(shape), make_constant_from_double(dtype, values));
  }

  // Makes `value` the composite's output tensor `original` (which keeps its name): the node
  // producing `value` writes `original` instead, or a Cast does where the types differ.
  void bind(TensorId value, TensorId original) {
    if (original == kNoTensor) return;
    if (dtype(value) != dtype(original)) {
      emit(OpKind::Cast, {value}, original,
           {{"to", Attribute{int64_t{dtype_onnx_code(dtype(original))}}}});
      return;
    }
    bool produced = false;
    for (size_t n = first_; n < out_.size(); ++n) {
      for (TensorId& t : out_[n].inputs)
        if (t == value) t = original;
      for (TensorId& t : out_[n].outputs)
        if (t == value) {
          t = original;
          produced = true;
        }
    }
    STITCH_INTERNAL_CHECK(produced,
                          "lower-composites: '{}' is not computed by the lowering of '{}'",
                          graph_.tensor(value).name, base_);
  }

private:
  void emit(OpKind kind, std::vector<TensorId> inputs, TensorId output,
            std::map<std::string, Attribute> attrs) {
    Node n;
    n.op = kind;
    std::string name = base_ + "/" + std::string(op_name(kind));
    int& count = node_names_[name];
    n.name = count++ == 0 ? name : fmt::format("{}_{}", name, count - 1);
    n.inputs = std::move(inputs);
    n.outputs = {output};
    n.attrs = std::move(attrs);
    n.opset = composite_.opset;
    InferContext ctx(graph_, n);
    shape_rule(kind)(ctx);
    infer_node_dims(ctx); // the expressions too, so that later reshapes compare them
    out_.push_back(std::move(n));
  }

  TensorId new_tensor(const std::string& role) {
    Tensor t;
    t.name = fresh_name(base_ + "/" + role);
    return graph_.add_tensor(std::move(t));
  }

  TensorId int64_constant(const std::string& role, Shape shape,
                          const std::vector<int64_t>& values) {
    return constant_tensor(base_ + "/" + role, DType::Int64, std::move(shape),
                           make_constant_from_int64(DType::Int64, values));
  }

  // A new constant tensor named after `name` (made unique) holding `value`.
  TensorId constant_tensor(const std::string& name, DType dtype, Shape shape,
                           std::shared_ptr<const ConstantData> value) {
    Tensor t;
    t.name = fresh_name(name);
    t.dtype = dtype;
    t.shape = std::move(shape);
    t.typed = true;
    t.constant = std::move(value);
    return graph_.add_tensor(std::move(t));
  }

  std::string fresh_name(const std::string& want) { return stitch::fresh_name(names_, want); }

  Graph& graph_;
  const Node& composite_;
  std::set<std::string>& names_;
  std::vector<Node>& out_;
  size_t first_;
  std::string base_;
  std::map<std::string, int> node_names_;
};

// Statistics are accumulated in float32, or float64 where the input or stash_type is.
DType statistics_type(const Lowering& l, bool has_stash) {
  NodeContext ctx = l.context();
  if (l.dtype(l.input(0)) == DType::Float64) return DType::Float64;
  if (has_stash && ctx.attr_int("stash_type", 1) == dtype_onnx_code(DType::Float64))
    return DType::Float64;
  return DType::Float32;
}

std::vector<int64_t> axes_from(int64_t first, int64_t rank) {
  std::vector<int64_t> axes;
  for (int64_t a = first; a < rank; ++a)
    axes.push_back(a);
  return axes;
}

// [C] as [C, 1, ...] against an input of `rank` dims laid out [N, C, D...].
Shape channel_shape(int64_t channels, size_t rank) {
  Shape s(rank - 1, 1);
  s[0] = channels;
  return s;
}

struct Normalized {
  TensorId mean, deviation, std_dev, normalized;
};

// (x - mean) / sqrt(mean((x - mean)^2) + epsilon) over `axes`: the two-pass variance.
Normalized normalize(Lowering& l, TensorId x, const std::vector<int64_t>& axes, double epsilon) {
  Normalized r;
  r.mean = l.reduce(OpKind::ReduceMean, x, axes, "Mean");
  r.deviation = l.op(OpKind::Sub, {x, r.mean}, "Deviation");
  TensorId square = l.op(OpKind::Mul, {r.deviation, r.deviation}, "Square");
  TensorId variance = l.reduce(OpKind::ReduceMean, square, axes, "Variance");
  TensorId shifted =
      l.op(OpKind::Add, {variance, l.scalar("Epsilon", l.dtype(x), epsilon)}, "VarianceEpsilon");
  r.std_dev = l.op(OpKind::Sqrt, {shifted}, "StdDev");
  r.normalized = l.op(OpKind::Div, {r.deviation, r.std_dev}, "Normalized");
  return r;
}

// Softmax (or LogSoftmax) of `x` over `axes`, max-subtracted, in the statistics type.
TensorId softmax_of(Lowering& l, TensorId x, const std::vector<int64_t>& axes, bool log) {
  x = l.cast(x, l.dtype(x) == DType::Float64 ? DType::Float64 : DType::Float32);
  TensorId max = l.reduce(OpKind::ReduceMax, x, axes, "Max");
  TensorId shifted = l.op(OpKind::Sub, {x, max}, "Shifted");
  TensorId exp = l.op(OpKind::Exp, {shifted}, "Exp");
  TensorId sum = l.reduce(OpKind::ReduceSum, exp, axes, "Sum");
  return log ? l.op(OpKind::Sub, {shifted, l.op(OpKind::Log, {sum}, "LogSum")}, "LogSoftmax")
             : l.op(OpKind::Div, {exp, sum}, "Softmax");
}

void lower_softmax(Lowering& l, bool log) {
  NodeContext ctx = l.context();
  const int64_t rank = ctx.rank(0);
  std::vector<int64_t> axes;
  if (ctx.opset() >= 13) {
    axes = {ctx.normalize_axis(ctx.attr_int("axis", -1), rank)};
  } else {
    // Before opset 13: the input coerced to 2-D at `axis`, that is, rows of the trailing axes.
    int64_t axis = ctx.attr_int("axis", 1);
    axes = axes_from(axis < 0 ? axis + rank : axis, rank);
  }
  l.bind(softmax_of(l, l.input(0), axes, log), l.output(0));
}

void lower_layer_norm(Lowering& l) {
  NodeContext ctx = l.context();
  const int64_t rank = ctx.rank(0);
  const std::vector<int64_t> axes =
      axes_from(ctx.normalize_axis(ctx.attr_int("axis", -1), rank), rank);
  const DType t = statistics_type(l, true);
  Normalized n = normalize(l, l.cast(l.input(0), t), axes, ctx.attr_float("epsilon", 1e-5));
  TensorId y = l.op(OpKind::Mul, {n.normalized, l.cast(l.input(1), t)}, "Scaled");
  if (l.input(2) != kNoTensor) y = l.op(OpKind::Add, {y, l.cast(l.input(2), t)}, "Biased");
  l.bind(y, l.output(0));
  l.bind(n.mean, l.output(1));
  if (l.output(2) != kNoTensor)
    l.bind(l.op(OpKind::Reciprocal, {n.std_dev}, "InvStdDev"), l.output(2));
}

void lower_rms_norm(Lowering& l) {
  NodeContext ctx = l.context();
  const int64_t rank = ctx.rank(0);
  const std::vector<int64_t> axes =
      axes_from(ctx.normalize_axis(ctx.attr_int("axis", -1), rank), rank);
  const DType t = statistics_type(l, true);
  TensorId x = l.cast(l.input(0), t);
  TensorId square = l.op(OpKind::Mul, {x, x}, "Square");
  TensorId mean = l.reduce(OpKind::ReduceMean, square, axes, "MeanSquare");
  TensorId shifted =
      l.op(OpKind::Add, {mean, l.scalar("Epsilon", t, ctx.attr_float("epsilon", 1e-5))},
           "MeanSquareEpsilon");
  TensorId rms = l.op(OpKind::Sqrt, {shifted}, "RMS");
  TensorId normalized = l.op(OpKind::Div, {x, rms}, "Normalized");
  l.bind(l.op(OpKind::Mul, {normalized, l.cast(l.input(1), t)}, "Scaled"), l.output(0));
}

void lower_instance_norm(Lowering& l) {
  NodeContext ctx = l.context();
  const Shape x_shape = ctx.shape(0);
  const DType t = statistics_type(l, false);
  Normalized n = normalize(l, l.cast(l.input(0), t), axes_from(2, ctx.rank(0)),
                           ctx.attr_float("epsilon", 1e-5));
  const SymShape per_channel = sym_shape_of(channel_shape(x_shape[1], x_shape.size()));
  TensorId scale = l.reshape(l.cast(l.input(1), t), per_channel, "ScalePerChannel");
  TensorId bias = l.reshape(l.cast(l.input(2), t), per_channel, "BiasPerChannel");
  TensorId y = l.op(OpKind::Mul, {n.normalized, scale}, "Scaled");
  l.bind(l.op(OpKind::Add, {y, bias}, "Biased"), l.output(0));
}

// Over [N, G, C/G * D...]; opset 18 scales and shifts each group, opset 21 each channel.
void lower_group_norm(Lowering& l) {
  NodeContext ctx = l.context();
  const Shape x_shape = ctx.shape(0);
  const SymShape x_dims = ctx.input(0).sym_shape();
  const int64_t groups = ctx.req_int("num_groups");
  const DType t = statistics_type(l, true);
  DimExpr per_group = 1;
  for (size_t i = 1; i < x_dims.size(); ++i)
    per_group = per_group * x_dims[i];
  std::optional<DimExpr> group_size = DimExpr::exact_div(per_group, DimExpr(groups));
  if (!group_size)
    ctx.fail("its {} elements per sample split into {} groups only for some values of the "
             "symbolic dims",
             per_group.to_string(), groups);
  const SymShape grouped = {x_dims[0], groups, *group_size};
  TensorId x = l.cast(l.reshape(l.input(0), grouped, "Grouped"), t);
  Normalized n = normalize(l, x, {2}, ctx.attr_float("epsilon", 1e-5));
  TensorId normalized = n.normalized;
  SymShape operand = {groups, 1};
  if (ctx.opset() >= 21) {
    normalized = l.reshape(normalized, x_dims, "NormalizedUngrouped");
    operand = sym_shape_of(channel_shape(x_shape[1], x_shape.size()));
  }
  TensorId scale = l.reshape(l.cast(l.input(1), t), operand, "ScaleBroadcast");
  TensorId bias = l.reshape(l.cast(l.input(2), t), operand, "BiasBroadcast");
  TensorId y = l.op(OpKind::Mul, {normalized, scale}, "Scaled");
  y = l.reshape(l.op(OpKind::Add, {y, bias}, "Biased"), x_dims, "Ungrouped");
  l.bind(y, l.output(0));
}

// Inference BatchNormalization: x * s + b' per channel, s = scale / sqrt(var + epsilon),
// b' = B - mean * s; computed on the host when the four operands are constants.
void lower_batch_norm(Lowering& l) {
  NodeContext ctx = l.context();
  const Shape x_shape = ctx.shape(0);
  const DType t = statistics_type(l, false);
  const double epsilon = ctx.attr_float("epsilon", 1e-5);
  const Shape per_channel = channel_shape(x_shape[1], x_shape.size());
  bool constants = true;
  for (int i = 1; i < 5; ++i)
    constants = constants && ctx.input(i).is_constant();
  TensorId s, b;
  if (constants) {
    std::vector<double> scale = constant_as_double(ctx.input(1)),
                        bias = constant_as_double(ctx.input(2));
    std::vector<double> mean = constant_as_double(ctx.input(3)),
                        var = constant_as_double(ctx.input(4));
    for (size_t c = 0; c < scale.size(); ++c) {
      scale[c] /= std::sqrt(var[c] + epsilon);
      bias[c] -= mean[c] * scale[c];
    }
    s = l.constant(ctx.input(1).name + "/Folded", t, per_channel, scale);
    b = l.constant(ctx.input(2).name + "/Folded", t, per_channel, bias);
  } else {
    TensorId shifted = l.op(OpKind::Add, {l.cast(l.input(4), t), l.scalar("Epsilon", t, epsilon)},
                            "VarianceEpsilon");
    TensorId std_dev = l.op(OpKind::Sqrt, {shifted}, "StdDev");
    s = l.op(OpKind::Div, {l.cast(l.input(1), t), std_dev}, "Factor");
    TensorId moved = l.op(OpKind::Mul, {l.cast(l.input(3), t), s}, "MeanScaled");
    b = l.op(OpKind::Sub, {l.cast(l.input(2), t), moved}, "Shift");
    s = l.reshape(s, sym_shape_of(per_channel), "FactorPerChannel");
    b = l.reshape(b, sym_shape_of(per_channel), "ShiftPerChannel");
  }
  TensorId y = l.op(OpKind::Mul, {l.cast(l.input(0), t), s}, "Scaled");
  l.bind(l.op(OpKind::Add, {y, b}, "Shifted"), l.output(0));
}

// RotaryEmbedding as the ONNX function body computes it: X as [batch, sequence, heads, head]
// (a 4-D X transposed, a 3-D one reshaped), the rotated part's halves (or its even and odd
// elements, interleaved) x1 and x2 with the caches' first rotary/2 values per position (looked
// up by position_ids when given): x1 cos - x2 sin and x1 sin + x2 cos, side by side (or
// interleaved again), then the part not rotated, in X's layout. The Slices, Concats and the
// head transposes are index remappings the planner fuses into one kernel with the arithmetic.
void lower_rotary_embedding(Lowering& l) {
  const RotaryParams r = read_rotary_params(l.context());
  const SymShape xs = l.sym_shape(l.input(0));
  const bool four = r.four_d, interleaved = r.interleaved;
  // The batch and sequence may be symbolic; the heads are static.
  const DimExpr batch = xs[0], sequence = four ? xs[2] : xs[1];
  const int64_t heads = r.heads, head = r.head;
  const int64_t rotary = r.rotary, half = rotary / 2;
  const std::map<std::string, Attribute> swap_heads = {
      {"perm", Attribute{std::vector<int64_t>{0, 2, 1, 3}}}};
  TensorId x = four ? l.op(OpKind::Transpose, {l.input(0)}, "XIn", swap_heads)
                    : l.reshape(l.input(0), {batch, sequence, heads, head}, "XIn");
  TensorId trig[2] = {l.input(1), l.input(2)};
  const char* names[2] = {"Cos", "Sin"};
  for (int i = 0; i < 2; ++i) {
    if (l.input(3) != kNoTensor)
      trig[i] = l.op(OpKind::Gather, {trig[i], l.input(3)}, std::string(names[i]) + "Gathered");
    if (l.shape(trig[i]).back() != half)
      trig[i] = l.slice(trig[i], 2, 0, half, 1, std::string(names[i]) + "Sliced");
    trig[i] = l.reshape(trig[i], {batch, sequence, 1, half}, std::string(names[i]) + "PerHead");
  }
  const TensorId rotated_part = rotary == head ? x : l.slice(x, 3, 0, rotary, 1, "XToRotate");
  const TensorId x1 = interleaved ? l.slice(rotated_part, 3, 0, rotary, 2, "X1")
                                  : l.slice(rotated_part, 3, 0, half, 1, "X1");
  const TensorId x2 = interleaved ? l.slice(rotated_part, 3, 1, rotary, 2, "X2")
                                  : l.slice(rotated_part, 3, half, rotary, 1, "X2");
  const TensorId real =
      l.op(OpKind::Sub,
           {l.op(OpKind::Mul, {trig[0], x1}, "CosX1"), l.op(OpKind::Mul, {trig[1], x2}, "SinX2")},
           "Real");
  const TensorId imaginary =
      l.op(OpKind::Add,
           {l.op(OpKind::Mul, {trig[1], x1}, "SinX1"), l.op(OpKind::Mul, {trig[0], x2}, "CosX2")},
           "Imaginary");
  TensorId rotated;
  if (interleaved) {
    const SymShape pairs = {batch, sequence, heads, half, 1};
    const TensorId both =
        l.op(OpKind::Concat,
             {l.reshape(real, pairs, "RealPairs"), l.reshape(imaginary, pairs, "ImaginaryPairs")},
             "Interleaved", {{"axis", Attribute{int64_t{4}}}});
    rotated = l.reshape(both, {batch, sequence, heads, rotary}, "XRotated");
  } else {
    rotated =
        l.op(OpKind::Concat, {real, imaginary}, "XRotated", {{"axis", Attribute{int64_t{3}}}});
  }
  if (rotary < head)
    rotated = l.op(OpKind::Concat, {rotated, l.slice(x, 3, rotary, head, 1, "XNoRotate")},
                   "XConcat", {{"axis", Attribute{int64_t{3}}}});
  const TensorId y =
      four ? l.op(OpKind::Transpose, {rotated}, "Y", swap_heads) : l.reshape(rotated, xs, "Y");
  l.bind(y, l.output(0));
}

// Attention as the ONNX function body computes it (opset 23): 3-D Q, K and V split into heads
// ([batch, heads, sequence, head]); past keys and values before the new ones (the present
// outputs); K and V repeated for grouped-query heads (kv head j serves q heads j*g .. j*g+g-1,
// an Expand the GEMM reads in place); scores (Q sqrt(scale)) (K^T sqrt(scale)); the mask added
// (a bool one as 0 / -inf) and the causal mask (key j after query i + past: -inf); softcap
// c tanh(s / c); softmax over the keys, in float32; times V; 3-D: heads merged again. The
// scores at the stage qk_matmul_output_mode names are that output. The planner then runs it as
// the chain it plans for attention written out by an exporter. A mask shorter than the keys is
// padded with -inf (false); nonpad_kv_seqlen (opset 24) masks each batch's keys from its count
// on.
void lower_attention(Lowering& l) {
  NodeContext ctx = l.context();
  const DType t = l.dtype(l.input(0));
  const AttentionParams a = read_attention_params(ctx);
  // The batch and the sequences over the symbols (the shape rule's read_attention_dims; the
  // heads and head sizes are fixed).
  const AttentionDims d = read_attention_dims(ctx);
  if (!d.not_symbolic.empty()) ctx.fail("over symbolic dims {}", d.not_symbolic);
  const bool three = !a.four_d;
  const DimExpr batch = d.batch, q_sequence = d.q_sequence, kv_sequence = d.kv_sequence;
  const DimExpr past = d.past, total = d.total;
  const int64_t q_heads = a.q_heads, kv_heads = a.kv_heads, head = a.head, v_head = a.v_head;
  const std::map<std::string, Attribute> swap_heads = {
      {"perm", Attribute{std::vector<int64_t>{0, 2, 1, 3}}}};
  auto heads_of = [&](TensorId x, const DimExpr& sequence, int64_t heads, int64_t size,
                      const std::string& role) {
    if (!three) return x;
    return l.op(OpKind::Transpose, {l.reshape(x, {batch, sequence, heads, size}, role + "Heads")},
                role, swap_heads);
  };
  const TensorId q = heads_of(l.input(0), q_sequence, q_heads, head, "Q");
  TensorId k = heads_of(l.input(1), kv_sequence, kv_heads, head, "K");
  TensorId v = heads_of(l.input(2), kv_sequence, kv_heads, v_head, "V");
  if (l.input(4) != kNoTensor) {
    const std::map<std::string, Attribute> on_sequence = {{"axis", Attribute{int64_t{2}}}};
    k = l.op(OpKind::Concat, {l.input(4), k}, "PresentKey", on_sequence);
    v = l.op(OpKind::Concat, {l.input(5), v}, "PresentValue", on_sequence);
  }
  const int64_t group = q_heads / kv_heads;
  auto repeated = [&](TensorId x, int64_t size, const std::string& role) {
    if (group == 1) return x;
    const TensorId one = l.reshape(x, {batch, kv_heads, 1, total, size}, role + "PerGroup");
    const TensorId wide = l.op(
        OpKind::Expand, {one, l.int_values(role + "Shape", {batch, kv_heads, group, total, size})},
        role + "Repeated");
    return l.reshape(wide, {batch, q_heads, total, size}, role + "ForHeads");
  };
  const TensorId keys = repeated(k, head, "K");
  const TensorId values = repeated(v, v_head, "V");
  const double scale = ctx.has_attr("scale") ? ctx.attr_float("scale", 1.0)
                                             : 1.0 / std::sqrt(static_cast<double>(head));
  const TensorId root = l.scalar("ScaleSqrt", t, std::sqrt(scale));
  const TensorId key_t = l.op(OpKind::Transpose, {keys}, "KTranspose",
                              {{"perm", Attribute{std::vector<int64_t>{0, 1, 3, 2}}}});
  TensorId scores =
      l.op(OpKind::MatMul,
           {l.op(OpKind::Mul, {q, root}, "QScaled"), l.op(OpKind::Mul, {key_t, root}, "KScaled")},
           "Scores");
  TensorId stage[4] = {scores, kNoTensor, kNoTensor, kNoTensor};
  TensorId bias = kNoTensor;
  const double inf = std::numeric_limits<double>::infinity();
  if (l.input(3) != kNoTensor) {
    bias = l.input(3);
    // A mask shorter than the keys: the keys after it are masked out.
    const SymShape ms = l.sym_shape(bias);
    if (!ms.empty() && ms.back() != total) {
      if (!ms.back().is_constant() || !total.is_constant())
        ctx.fail("over symbolic dims the mask's last dim {} must be the keys' {} (past and new)",
                 ms.back().to_string(), total.to_string());
      if (ms.back().constant_value() < total.constant_value()) {
        std::vector<int64_t> pads(2 * ms.size(), 0);
        pads[2 * ms.size() - 1] = total.constant_value() - ms.back().constant_value();
        std::vector<TensorId> inputs = {bias, l.ints("MaskPads", pads)};
        if (l.dtype(bias) != DType::Bool) inputs.push_back(l.scalar("MaskPadValue", t, -inf));
        bias = l.op(OpKind::Pad, std::move(inputs), "MaskPadded");
      }
    }
    if (l.dtype(bias) == DType::Bool)
      bias = l.op(OpKind::Where, {bias, l.scalar("Zero", t, 0.0), l.scalar("NegInf", t, -inf)},
                  "MaskBias");
  }
  if (ctx.attr_int("is_causal", 0) != 0) {
    // Query i sees the keys j <= i + past: a constant at fixed shapes; over symbolic dims -inf
    // above the diagonal shifted by the past length (Trilu's upper part from k = past + 1).
    TensorId mask = kNoTensor;
    if (q_sequence.is_constant() && total.is_constant()) {
      const int64_t rows = q_sequence.constant_value(), cols = total.constant_value();
      const int64_t shift = past.constant_value();
      std::vector<double> causal(static_cast<size_t>(rows * cols));
      for (int64_t i = 0; i < rows; ++i)
        for (int64_t j = 0; j < cols; ++j)
          causal[static_cast<size_t>(i * cols + j)] = i + shift < j ? -inf : 0.0;
      mask = l.values("CausalMask", t, {rows, cols}, causal);
    } else {
      const TensorId filled =
          l.op(OpKind::Expand,
               {l.scalar("MaskedOut", t, -inf), l.int_values("CausalShape", {q_sequence, total})},
               "CausalFill");
      mask = l.op(OpKind::Trilu, {filled, l.int_values("CausalShift", {past + 1}, true)},
                  "CausalMask", {{"upper", Attribute{int64_t{1}}}});
    }
    bias = bias == kNoTensor ? mask : l.op(OpKind::Add, {bias, mask}, "Bias");
  }
  if (l.input(6) != kNoTensor) {
    // Key j of batch b is padding from nonpad_kv_seqlen[b] on.
    TensorId positions = kNoTensor;
    if (total.is_constant()) {
      std::vector<double> at(static_cast<size_t>(total.constant_value()));
      for (size_t j = 0; j < at.size(); ++j)
        at[j] = static_cast<double>(j);
      positions = l.values("KeyPositions", DType::Int64, {1, total.constant_value()}, at);
    } else {
      positions = l.reshape(
          l.op(OpKind::Range,
               {l.int_values("KeyFirst", {DimExpr(0)}, true), l.int_values("KeyEnd", {total}, true),
                l.int_values("KeyStep", {DimExpr(1)}, true)},
               "KeyRange"),
          {DimExpr(1), total}, "KeyPositions");
    }
    const TensorId valid =
        l.op(OpKind::Less, {positions, l.reshape(l.input(6), {batch, DimExpr(1)}, "ValidKeys")},
             "KeyIsValid");
    const TensorId padding =
        l.op(OpKind::Where, {valid, l.scalar("Zero", t, 0.0), l.scalar("NegInf", t, -inf)},
             "PaddingBias");
    const TensorId per_batch =
        l.reshape(padding, {batch, DimExpr(1), DimExpr(1), total}, "PaddingBiasPerBatch");
    bias = bias == kNoTensor ? per_batch : l.op(OpKind::Add, {bias, per_batch}, "Bias");
  }
  if (bias != kNoTensor) scores = l.op(OpKind::Add, {scores, bias}, "BiasedScores");
  stage[1] = scores;
  const double softcap = ctx.attr_float("softcap", 0.0);
  if (softcap > 0) {
    const TensorId c = l.scalar("Softcap", t, softcap);
    scores =
        l.op(OpKind::Mul,
             {l.op(OpKind::Tanh, {l.op(OpKind::Div, {scores, c}, "SoftcapDiv")}, "SoftcapTanh"), c},
             "CappedScores");
  }
  stage[2] = scores;
  const TensorId weights = l.cast(softmax_of(l, scores, {3}, false), t);
  stage[3] = weights;
  TensorId y = l.op(OpKind::MatMul, {weights, values}, "Output");
  if (three)
    y = l.reshape(l.op(OpKind::Transpose, {y}, "OutputMerged", swap_heads),
                  {batch, q_sequence, q_heads * v_head}, "Y");
  // The outputs, once every node is made (binding renames a value in the nodes made so far). A
  // present output that is the model's own K or V (no past, 4-D) is a copy of it.
  for (int i : {1, 2}) {
    TensorId present = i == 1 ? k : v;
    if (l.output(i) == kNoTensor) continue;
    if (present == l.input(i))
      present = l.op(OpKind::Identity, {present}, i == 1 ? "KeyCopy" : "ValueCopy");
    l.bind(present, l.output(i));
  }
  if (l.output(3) != kNoTensor)
    l.bind(stage[ctx.attr_int("qk_matmul_output_mode", 0)], l.output(3));
  l.bind(y, l.output(0));
}

// ---- Einsum as a matrix product ----

// The roles of a two-operand Einsum's labels when it is a (batched) matrix product: batch
// labels (both operands and the output), rows (the first operand and the output), columns
// (the second operand and the output) and summed labels (both operands, not the output), each
// list in the order the result is built in, and each label's dim.
struct EinsumProduct {
  std::vector<int> batch, rows, columns, summed;
  std::map<int, DimExpr> dims;
  int first = 0;       // the input taking the rows (the other takes the columns)
  EinsumLabels labels; // the equation's (read_einsum_labels)
};

bool contains(const std::vector<int>& labels, int label) {
  return std::find(labels.begin(), labels.end(), label) != labels.end();
}

// The permutation taking axes labelled `from` to the order `to` (axis j of the result is axis
// perm[j] of the source).
std::vector<int64_t> label_perm(const std::vector<int>& from, const std::vector<int>& to) {
  std::vector<int64_t> perm;
  for (int label : to)
    perm.push_back(std::find(from.begin(), from.end(), label) - from.begin());
  return perm;
}

bool is_identity(const std::vector<int64_t>& perm) {
  for (size_t j = 0; j < perm.size(); ++j)
    if (perm[j] != static_cast<int64_t>(j)) return false;
  return true;
}

// The Einsum as a product, or nullopt where it is none: not two floating-point operands, a
// label repeated in one term (a diagonal), summed in one operand only, or of different dims in
// the two (a broadcast). The rows go to the operand that leaves the output in the product's
// order, else to the one that needs fewer Transposes of non-constant values.
std::optional<EinsumProduct> einsum_product(const Graph& graph, const Node& node) {
  if (node.inputs.size() != 2 || node.outputs.empty()) return std::nullopt;
  for (TensorId t : node.inputs) {
    const DType d = graph.tensor(t).dtype;
    if (d != DType::Float32 && d != DType::Float16 && d != DType::BFloat16) return std::nullopt;
  }
  const EinsumLabels e = read_einsum_labels(NodeContext(graph, node));
  EinsumProduct p;
  for (int i = 0; i < 2; ++i) {
    const SymShape shape = graph.tensor(node.inputs[static_cast<size_t>(i)]).sym_shape();
    const std::vector<int>& labels = e.inputs[static_cast<size_t>(i)];
    for (size_t a = 0; a < labels.size(); ++a) {
      if (std::count(labels.begin(), labels.end(), labels[a]) > 1) return std::nullopt;
      auto [it, inserted] = p.dims.emplace(labels[a], shape[a]);
      if (!inserted && it->second != shape[a]) return std::nullopt;
    }
  }
  for (int label : e.inputs[0])
    if (!contains(e.output, label) && !contains(e.inputs[1], label)) return std::nullopt;
  for (int label : e.inputs[1])
    if (!contains(e.output, label) && !contains(e.inputs[0], label)) return std::nullopt;

  // Transposes of non-constant values each choice needs (the operands', the result's).
  auto moved = [&](int first) {
    const std::vector<int>&rows_side = e.inputs[static_cast<size_t>(first)],
          &columns_side = e.inputs[static_cast<size_t>(1 - first)];
    EinsumProduct q;
    q.first = first;
    q.dims = p.dims;
    q.labels = e;
    for (int label : e.output) {
      const bool r = contains(rows_side, label), c = contains(columns_side, label);
      (r && c ? q.batch : r ? q.rows : q.columns).push_back(label);
    }
    // The summed labels in the order of the operand that is not a constant.
    const bool first_constant = graph.tensor(node.inputs[static_cast<size_t>(first)]).is_constant();
    for (int label : first_constant ? columns_side : rows_side)
      if (!contains(e.output, label)) q.summed.push_back(label);
    std::vector<int> a_order = q.batch, b_order = q.batch, built = q.batch;
    a_order.insert(a_order.end(), q.rows.begin(), q.rows.end());
    a_order.insert(a_order.end(), q.summed.begin(), q.summed.end());
    b_order.insert(b_order.end(), q.summed.begin(), q.summed.end());
    b_order.insert(b_order.end(), q.columns.begin(), q.columns.end());
    built.insert(built.end(), q.rows.begin(), q.rows.end());
    built.insert(built.end(), q.columns.begin(), q.columns.end());
    int count = is_identity(label_perm(built, e.output)) ? 0 : 1;
    for (int i : {first, 1 - first}) {
      const bool constant = graph.tensor(node.inputs[static_cast<size_t>(i)]).is_constant();
      const std::vector<int>& order = i == first ? a_order : b_order;
      std::vector<int> used;
      for (int label : order) // a side without columns or rows has no such axes
        if (contains(e.inputs[static_cast<size_t>(i)], label)) used.push_back(label);
      if (!constant && !is_identity(label_perm(e.inputs[static_cast<size_t>(i)], used))) ++count;
    }
    return std::make_pair(count, q);
  };
  auto [straight_moves, straight] = moved(0);
  auto [swapped_moves, swapped] = moved(1);
  return swapped_moves < straight_moves ? swapped : straight;
}

DimExpr label_product(const EinsumProduct& p, const std::vector<int>& labels) {
  DimExpr product = 1;
  for (int label : labels)
    product = product * p.dims.at(label);
  return product;
}

// A two-operand Einsum as a MatMul of [batch, rows, summed] and [batch, summed, columns] (the
// merged axes reshaped; with no batch labels the rows stay apart, as MatMul broadcasts a
// matrix over them), reshaped to [batch, rows..., columns...] and transposed to the output's
// order. Without summed labels it is a broadcast Mul; with neither rows nor columns, a Mul
// and a ReduceSum over the summed axis.
void lower_einsum(Lowering& l, const EinsumProduct& p) {
  const EinsumLabels& e = p.labels;
  const TensorId a = l.input(p.first), b = l.input(1 - p.first);
  const std::vector<int>&a_labels = e.inputs[static_cast<size_t>(p.first)],
        &b_labels = e.inputs[static_cast<size_t>(1 - p.first)];
  auto dims_of = [&](const std::vector<int>& labels) {
    SymShape d;
    for (int label : labels)
      d.push_back(p.dims.at(label));
    return d;
  };
  auto joined = [](std::vector<int> x, const std::vector<int>& y) {
    x.insert(x.end(), y.begin(), y.end());
    return x;
  };
  const std::vector<int> a_order = joined(joined(p.batch, p.rows), p.summed);
  const std::vector<int> b_order = joined(joined(p.batch, p.summed), p.columns);
  const TensorId at = l.transpose(a, label_perm(a_labels, a_order), "A");
  const TensorId bt = l.transpose(b, label_perm(b_labels, b_order), "B");
  const SymShape batch = dims_of(p.batch);
  const DimExpr rows = label_product(p, p.rows), columns = label_product(p, p.columns),
                summed = label_product(p, p.summed);
  auto with_batch = [&](std::initializer_list<DimExpr> tail) {
    SymShape s = batch;
    s.insert(s.end(), tail.begin(), tail.end());
    return s;
  };
  TensorId y = kNoTensor;
  if (p.summed.empty()) {
    // An outer product per batch: A [batch, rows, 1] * B [batch, 1, columns].
    y = l.op(OpKind::Mul,
             {l.reshape(at, with_batch({rows, DimExpr(1)}), "ARows"),
              l.reshape(bt, with_batch({DimExpr(1), columns}), "BColumns")},
             "Product");
  } else if (p.rows.empty() && p.columns.empty()) {
    // A dot product per batch: the sum of A [batch, summed] * B [batch, summed].
    const TensorId products = l.op(OpKind::Mul,
                                   {l.reshape(at, with_batch({summed}), "AVector"),
                                    l.reshape(bt, with_batch({summed}), "BVector")},
                                   "Products");
    y = l.reduce(OpKind::ReduceSum, products, {static_cast<int64_t>(batch.size())}, "Product");
  } else {
    SymShape a_to = batch.empty() ? dims_of(p.rows) : with_batch({rows});
    if (a_to.empty()) a_to.push_back(DimExpr(1));
    a_to.push_back(summed);
    y = l.op(
        OpKind::MatMul,
        {l.reshape(at, a_to, "AMatrix"), l.reshape(bt, with_batch({summed, columns}), "BMatrix")},
        "Product");
  }
  const std::vector<int> built = joined(joined(p.batch, p.rows), p.columns);
  y = l.reshape(y, dims_of(built), "ProductAxes");
  y = l.transpose(y, label_perm(built, e.output), "Output");
  l.bind(y, l.output(0));
}

// Lowers `node` into `out`; false when it is not a composite.
bool lower_node(Graph& graph, const Node& node, std::set<std::string>& names,
                std::vector<Node>& out) {
  Lowering l(graph, node, names, out);
  switch (node.op) {
  case OpKind::Softmax:
    lower_softmax(l, false);
    return true;
  case OpKind::LogSoftmax:
    lower_softmax(l, true);
    return true;
  case OpKind::LayerNormalization:
    lower_layer_norm(l);
    return true;
  case OpKind::RMSNormalization:
    lower_rms_norm(l);
    return true;
  case OpKind::InstanceNormalization:
    lower_instance_norm(l);
    return true;
  case OpKind::GroupNormalization:
    lower_group_norm(l);
    return true;
  case OpKind::BatchNormalization:
    lower_batch_norm(l);
    return true;
  case OpKind::RotaryEmbedding:
    lower_rotary_embedding(l);
    return true;
  case OpKind::Attention:
    lower_attention(l);
    return true;
  case OpKind::Einsum:
    if (std::optional<EinsumProduct> p = einsum_product(graph, node)) {
      lower_einsum(l, *p);
      return true;
    }
    return false;
  default:
    return false;
  }
}

} // namespace

bool lower_composites(Graph& graph) {
  std::set<std::string> names;
  for (const Tensor& t : graph.tensors)
    names.insert(t.name);
  std::vector<Node> lowered;
  lowered.reserve(graph.nodes.size());
  bool changed = false;
  for (const Node& node : graph.nodes) {
    if (lower_node(graph, node, names, lowered)) {
      changed = true;
      continue;
    }
    lowered.push_back(node);
  }
  if (!changed) return false;
  graph.nodes = std::move(lowered);
  graph.compact(); // drops the tensors only the composites read
  return true;
}

} // namespace stitch
