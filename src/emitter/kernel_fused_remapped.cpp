// A Local group with movement nodes (LocalSpec::moves): one flat loop over the iteration shape;
// each element asks for the outputs at its coordinates c0..cR-1, and each value asks for its
// operands at the coordinates its node maps them to (a Transpose permutes them, a Slice offsets
// and strides them, an Expand or a broadcast operand reads 0 on a widened axis, a Concat picks
// the operand covering the element, a Pad its operand inside and the fill value outside, a
// Trilu its operand inside the band of the last two axes and 0 outside, a ConstantOfShape its
// value and a Range start + delta * r). Values are named once per coordinates in a scope; a
// Concat opens one branch per part, each a scope of its own.
//
//   for (int64_t i = first; i < n; i += stride) {
//     ... coordinates c0..c3 of i ...
//     const float x0 = in0[c0 * 4096 + c2 * 256 + c1 * 64 + c3];  // through a Transpose
//     float t0;                                                    // a Concat on axis 3
//     if (c3 < 32) {
//       const int64_t k0 = c3 + 32;
//       const float x1 = in0[c0 * 4096 + c2 * 256 + c1 * 64 + k0];
//       const float t1 = stitch::ops::neg(x1);
//       t0 = t1;
//     }
//     else { ... }
//     out0[i] = stitch::ops::add(stitch::ops::mul(x0, x2), stitch::ops::mul(t0, x3));
//   }
#include <cctype>

#include "emitter/kernel_fused.h"
#include "emitter/kernel_movement.h"
#include "emitter/pointwise_expression.h"
#include "graph/error.h"

namespace stitch {

namespace {

class RemappedValues {
public:
  RemappedValues(const GroupEmitContext& ctx, const FusedSignature& sig,
                 const std::vector<int32_t>& nodes, const std::vector<MovementRead>& moves,
                 CodeWriter& out)
      : ctx_(ctx), sig_(sig), out_(out), frames_(1) {
    for (const MovementRead& m : moves)
      moves_[ctx.graph().nodes[m.node].outputs[0]] = &m;
    for (int32_t n : nodes)
      producer_[ctx.graph().nodes[n].outputs[0]] = n;
  }

  // The value of tensor t at coordinates `at` (one expression per axis of t).
  std::string value(TensorId t, const std::vector<std::string>& at) {
    const std::string key = fmt::format("{}@{}", t, fmt::join(at, ","));
    if (const std::string* known = find(key, &Frame::values)) return *known;
    if (auto literal = sig_.literals.find(t); literal != sig_.literals.end())
      return literal->second;
    std::string name;
    if (auto move = moves_.find(t); move != moves_.end())
      name = remapped(*move->second, at);
    else if (auto p = producer_.find(t); p != producer_.end())
      name = ctx_.graph().nodes[p->second].op == OpKind::View
                 ? viewed(ctx_.graph().nodes[p->second], at)
                 : computed(ctx_.graph().nodes[p->second], at);
    else
      name = loaded(t, at);
    frames_.back().values[key] = name;
    return name;
  }

private:
  struct Frame {
    std::map<std::string, std::string> values;      // "tensor@coordinates" -> name
    std::map<std::string, std::string> coordinates; // expression -> name
  };

  const std::string* find(const std::string& key, std::map<std::string, std::string> Frame::*m) {
    for (auto f = frames_.rbegin(); f != frames_.rend(); ++f)
      if (auto it = ((*f).*m).find(key); it != ((*f).*m).end()) return &it->second;
    return nullptr;
  }

  static bool simple(const std::string& e) {
    for (char c : e)
      if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') return false;
    return true;
  }

  // offset + step * r as one name or number: an expression gets `const int64_t kN`.
  std::string coordinate(const std::string& r, int64_t offset, int64_t step) {
    std::string e = r;
    if (step != 1) e = fmt::format("{} * {}", step, r);
    if (offset > 0) e = fmt::format("{} + {}", e, offset);
    if (offset < 0) e = fmt::format("{} - {}", e, -offset);
    return named(e);
  }

  // An index expression as one name or number (`const int64_t kN`, once per scope).
  std::string named(const std::string& e) {
    if (simple(e)) return e;
    if (const std::string* known = find(e, &Frame::coordinates)) return *known;
    std::string name = fmt::format("k{}", next_k_++);
    out_.linef("const int64_t {} = {};", name, e);
    frames_.back().coordinates[e] = name;
    return name;
  }

