// convert-precision: the home-type rules of convert_precision.h, applied node by node.
#include "graph/convert_precision.h"

#include <map>
#include <set>

#include "graph/constant.h"
#include "graph/error.h"
#include "graph/infer_context.h"
#include "graph/reductions.h"
#include "graph/shape_rules.h"

namespace stitch {

namespace {

constexpr DType kF32 = DType::Float32;

// Rule 2: ops that compute in float32 and keep their outputs there.
bool computes_in_float32(OpKind op) {
  if (const ReductionRule* rule = reduction_rule(op))
    return rule->combine == ReduceCombine::Sum || rule->combine == ReduceCombine::Prod ||
           rule->combine == ReduceCombine::LogSumExp;
  return op == OpKind::CumSum || op == OpKind::Pow || op == OpKind::Exp || op == OpKind::Log;
}

// Inputs whose type ONNX fixes apart from the data's: Resize's roi and scales (scales is
// always float32), Dropout's ratio. They are left as they are.
bool has_own_type(const Node& node, size_t input) {
  return input > 0 && (node.op == OpKind::Resize || node.op == OpKind::Dropout);
}

// The float32 values of the graph and the other types they are held in. Each value (a class
// of tensors holding the same number in different types) has a home type, the type its
// readers compute in unless their own rule says otherwise.
class PrecisionConverter {
public:
  PrecisionConverter(Graph& graph, DType reduced, IoPrecision io)
      : graph_(graph), reduced_(reduced), io_(io), class_of_(graph.tensors.size(), -1) {
    for (const Tensor& t : graph.tensors)
      names_.insert(t.name);
  }

  bool run() {
    std::vector<std::pair<size_t, TensorId>> float_outputs;
    for (size_t i = 0; i < graph_.outputs.size(); ++i)
      if (graph_.tensor(graph_.outputs[i]).dtype == kF32)
        float_outputs.push_back({i, graph_.outputs[i]});
    convert_inputs();
    std::vector<Node> nodes = std::move(graph_.nodes);
    graph_.nodes.clear();
    for (Node& node : nodes)
      convert_node(std::move(node));
    convert_outputs(float_outputs);
    graph_.nodes = std::move(out_);
    if (changed_) graph_.compact();
    return changed_;
  }

private:
  struct Value {
    DType home;
    std::map<DType, TensorId> held; // the tensor holding the value in each type
  };

  bool ours(DType t) const { return t == kF32 || t == reduced_; }
  bool managed(TensorId t) const { return class_of_[t] >= 0; }
  DType home(TensorId t) const {
    return managed(t) ? values_[class_of_[t]].home : graph_.tensor(t).dtype;
  }

  int new_value(TensorId t, DType home) {
    values_.push_back({home, {{graph_.tensor(t).dtype, t}}});
    class_of_[t] = static_cast<int>(values_.size()) - 1;
    return class_of_[t];
  }
  int value_of(TensorId t) {
    if (!managed(t)) new_value(t, graph_.tensor(t).dtype);
    return class_of_[t];
  }

  std::string fresh_name(const std::string& want) { return stitch::fresh_name(names_, want); }

  TensorId add_tensor(Tensor t) {
    TensorId id = graph_.add_tensor(std::move(t));
    class_of_.resize(graph_.tensors.size(), -1);
    return id;
  }

  // `t`'s value as `want`: `t`, a tensor already holding it, a converted constant, or a new
  // Cast (from the float32 holder where there is one) placed before the node being converted.
  TensorId held_as(TensorId t, DType want) {
    if (graph_.tensor(t).dtype == want) return t;
    const int v = value_of(t);
    if (auto it = values_[v].held.find(want); it != values_[v].held.end()) return it->second;
    const Tensor source = graph_.tensor(t);
    Tensor made;
    made.name = fresh_name(source.name + "/" + std::string(dtype_name(want)));
    made.dtype = want;
    made.shape = source.shape;
    made.typed = true;
    TensorId id;
    if (source.is_constant() && source.view_of == kNoTensor) {
      made.constant = make_constant_from_double(want, constant_as_double(source));
      id = add_tensor(std::move(made));
    } else {
      auto f32 = values_[v].held.find(kF32);
      Node cast;
      cast.op = OpKind::Cast;
      cast.name = made.name;
      cast.inputs = {f32 != values_[v].held.end() ? f32->second : t};
      cast.opset = graph_.opset;
      cast.attrs["to"] = Attribute{int64_t{dtype_onnx_code(want)}};
      id = add_tensor(std::move(made));
      cast.outputs = {id};
      out_.push_back(std::move(cast));
    }
    class_of_[id] = v;
    values_[v].held[want] = id;
    changed_ = true;
    return id;
  }

