// Attention groups (legality_attention.cpp, kernel_attention.cpp): scaled dot-product attention
// in the spellings exporters write, built by hand, planned by every planner for the host
// target; the ilp plan must hold exactly one "attention" group (or none, where the group would
// be wrong: the scores read outside it, a head dim over 256), and every fused plan must compute
// what the per-op plan computes on random inputs (plan_agreement.h).
#include <catch2/catch.hpp>

#include <cmath>
#include <numeric>

#include "plan_agreement.h"

using namespace stitch;
using namespace stitch::test;

namespace {

constexpr int kFloat = onnx::TensorProto::FLOAT;

struct FusionModel {
  int64_t batch = 2, heads = 3, kv_heads = 3, queries = 5, keys = 7, head_dim = 8, value_dim = 8;
  // FourthRoot: Q and Kᵀ each times D^-1/4 before the product (the ONNX Attention op's function
  // body, torch's decomposition of scaled_dot_product_attention).
  enum class Scale { Mul, Div, None, FourthRoot } scale = Scale::Mul;
  bool padding_bias = false;  // Add of a bias [B, 1, 1, T] (an attention mask made additive)
  bool head_bias = false;     // Add of a bias [1, H, S, T] (per-head position biases)
  bool causal = false;        // Where(key <= query + T - S, scores, -inf), a constant mask
  bool softcap = false;       // 30 * tanh(x / 30)
  bool k_transposed = false;  // K arrives as [B, KH, D, T]
  bool repeat_kv = false;     // K and V heads repeated H / KH times (Unsqueeze, Expand, Reshape)
  bool scores_output = false; // the scores are a graph output too
  int dtype = kFloat;         // FLOAT16 or BFLOAT16: the inputs cast to it, the output back
  // Rotary embedding of Q and K after the head split (K before its heads repeat): Half as
  // exporters write rotate_half (x cos + Concat(-x2, x1) sin, the caches [B, 1, S, D] per
  // operand), Interleaved as they write rotate_every_two (the even and odd dims x1 and x2 by
  // Slices of step 2, Concat(-x2, x1) of them unsqueezed into pairs, reshaped back to D), or the
  // ONNX RotaryEmbedding op (opset 23; the caches [B, S, D/2]), its half or its interleaved form.
  enum class Rotary { None, Half, Interleaved, Op, OpInterleaved } rotary = Rotary::None;
};

// q [B,S,H,D], k [B,T,KH,D] (or [B,KH,D,T]), v [B,T,KH,Dv] -> y [B,S,H,Dv]: the heads split by
// Transposes, softmax(logits(Q Kᵀ)) V, the heads merged by a Transpose.
Graph attention_graph(const FusionModel& a) {
  using Rotary = FusionModel::Rotary;
  const bool rotary_op = a.rotary == Rotary::Op || a.rotary == Rotary::OpInterleaved;
  ModelBuilder m(rotary_op ? 23 : 17);
  m.input("q_in", kFloat, {a.batch, a.queries, a.heads, a.head_dim});
  if (a.k_transposed)
    m.input("k_in", kFloat, {a.batch, a.kv_heads, a.head_dim, a.keys});
  else
    m.input("k_in", kFloat, {a.batch, a.keys, a.kv_heads, a.head_dim});
  m.input("v_in", kFloat, {a.batch, a.keys, a.kv_heads, a.value_dim});
  m.output("y");
  const bool half = a.dtype != kFloat;
  auto typed = [&](const std::string& x) {
    if (!half) return x;
    set_attr_int(m.node("Cast", {x}, {x + "_t"}), "to", a.dtype);
    return x + "_t";
  };
  // x [B, heads, rows, D] rotated into `out`.
  auto rotate = [&](const std::string& x, int64_t rows, const std::string& out) {
    const int64_t d = a.head_dim, h = d / 2;
    if (rotary_op) {
      m.input(x + "_cos", kFloat, {a.batch, rows, h});
      m.input(x + "_sin", kFloat, {a.batch, rows, h});
      set_attr_int(m.node("RotaryEmbedding", {x, typed(x + "_cos"), typed(x + "_sin")}, {out}),
                   "interleaved", a.rotary == Rotary::OpInterleaved ? 1 : 0);
      return out;
    }
    m.input(x + "_cos", kFloat, {a.batch, 1, rows, d});
    m.input(x + "_sin", kFloat, {a.batch, 1, rows, d});
    m.initializer_i64(x + "_axis", {1}, {3});
    m.initializer_i64(x + "_0", {1}, {0});
    m.initializer_i64(x + "_1", {1}, {1});
    m.initializer_i64(x + "_2", {1}, {2});
    m.initializer_i64(x + "_h", {1}, {h});
    m.initializer_i64(x + "_d", {1}, {d});
    if (a.rotary == Rotary::Interleaved) {
      m.initializer_i64(x + "_last", {1}, {-1});
      m.initializer_i64(x + "_shape", {4}, {a.batch, 0, rows, d}); // 0: the heads, kept
      m.node("Slice", {x, x + "_0", x + "_d", x + "_axis", x + "_2"}, {x + "_x1"});
      m.node("Slice", {x, x + "_1", x + "_d", x + "_axis", x + "_2"}, {x + "_x2"});
      m.node("Neg", {x + "_x2"}, {x + "_n2"});
      m.node("Unsqueeze", {x + "_n2", x + "_last"}, {x + "_p2"});
      m.node("Unsqueeze", {x + "_x1", x + "_last"}, {x + "_p1"});
      set_attr_int(m.node("Concat", {x + "_p2", x + "_p1"}, {x + "_pairs"}), "axis", -1);
      m.node("Reshape", {x + "_pairs", x + "_shape"}, {x + "_rot"});
    } else {
      m.node("Slice", {x, x + "_0", x + "_h", x + "_axis"}, {x + "_x1"});
      m.node("Slice", {x, x + "_h", x + "_d", x + "_axis"}, {x + "_x2"});
      m.node("Neg", {x + "_x2"}, {x + "_n2"});
      set_attr_int(m.node("Concat", {x + "_n2", x + "_x1"}, {x + "_rot"}), "axis", -1);
    }
    m.node("Mul", {x, typed(x + "_cos")}, {x + "_c"});
    m.node("Mul", {x + "_rot", typed(x + "_sin")}, {x + "_s"});
    m.node("Add", {x + "_c", x + "_s"}, {out});
    return out;
  };
  if (a.rotary == Rotary::None) {
    set_attr_ints(m.node("Transpose", {typed("q_in")}, {"q"}), "perm", {0, 2, 1, 3});
  } else {
    set_attr_ints(m.node("Transpose", {typed("q_in")}, {"q_h"}), "perm", {0, 2, 1, 3});
    rotate("q_h", a.queries, "q");
  }
  // [B, KH, T, X] -> [B, KH, 1, T, X] -> [B, KH, H / KH, T, X] -> [B, H, T, X], as exporters
  // write grouped-query attention's repeat_kv.
  auto repeat = [&](const std::string& x, int64_t dim, const std::string& out) {
    m.initializer_i64(x + "_axes", {1}, {2});
    m.initializer_i64(x + "_expanded", {5},
                      {a.batch, a.kv_heads, a.heads / a.kv_heads, a.keys, dim});
    m.initializer_i64(x + "_heads", {4}, {a.batch, a.heads, a.keys, dim});
    m.node("Unsqueeze", {x, x + "_axes"}, {x + "_1"});
    m.node("Expand", {x + "_1", x + "_expanded"}, {x + "_2"});
    m.node("Reshape", {x + "_2", x + "_heads"}, {out});
    return out;
  };
  if (a.rotary != Rotary::None) {
    set_attr_ints(m.node("Transpose", {typed("k_in")}, {"k_h"}), "perm", {0, 2, 1, 3});
    std::string k = rotate("k_h", a.keys, "k4");
    if (a.repeat_kv) k = repeat(k, a.head_dim, "k_r");
    set_attr_ints(m.node("Transpose", {k}, {"kt"}), "perm", {0, 1, 3, 2});
    set_attr_ints(m.node("Transpose", {typed("v_in")}, {"v4"}), "perm", {0, 2, 1, 3});
    if (a.repeat_kv)
      repeat("v4", a.value_dim, "v");
    else
      m.node("Identity", {"v4"}, {"v"});
  } else if (a.repeat_kv) {
    set_attr_ints(m.node("Transpose", {typed("k_in")}, {"k4"}), "perm", {0, 2, 1, 3});
    set_attr_ints(m.node("Transpose", {repeat("k4", a.head_dim, "k_r")}, {"kt"}), "perm",
                  {0, 1, 3, 2});
    set_attr_ints(m.node("Transpose", {typed("v_in")}, {"v4"}), "perm", {0, 2, 1, 3});
    repeat("v4", a.value_dim, "v");
  } else {
    if (a.k_transposed)
      m.node("Identity", {typed("k_in")}, {"kt"});
    else
      set_attr_ints(m.node("Transpose", {typed("k_in")}, {"kt"}), "perm", {0, 2, 3, 1});
    set_attr_ints(m.node("Transpose", {typed("v_in")}, {"v"}), "perm", {0, 2, 1, 3});
  }
  auto constant = [&](const std::string& name, float value) {
    m.initializer_f32(name, {}, {value});
    return typed(name);
  };
  if (a.scale == FusionModel::Scale::FourthRoot) {
    const std::string quarter =
        constant("quarter", 1.0f / std::sqrt(std::sqrt(static_cast<float>(a.head_dim))));
    m.node("Mul", {"q", quarter}, {"q_scaled"});
    m.node("Mul", {quarter, "kt"}, {"kt_scaled"}); // the scalar first: either order is written
    m.node("MatMul", {"q_scaled", "kt_scaled"}, {"scores"});
  } else {
    m.node("MatMul", {"q", "kt"}, {"scores"});
  }
  std::string x = "scores";
  auto step = [&](const std::string& op, const std::vector<std::string>& others) {
    std::vector<std::string> inputs = {x};
    inputs.insert(inputs.end(), others.begin(), others.end());
    const std::string out = x + "_" + op;
    m.node(op, inputs, {out});
    x = out;
  };
  const float root = std::sqrt(static_cast<float>(a.head_dim));
  if (a.scale == FusionModel::Scale::Mul) step("Mul", {constant("scale", 1.0f / root)});
  if (a.scale == FusionModel::Scale::Div) step("Div", {constant("root", root)});
  if (a.padding_bias) {
    m.input("padding", kFloat, {a.batch, 1, 1, a.keys});
    step("Add", {typed("padding")});
  }
  if (a.head_bias) {
    m.input("position", kFloat, {1, a.heads, a.queries, a.keys});
    step("Add", {typed("position")});
  }
  if (a.causal) {
    std::vector<int64_t> rows(a.queries), cols(a.keys);
    std::iota(rows.begin(), rows.end(), a.keys - a.queries);
    std::iota(cols.begin(), cols.end(), 0);
    m.initializer_i64("rows", {a.queries, 1}, rows);
    m.initializer_i64("cols", {1, a.keys}, cols);
    m.node("LessOrEqual", {"cols", "rows"}, {"visible"});
    const std::string hidden = constant("hidden", -INFINITY);
    m.node("Where", {"visible", x, hidden}, {x + "_masked"});
    x += "_masked";
  }
  if (a.softcap) {
    const std::string cap = constant("cap", 30.0f);
    step("Div", {cap});
    step("Tanh", {});
    step("Mul", {cap});
  }
  set_attr_int(m.node("Softmax", {x}, {"p"}), "axis", -1);
  m.node("MatMul", {"p", "v"}, {"o"});
  set_attr_ints(m.node("Transpose", {"o"}, {"o_t"}), "perm", {0, 2, 1, 3});
  if (half)
    set_attr_int(m.node("Cast", {"o_t"}, {"y"}), "to", kFloat);
  else
    m.node("Identity", {"o_t"}, {"y"});
  if (a.scores_output) {
    m.output("scores_out");
    if (half)
      set_attr_int(m.node("Cast", {"scores"}, {"scores_out"}), "to", kFloat);
    else
      m.node("Identity", {"scores"}, {"scores_out"});
  }
  return load_graph(m);
}

// Groups that launch work (not Views).
int launches(const FusionPlan& plan) {
  int count = 0;
  for (const FusionGroup& group : plan.groups)
    count += group.kind != GroupKind::Alias;
  return count;
}

int attention_groups(const FusionPlan& plan) {
  int count = 0;
  for (const FusionGroup& group : plan.groups)
    count += group.kind == GroupKind::Attention;
  return count;
}

// Every planner's plan agrees with the per-op plan; the ilp plan has `expected` attention
// groups, and their report says "attention".
void check_attention(const FusionModel& a, unsigned seed, int expected,
                     PlanTolerance tolerance = {}, int expected_launches = 0) {
  const Graph g = attention_graph(a);
  const FusionPlan ilp = plan_for_host(g, "ilp");
  INFO("ilp plan:\n" << describe_plan(g, ilp));
  CHECK(attention_groups(ilp) == expected);
  if (expected_launches > 0) CHECK(launches(ilp) == expected_launches);
  // Flash-decoding where heads x query tiles leave SMs idle and the keys fill several splits.
  for (const FusionGroup& group : ilp.groups)
    if (const auto* attention = std::get_if<AttentionSpec>(&group.spec)) {
      const bool idle = group.launch.grid[0] < host_target_device().sm_count;
      const int64_t key_tiles = (a.keys + attention->key_tile - 1) / attention->key_tile;
      CHECK((attention->splits > 1) == (idle && key_tiles >= 4));
    }
  for (const FusionGroup& group : ilp.groups)
    if (group.kind == GroupKind::Attention) {
      CHECK(group_kind_name(group.kind) == "attention");
      CHECK(spec_name(group.spec) == "attention");
    }
  CHECK(check_planners_agree(g, seed, "attention", tolerance) >= 2);
}

} // namespace