  std::vector<std::string> operand_coordinates(const MovementRead& m,
                                               const MovementRead::Part& part,
                                               const std::vector<std::string>& at) {
    std::vector<std::string> a;
    for (size_t j = 0; j < part.source.size(); ++j) {
      if (m.run_bounds && static_cast<int32_t>(j) == m.axis) {
        // The run's part begins where the operands before it (or the pad) end.
        a.push_back(part.run_begin.is_constant()
                        ? coordinate(at[m.axis], -part.run_begin.constant_value(), 1)
                        : named(fmt::format("{} - {}", at[m.axis], bound(part.run_begin))));
        continue;
      }
      a.push_back(part.source[j] < 0
                      ? std::to_string(part.offset[j])
                      : coordinate(at[part.source[j]], part.offset[j], part.step[j]));
    }
    return a;
  }

  // An expression of the symbols as an operand of + - * and comparisons: dim_code already
  // parenthesizes sums; a negative constant takes parentheses here.
  std::string bound(const DimExpr& d) const {
    const std::string c = code(d);
    return d.is_constant() && d.constant_value() < 0 ? "(" + c + ")" : c;
  }

  std::string remapped(const MovementRead& m, const std::vector<std::string>& at) {
    const Tensor& result = ctx_.tensor(ctx_.graph().nodes[m.node].outputs[0]);
    if (m.generates) return generated(m, at);
    if (m.parts.empty() && !m.fills) ctx_.spec_error("a movement node with nothing to read");
    if (m.band) return banded(m, at);
    if (m.fills && m.parts.empty()) return fill_value(m, result.dtype); // a ConstantOfShape
    if (!m.fills && (m.axis < 0 || m.parts.size() == 1))
      return value(m.parts[0].operand, operand_coordinates(m, m.parts[0], at));
    const std::string name = fmt::format("t{}", next_t_++);
    const Node& node = ctx_.graph().nodes[m.node];
    out_.comment(m.axis >= 0 ? fmt::format("{} = '{}' ({} on axis {})", name, node.name,
                                           op_name(node.op), m.axis)
                             : fmt::format("{} = '{}' ({})", name, node.name, op_name(node.op)));
    out_.linef("{} {};", ctype(result.dtype, ctx_), name);
    // A Concat's parts tile the axis (the last one takes the rest); a Pad's one part is
    // tested at both ends and the fill value is the rest.
    for (size_t k = 0; k < m.parts.size(); ++k) {
      const MovementRead::Part& part = m.parts[k];
      const std::string begin = m.run_bounds ? bound(part.run_begin) : std::to_string(part.begin);
      std::string test = fmt::format("{} < {}", at[m.axis],
                                     m.run_bounds ? bound(part.run_end) : std::to_string(part.end));
      if (m.fills && begin != "0") test = fmt::format("{} >= {} && {}", at[m.axis], begin, test);
      if (k == 0)
        out_.open(fmt::format("if ({})", test));
      else if (k + 1 < m.parts.size() || m.fills)
        out_.open(fmt::format("else if ({})", test));
      else
        out_.open("else");
      frames_.emplace_back();
      out_.linef("{} = {};", name, value(part.operand, operand_coordinates(m, part, at)));
      frames_.pop_back();
      out_.close();
    }
    if (m.fills) {
      out_.linef("else {} = {};", name, fill_value(m, result.dtype));
    }
    return name;
  }

  // A Pad's or a ConstantOfShape's fill: a float literal of the kernel's interface (a Pad's), a
  // constant of any type (a ConstantOfShape's value), or 0.
  std::string fill_value(const MovementRead& m, DType dtype) {
    if (m.fill == kNoTensor) return typed_literal(dtype, 0.0, ctx_);
    if (sig_.literals.count(m.fill) != 0) return value(m.fill, {});
    return constant_element_literal(ctx_, ctx_.tensor(m.fill), 0);
  }

  // A Range: start + delta * r, in the result's integer type.
  std::string generated(const MovementRead& m, const std::vector<std::string>& at) {
    const Node& node = ctx_.graph().nodes[m.node];
    if (at.size() != 1) ctx_.spec_error(fmt::format("Range '{}' is not one axis", node.name));
    const std::string type = ctype(ctx_.tensor(node.outputs[0]).dtype, ctx_);
    std::string e = at[0];
    if (m.delta != DimExpr(1)) e = fmt::format("{} * {}", bound(m.delta), e);
    if (m.start != DimExpr(0)) e = fmt::format("{} + {}", bound(m.start), e);
    const std::string name = fmt::format("t{}", next_t_++);
    out_.comment(fmt::format("{} = '{}' (Range)", name, node.name));
    out_.linef("const {} {} = {}({});", type, name, type, e);
    return name;
  }