  void convert_inputs() {
    for (TensorId x : graph_.inputs) {
      Tensor& t = graph_.tensor(x);
      if (t.dtype != kF32 || t.is_constant()) continue;
      if (io_ == IoPrecision::Reduced) {
        t.dtype = reduced_;
        changed_ = true;
      }
      new_value(x, reduced_);
    }
  }

  // A Cast between float32 and the reduced type makes no new value: its output holds its
  // input's value in another type. A Cast to float32 from anything else is rule 3.
  void convert_cast(Node node) {
    const TensorId in = node.inputs[0], out = node.outputs[0];
    const DType from = graph_.tensor(in).dtype, to = graph_.tensor(out).dtype;
    if (ours(from) && ours(to)) {
      const int v = value_of(in);
      values_[v].held.emplace(to, out);
      class_of_[out] = v;
    } else if (to == kF32) {
      new_value(out, kF32);
    } else if (ours(from) && managed(in)) {
      // To an integer, bool or another float type: from the float32 holder where there is one.
      auto f32 = values_[class_of_[in]].held.find(kF32);
      if (f32 != values_[class_of_[in]].held.end() && f32->second != in) {
        node.inputs[0] = f32->second;
        changed_ = true;
      }
    }
    out_.push_back(std::move(node));
  }

  void convert_node(Node node) {
    if (node.op == OpKind::Cast) return convert_cast(std::move(node));
    std::vector<size_t> typed; // the inputs of our float types that share the data's type
    bool touched = false, has_f32 = false, has_reduced = false, float_out = false;
    std::set<DType> input_types;
    for (size_t i = 0; i < node.inputs.size(); ++i) {
      const TensorId t = node.inputs[i];
      if (t == kNoTensor || !ours(graph_.tensor(t).dtype) || has_own_type(node, i)) continue;
      typed.push_back(i);
      input_types.insert(graph_.tensor(t).dtype);
      if (graph_.tensor(t).is_constant()) {
        touched |= graph_.tensor(t).dtype == kF32;
        continue;
      }
      touched |= managed(t);
      (home(t) == kF32 ? has_f32 : has_reduced) = true;
    }
    for (TensorId t : node.outputs)
      if (t != kNoTensor && graph_.tensor(t).dtype == kF32) float_out = true;
    if (!touched && !float_out) {
      out_.push_back(std::move(node));
      return;
    }
    // A node without float outputs (a comparison, ArgMax, Shape) only needs its operands in
    // one type.
    if (!float_out && input_types.size() <= 1) {
      out_.push_back(std::move(node));
      return;
    }
    bool any_runtime_operand = false;
    for (TensorId t : value_operands(node))
      if (t != kNoTensor && !graph_.tensor(t).is_constant()) any_runtime_operand = true;
    const bool pointwise = op_is_pointwise(node.op);
    const bool mixed = has_f32 && has_reduced;
    DType compute;
    if (!float_out)
      compute = has_f32 ? kF32 : reduced_;
    else if (op_category(node.op) == OpCategory::Gemm || op_category(node.op) == OpCategory::Conv)
      compute = reduced_; // rule 1
    else if (computes_in_float32(node.op))
      compute = kF32; // rule 2
    else if (!any_runtime_operand || (pointwise && !has_f32 && !has_reduced))
      compute = kF32; // rule 3
    else if (mixed)
      compute = pointwise ? kF32 : reduced_; // rule 4
    else
      compute = has_f32 ? kF32 : reduced_;
    const bool rounded_on_store = mixed && pointwise && compute == kF32;

    for (size_t i : typed) {
      TensorId t = held_as(node.inputs[i], compute);
      if (t != node.inputs[i]) changed_ = true;
      node.inputs[i] = t;
    }
    std::vector<DType> before;
    for (TensorId t : node.outputs)
      before.push_back(t == kNoTensor ? DType::Bool : graph_.tensor(t).dtype);
    InferContext ctx(graph_, node);
    shape_rule(node.op)(ctx);
    for (size_t i = 0; i < node.outputs.size(); ++i) {
      const TensorId t = node.outputs[i];
      if (t == kNoTensor) continue;
      const DType d = graph_.tensor(t).dtype;
      if (d != before[i]) changed_ = true;
      if (!ours(d)) continue;
      new_value(t, rounded_on_store && d == kF32 ? reduced_ : d);
    }
    out_.push_back(std::move(node));
  }