TEST_CASE("attention: exporters' spellings plan as one attention group equal to the per-op plan",
          "[planner][attention]") {
  // Proves: Q Kᵀ with K transposed by the model or arriving transposed, the scale as Mul or Div
  // or none, additive padding and per-head biases, a constant causal mask through Where, a
  // tanh softcap, multi-query K and V (one head broadcast to all), grouped-query K and V heads
  // repeated as exporters write it (folded by fold-repeated-heads into grouped products, read
  // back in the attention's own heads), and ragged sizes (a head dim
  // no multiple of 32, a single query, a value dim unlike the head dim) each plan as one
  // attention group whose results match the per-op plan's.
  FusionModel a;
  unsigned seed = 1;
  SECTION("Mul by 1/sqrt(D), K transposed by the graph") { seed = 11; }
  SECTION("Div by sqrt(D), K arriving transposed") {
    a.scale = FusionModel::Scale::Div, a.k_transposed = true, seed = 12;
  }
  SECTION("no scale, a padding bias and a per-head bias") {
    a.scale = FusionModel::Scale::None, a.padding_bias = a.head_bias = true, seed = 13;
  }
  SECTION("a causal mask of -infinity and a softcap") { a.causal = a.softcap = true, seed = 14; }
  SECTION("multi-query: one K and V head for every query head") { a.kv_heads = 1, seed = 15; }
  SECTION("grouped-query: K and V heads repeated, a causal mask and a padding bias") {
    a.heads = 6, a.kv_heads = 2, a.repeat_kv = a.causal = a.padding_bias = true, seed = 19;
  }
  SECTION("grouped-query over one K and V head, one query") {
    a.heads = 4, a.kv_heads = 1, a.repeat_kv = true, a.queries = 1, a.keys = 40, seed = 20;
  }
  SECTION("one query (decoding) over 70 keys") {
    a.queries = 1, a.keys = 70, a.causal = true, seed = 16;
  }
  SECTION("flash-decoding: one query over 600 keys in splits, a causal mask and a bias") {
    a.queries = 1, a.keys = 600, a.causal = a.padding_bias = true, seed = 23;
  }
  SECTION("flash-decoding with grouped-query heads and 3 queries") {
    a.heads = 4, a.kv_heads = 2, a.repeat_kv = true, a.queries = 3, a.keys = 300, seed = 24;
  }
  SECTION("head dim 40, value dim 24, 37 queries, 130 keys") {
    a.head_dim = 40, a.value_dim = 24, a.queries = 37, a.keys = 130, a.padding_bias = true;
    seed = 17;
  }
  SECTION("head dim 256") {
    a.head_dim = a.value_dim = 256, a.heads = a.kv_heads = 2, a.queries = 9, a.keys = 33;
    seed = 18;
  }
  SECTION("grouped-query heads with a fourth-root scale on Q and the repeated Kᵀ") {
    a.heads = 6, a.kv_heads = 2, a.repeat_kv = a.causal = true, seed = 26;
    a.scale = FusionModel::Scale::FourthRoot;
  }
  check_attention(a, seed, 1);
}