  // A Trilu: its operand inside the band of the last two axes, 0 outside it.
  std::string banded(const MovementRead& m, const std::vector<std::string>& at) {
    const Tensor& result = ctx_.tensor(ctx_.graph().nodes[m.node].outputs[0]);
    if (m.parts.size() != 1 || at.size() < 2) ctx_.spec_error("a Trilu without one matrix part");
    const std::string name = fmt::format("t{}", next_t_++);
    out_.comment(fmt::format("{} = '{}' (Trilu: the {} triangle)", name,
                             ctx_.graph().nodes[m.node].name, m.upper ? "upper" : "lower"));
    out_.linef("{} {};", ctype(result.dtype, ctx_), name);
    out_.open(fmt::format("if ({} - {} {} {})", at[at.size() - 1], at[at.size() - 2],
                          m.upper ? ">=" : "<=", bound(m.diagonal)));
    frames_.emplace_back();
    out_.linef("{} = {};", name, value(m.parts[0].operand, operand_coordinates(m, m.parts[0], at)));
    frames_.pop_back();
    out_.close();
    out_.linef("else {} = {};", name, typed_literal(result.dtype, 0.0, ctx_));
    return name;
  }

  // Shapes as expressions (over symbolic dims the run's extents; constants otherwise), and
  // their row-major strides.
  SymShape dims(TensorId t) const { return ctx_.tensor(t).sym_shape(); }
  std::string code(const DimExpr& d) const { return dim_code(ctx_.graph(), d); }

  // A View (a reshape; an attention's prologue holds them) reads its operand at the same
  // row-major position: the element's linear index in the result, taken apart in the operand.
  std::string viewed(const Node& node, const std::vector<std::string>& at) {
    const SymShape result = dims(node.outputs[0]);
    const SymShape operand = dims(node.inputs[0]);
    const SymShape result_strides = sym_row_major_strides(result);
    std::vector<std::string> terms;
    for (size_t j = 0; j < result.size(); ++j)
      if (!is_one(result[j]) && at[j] != "0")
        terms.push_back(is_one(result_strides[j])
                            ? at[j]
                            : fmt::format("{} * {}", at[j], code(result_strides[j])));
    const std::string linear =
        named(terms.empty() ? "0" : fmt::format("{}", fmt::join(terms, " + ")));
    const SymShape operand_strides = sym_row_major_strides(operand);
    std::vector<std::string> a;
    for (size_t j = 0; j < operand.size(); ++j) {
      if (is_one(operand[j])) {
        a.push_back("0");
        continue;
      }
      const bool index32 = ctx_.group().launch.index32;
      std::string e = is_one(operand_strides[j])
                          ? linear
                          : index_div(index32, linear, code(operand_strides[j]));
      if (j > 0)
        e = is_one(operand_strides[j]) || index32 ? index_mod(index32, e, code(operand[j]))
                                                  : fmt::format("({}) % {}", e, code(operand[j]));
      a.push_back(named(e));
    }
    out_.comment(fmt::format("'{}' (View): '{}' at the same row-major position", node.name,
                             ctx_.tensor(node.inputs[0]).name));
    return value(node.inputs[0], a);
  }

  std::string computed(const Node& node, const std::vector<std::string>& at) {
    const SymShape result = dims(node.outputs[0]);
    std::vector<std::string> values;
    for (TensorId operand : value_operands(node)) {
      if (operand == kNoTensor) {
        values.emplace_back();
        continue;
      }
      values.push_back(value(operand, broadcast(dims(operand), result, at)));
    }
    const std::string name = fmt::format("t{}", next_t_++);
    out_.comment(fmt::format("{} = '{}' ({})", name, node.name, op_name(node.op)));
    out_.linef("const {} {} = {};", ctype(ctx_.tensor(node.outputs[0]).dtype, ctx_), name,
               pointwise_expression(ctx_, node, values));
    return name;
  }

  // Coordinates of an operand of dims s, numpy-broadcast against `result` (a dim 1 for every
  // value of the symbols reads coordinate 0).
  static std::vector<std::string> broadcast(const SymShape& s, const SymShape& result,
                                            const std::vector<std::string>& at) {
    const size_t lead = result.size() - s.size();
    std::vector<std::string> a;
    for (size_t j = 0; j < s.size(); ++j)
      a.push_back(is_one(s[j]) && !is_one(result[j + lead]) ? "0" : at[j + lead]);
    return a;
  }