  // Each float32 output is held in its declared type (or the reduced one), under its name.
  void convert_outputs(const std::vector<std::pair<size_t, TensorId>>& float_outputs) {
    const DType want = io_ == IoPrecision::Reduced ? reduced_ : kF32;
    for (auto [index, t] : float_outputs) {
      const TensorId held = held_as(t, want);
      if (held != t) {
        // The output keeps the model's name; the tensor that had it is named for its type.
        graph_.tensor(held).name = graph_.tensor(t).name;
        graph_.tensor(t).name = fresh_name(graph_.tensor(held).name + "/" +
                                           std::string(dtype_name(graph_.tensor(t).dtype)));
        for (TensorId& o : graph_.outputs)
          if (o == t) o = held;
        if (auto it = graph_.declared_outputs.find(t); it != graph_.declared_outputs.end()) {
          DeclaredType declared = it->second;
          graph_.declared_outputs.erase(it);
          graph_.declared_outputs[held] = declared;
        }
        changed_ = true;
      }
      if (auto it = graph_.declared_outputs.find(held);
          it != graph_.declared_outputs.end() && it->second.onnx_elem_type != 0)
        it->second.onnx_elem_type = dtype_onnx_code(want);
      (void)index;
    }
  }

  Graph& graph_;
  const DType reduced_;
  const IoPrecision io_;
  std::vector<int> class_of_; // per tensor: its value in values_, or -1
  std::vector<Value> values_;
  std::vector<Node> out_;
  std::set<std::string> names_;
  bool changed_ = false;
};

} // namespace

std::string_view precision_name(Precision p) {
  switch (p) {
  case Precision::Fp32:
    return "fp32";
  case Precision::Tf32:
    return "tf32";
  case Precision::Fp16:
    return "fp16";
  case Precision::Bf16:
    return "bf16";
  }
  return "fp32";
}

std::optional<Precision> precision_from_name(std::string_view name) {
  for (Precision p : {Precision::Fp32, Precision::Tf32, Precision::Fp16, Precision::Bf16})
    if (name == precision_name(p)) return p;
  return std::nullopt;
}

std::string_view io_precision_name(IoPrecision io) {
  return io == IoPrecision::Reduced ? "reduced" : "model";
}

std::optional<IoPrecision> io_precision_from_name(std::string_view name) {
  for (IoPrecision io : {IoPrecision::Model, IoPrecision::Reduced})
    if (name == io_precision_name(io)) return io;
  return std::nullopt;
}

std::optional<DType> reduced_dtype(Precision p) {
  if (p == Precision::Fp16) return DType::Float16;
  if (p == Precision::Bf16) return DType::BFloat16;
  return std::nullopt;
}

const std::vector<std::string>& precision_fp32_rules() {
  static const std::vector<std::string> rules = {
      "GEMMs and convolutions run in the reduced type with float32 accumulation",
      "sums and products of many values stay float32: ReduceSum, ReduceMean, ReduceSumSquare, "
      "ReduceL1, ReduceL2, ReduceLogSum, ReduceLogSumExp, ReduceProd, GlobalAveragePool, CumSum",
      "Pow, Exp and Log compute and store float32 (their outputs outgrow their inputs)",
      "index math and fill values stay float32: Cast to float32 from integers or bool, Range, "
      "ConstantOfShape, masks made from integers or bool",
      "values computed only from float32 values stay float32 (var + eps, sqrt, reciprocal, "
      "exp / sum); an activation combined with such a statistic is computed in float32 and "
      "stored in the reduced type",
      "LayerNormalization, RMSNormalization, Group- and InstanceNormalization, Softmax and "
      "LogSoftmax compute their statistics in float32 (lower-composites)",
      "accumulators of every reduction and of GEMMs and convolutions are float32",
  };
  return rules;
}

bool convert_precision(Graph& graph, const PrecisionOptions& options) {
  std::optional<DType> reduced = reduced_dtype(options.precision);
  if (!reduced) return false;
  return PrecisionConverter(graph, *reduced, options.io).run();
}

} // namespace stitch