TEST_CASE("attention: the scale on Q and Kᵀ loads with them, in one launch",
          "[planner][attention]") {
  // Proves: a fourth-root scale on Q and on Kᵀ (either operand order of the Mul) joins the
  // attention group, applied to each element as the kernel loads it: the head split, the
  // scalings, the attention and the head merge are one launch, equal to the per-op plan.
  FusionModel a;
  a.scale = FusionModel::Scale::FourthRoot;
  SECTION("no mask") { check_attention(a, 25, 1, {}, 1); }
  SECTION("a padding bias and a softcap, K arriving transposed") {
    a.padding_bias = a.softcap = a.k_transposed = true;
    check_attention(a, 27, 1, {}, 1);
  }
}

TEST_CASE("attention: float16 and bfloat16 attention groups equal the per-op plan",
          "[planner][attention][half]") {
  // Proves: with 2-byte Q, K, V (the softmax in float32 between Casts, as lowering writes it),
  // grouped-query heads, a causal mask and a padding bias, the attention group forms and agrees
  // with the per-op plan within 8 units in the last place of the type (the group keeps the
  // probabilities in fp32 where the per-op plan rounds them).
  FusionModel a;
  a.padding_bias = a.causal = true;
  a.heads = 4, a.kv_heads = 2, a.repeat_kv = true;
  SECTION("float16") {
    a.dtype = onnx::TensorProto::FLOAT16;
    check_attention(a, 21, 1, {0x1p-8, 0x1p-8});
  }
  SECTION("bfloat16") {
    a.dtype = onnx::TensorProto::BFLOAT16;
    check_attention(a, 22, 1, {0x1p-5, 0x1p-5});
  }
  SECTION("float16 with a fourth-root scale on Q and the repeated Kᵀ") {
    a.dtype = onnx::TensorProto::FLOAT16;
    a.scale = FusionModel::Scale::FourthRoot;
    check_attention(a, 28, 1, {0x1p-8, 0x1p-8});
  }
}