  std::string loaded(TensorId t, const std::vector<std::string>& at) {
    auto param = sig_.inputs.find(t);
    if (param == sig_.inputs.end())
      ctx_.spec_error(
          fmt::format("'{}' is read but not in the kernel's interface", ctx_.tensor(t).name));
    const Tensor& x = ctx_.tensor(t);
    const SymShape shape = dims(t);
    const SymShape strides = sym_row_major_strides(shape);
    std::vector<std::string> terms;
    for (size_t j = 0; j < strides.size(); ++j) {
      // A dim of 1 reads coordinate 0, whatever expression names it.
      if (is_one(shape[j]) || strides[j] == DimExpr(0) || at[j] == "0") continue;
      terms.push_back(is_one(strides[j]) ? at[j] : fmt::format("{} * {}", at[j], code(strides[j])));
    }
    const std::string index = terms.empty() ? "0" : fmt::format("{}", fmt::join(terms, " + "));
    const std::string type = ctype(x.dtype, ctx_);
    const std::string name = fmt::format("x{}", next_x_++);
    if (const std::string v = symbolic_value_code(ctx_.graph(), t, index, type); !v.empty())
      out_.linef("const {} {} = {};  // computed from the symbols", type, name, v);
    else
      out_.linef("const {} {} = {}[{}];", type, name, param->second, index);
    return name;
  }

  const GroupEmitContext& ctx_;
  const FusedSignature& sig_;
  CodeWriter& out_;
  std::map<TensorId, const MovementRead*> moves_;
  std::map<TensorId, int32_t> producer_;
  std::vector<Frame> frames_;
  int next_t_ = 0, next_x_ = 0, next_k_ = 0;
};

} // namespace

void emit_remapped_local_body(const GroupEmitContext& ctx, const FusedSignature& sig,
                              const LocalSpec& spec, const BlockRange& blocks, CodeWriter& out) {
  const Shape& shape = spec.iteration;
  if (spec.vector_width != 1)
    ctx.spec_error(fmt::format("vector width {} with movement nodes", spec.vector_width));
  std::vector<std::string> at;
  if (!spec.iteration_dims.empty()) {
    // Over symbolic dims: the run's elements, every coordinate taken apart by the run's extents.
    const SymShape& dims = spec.iteration_dims;
    out.linef("const int64_t n = {};  // elements of {}", element_count_code(ctx.graph(), dims),
              sym_shape_to_string(dims));
    out.linef("const int64_t first = int64_t({}) * blockDim.x + threadIdx.x;", blocks.index);
    out.linef("const int64_t stride = int64_t({}) * blockDim.x;", blocks.count);
    out.open("for (int64_t i = first; i < n; i += stride)");
    emit_coordinates(out, shape, "i", "c", &dims);
    if (symbolic_prefix(dims) > 0)
      emit_symbolic_coordinates(out, ctx.graph(), dims, "i", "c", ctx.group().launch.index32);
    for (size_t d = 0; d < dims.size(); ++d)
      at.push_back(dims[d] == DimExpr(1) ? "0" : fmt::format("c{}", d));
  } else {
    out.linef("const int64_t n = {};  // elements of {}", shape_elements(shape),
              shape_to_string(shape));
    out.linef("const int64_t first = int64_t({}) * blockDim.x + threadIdx.x;", blocks.index);
    out.linef("const int64_t stride = int64_t({}) * blockDim.x;", blocks.count);
    out.open("for (int64_t i = first; i < n; i += stride)");
    if (!shape.empty()) emit_coordinates(out, shape);
    for (size_t d = 0; d < shape.size(); ++d)
      at.push_back(shape[d] == 1 ? "0" : fmt::format("c{}", d));
  }
  RemappedValues values(ctx, sig, spec.nodes, spec.moves, out);
  for (TensorId t : spec.io.writes) {
    const std::string v = values.value(t, at);
    out.linef("{}[i] = {};", sig.outputs.at(t), v);
  }
  out.close();
}

std::string emit_remapped_value(const GroupEmitContext& ctx, const FusedSignature& sig,
                                const std::vector<int32_t>& nodes,
                                const std::vector<MovementRead>& moves, TensorId t,
                                const std::vector<std::string>& at, CodeWriter& out) {
  RemappedValues values(ctx, sig, nodes, moves, out);
  return values.value(t, at);
}

} // namespace stitch