// The math of the ilp plan's attention group, planned for architectures from `capability` on
// (their shared memory, as the driver sets it).
std::string attention_math(const Graph& g, int capability) {
  PlannerOptions options;
  options.planner = "ilp";
  options.device = host_target_device();
  options.device.min_compute_capability = capability;
  options.device.max_shared_per_block = max_shared_per_block_of(capability);
  const FusionPlan plan = plan_fusion(g, options);
  for (const FusionGroup& group : plan.groups)
    if (const auto* attention = std::get_if<AttentionSpec>(&group.spec)) {
      CHECK(attention->warps * attention->rows_per_warp == attention->query_tile());
      CHECK(attention->shared_bytes <= options.device.max_shared_per_block);
      if (!attention->tensor_cores) return "fma";
      CHECK(attention->rows_per_warp == 16);
      return std::string("tensor_cores ") + std::string(dtype_name(attention->element));
    }
  return "none";
}

TEST_CASE("attention: 16-bit products of 16 queries or more run on tensor cores",
          "[planner][attention][half]") {
  // Proves: float16 and bfloat16 attention with at least 16 queries plans on tensor cores
  // (stitch::attention::FlashMmaConfig: Q·Kᵀ and P·V as warp products of the type, the
  // probabilities rounded to it as the graph rounds them), agreeing with the per-op plan within
  // the type's precision; float32, fewer than 16 queries, or an architecture before sm_80 keep
  // the fp32 FMA kernel.
  FusionModel a;
  a.padding_bias = a.causal = true;
  a.queries = 37, a.keys = 70, a.head_dim = a.value_dim = 16;
  SECTION("float16, grouped-query heads") {
    a.dtype = onnx::TensorProto::FLOAT16;
    a.heads = 4, a.kv_heads = 2, a.repeat_kv = true;
    CHECK(attention_math(attention_graph(a), 90) == "tensor_cores float16");
    CHECK(attention_math(attention_graph(a), 75) == "fma");
    check_attention(a, 41, 1, {0x1p-8, 0x1p-8});
  }
  SECTION("bfloat16, head dim 40 and value dim 24 (padded to 48 and 32)") {
    a.dtype = onnx::TensorProto::BFLOAT16;
    a.head_dim = 40, a.value_dim = 24;
    CHECK(attention_math(attention_graph(a), 80) == "tensor_cores bfloat16");
    check_attention(a, 42, 1, {0x1p-5, 0x1p-5});
  }
  SECTION("float32 and short float16 stay on FMA") {
    CHECK(attention_math(attention_graph(a), 90) == "fma");
    a.dtype = onnx::TensorProto::FLOAT16;
    a.queries = 15;
    CHECK(attention_math(attention_graph(a), 90) == "fma");
  }
}

// The operands of the ilp plan's attention group that a prologue computes ("q", "k", "v").
std::string prologue_operands(const Graph& g, FusionMode mode = FusionMode::Auto) {
  PlannerOptions options;
  options.planner = "ilp";
  options.device = host_target_device();
  options.attention = mode;
  const FusionPlan plan = plan_fusion(g, options);
  std::string operands;
  for (const FusionGroup& group : plan.groups)
    if (const auto* attention = std::get_if<AttentionSpec>(&group.spec)) {
      if (!attention->q.prologue.empty()) operands += "q";
      if (!attention->k.prologue.empty()) operands += "k";
      if (!attention->v.prologue.empty()) operands += "v";
      for (const AttentionSpec::Operand* o : {&attention->q, &attention->k, &attention->v})
        CHECK((o->prologue.empty() || o->vector == 1));
    }
  return operands;
}

TEST_CASE("attention: rotary embedding on Q and K evaluates as the kernel loads them",
          "[planner][attention]") {
  // Proves: rotary embedding of Q and K after the head split, as exporters write rotate_half
  // (Slices, Neg, Concat, Muls and Add) and as the ONNX RotaryEmbedding op lowers (Slices, Muls,
  // Sub, Add, Concat), joins the attention group as Q's and K's prologues (a scaling after them
  // applied to their values): the head split, the
  // rotation, the attention and the head merge are one launch (K's rotation before its
  // grouped-query repeat too), equal to the per-op plan, on fp32 FMA and on float16 tensor
  // cores (the rotated rows load element by element; the model's Casts of Q, K and V to
  // float16 join the prologues). The interleaved forms' pairs go through reshapes, which a
  // prologue reads at the same row-major position.
  FusionModel a;
  a.rotary = FusionModel::Rotary::Half;
  SECTION("rotate_half, a causal mask") {
    a.causal = true;
    CHECK(prologue_operands(attention_graph(a)) == "qk");
    check_attention(a, 51, 1, {}, 1);
  }
  SECTION("rotate_half, then a fourth-root scale on Q and Kᵀ") {
    a.scale = FusionModel::Scale::FourthRoot;
    CHECK(prologue_operands(attention_graph(a)) == "qk");
    check_attention(a, 57, 1, {}, 1);
  }
  SECTION("rotate_half, grouped-query heads, a padding bias") {
    a.heads = 6, a.kv_heads = 2, a.repeat_kv = a.padding_bias = true;
    CHECK(prologue_operands(attention_graph(a)) == "qk");
    check_attention(a, 52, 1, {}, 1);
  }
  SECTION("rotate_half, one query over 600 keys in flash-decoding's splits") {
    a.queries = 1, a.keys = 600, a.causal = true;
    CHECK(prologue_operands(attention_graph(a)) == "qk");
    check_attention(a, 58, 1, {}, 1);
  }
  SECTION("rotate_half in float16 on tensor cores") {
    a.dtype = onnx::TensorProto::FLOAT16;
    a.queries = 37, a.keys = 70, a.head_dim = a.value_dim = 16, a.causal = true;
    CHECK(attention_math(attention_graph(a), 90) == "tensor_cores float16");
    // V's prologue: its Cast to float16 (the output's Cast back is a launch of its own).
    CHECK(prologue_operands(attention_graph(a)) == "qkv");
    check_attention(a, 53, 1, {0x1p-8, 0x1p-8});
  }
  SECTION("a long attention: K's rotation stays a kernel of its own") {
    // Every query tile's block would rotate all of its head's keys again: the cost model keeps
    // K's rotation apart and takes Q's, which each block rotates once.
    a.batch = 1, a.heads = a.kv_heads = 4, a.queries = a.keys = 2048;
    a.head_dim = a.value_dim = 64;
    CHECK(prologue_operands(attention_graph(a), FusionMode::Fused) == "q");
  }
  SECTION("rotate_half in float16 at head dim 256: the FMA kernel, whose rows need fewer "
          "registers than the prologue and the fragments") {
    a.dtype = onnx::TensorProto::FLOAT16;
    a.batch = 1, a.heads = a.kv_heads = 1, a.queries = 32, a.keys = 33;
    a.head_dim = a.value_dim = 256;
    CHECK(attention_math(attention_graph(a), 90) == "fma");
    CHECK(prologue_operands(attention_graph(a)) == "qkv");
  }
  SECTION("the RotaryEmbedding op") {
    a.rotary = FusionModel::Rotary::Op;
    CHECK(prologue_operands(attention_graph(a)) == "qk");
    check_attention(a, 54, 1, {}, 1);
  }
  SECTION("rotate_every_two, grouped-query heads") {
    a.rotary = FusionModel::Rotary::Interleaved;
    a.heads = 6, a.kv_heads = 2, a.repeat_kv = true;
    CHECK(prologue_operands(attention_graph(a)) == "qk");
    check_attention(a, 56, 1, {}, 1);
  }
  SECTION("the interleaved RotaryEmbedding op") {
    a.rotary = FusionModel::Rotary::OpInterleaved;
    CHECK(prologue_operands(attention_graph(a)) == "qk");
    check_attention(a, 55, 1, {}, 1);
  }
}

TEST_CASE("attention: no attention group where the kernel cannot hold it", "[planner][attention]") {
  // Proves: scores that are also a graph output, and a head dim over 256, keep the unfused
  // plan's products and softmax (no attention group), which still agree with the per-op plan.
  FusionModel a;
  SECTION("the scores are a graph output") { a.scores_output = true; }
  SECTION("head dim 264") { a.head_dim = a.value_dim = 264, a.heads = a.kv_heads = 1; }
  check_attention(a, 31, 0);
}

TEST_CASE("attention: --attention fused and unfused override the cost model",
          "[planner][attention]") {
  // Proves: the ilp planner under FusionMode::Fused plans an attention the cost model would
  // leave unfused as one attention group (the solver's bound and objective in costs, not in the
  // bonus it minimizes), and under FusionMode::Unfused plans none where it would fuse one.
  auto attention_groups = [](const Graph& g, FusionMode mode, IlpStats* stats = nullptr) {
    PlannerOptions options;
    options.planner = "ilp";
    options.device = host_target_device();
    options.attention = mode;
    const FusionPlan plan = plan_fusion(g, options);
    if (stats) *stats = plan.ilp;
    int count = 0;
    for (const FusionGroup& group : plan.groups)
      count += group.kind == GroupKind::Attention;
    return count;
  };
  FusionModel a;
  a.padding_bias = true;
  SECTION("a long attention") {
    a.batch = 4, a.heads = a.kv_heads = 12, a.queries = a.keys = 2048,
    a.head_dim = a.value_dim = 64;
    const Graph g = attention_graph(a);
    CHECK(attention_groups(g, FusionMode::Auto) == 0);
    IlpStats stats;
    CHECK(attention_groups(g, FusionMode::Fused, &stats) == 1);
    CHECK(stats.objective > 0);
    CHECK(stats.bound <= stats.objective);
    CHECK(stats.bound > 0);
  }
  SECTION("a short attention") {
    const Graph g = attention_graph(a);
    CHECK(attention_groups(g, FusionMode::Auto) == 1);
    CHECK(attention_groups(g, FusionMode::Unfused) == 0);
    CHECK(attention_groups(g, FusionMode::Fused) == 1);
  }
}
