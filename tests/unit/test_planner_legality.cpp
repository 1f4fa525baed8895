// Legality decisions (legality.h) with their reasons, the cost model's terms (cost_model.h),
// and the memory plan of fused groups.
#include "test_planner_graphs.h"

#include "graph/make_views.h"
#include "planner/memory_plan.h"
#include "planner/plan_common.h"

using namespace stitch;
using namespace stitch::test;

namespace {

std::vector<int32_t> nodes_named(const Graph& g, const std::vector<std::string>& names) {
  std::vector<int32_t> nodes;
  for (const std::string& name : names)
    nodes.push_back(node_named(g, name));
  std::sort(nodes.begin(), nodes.end());
  return nodes;
}

FusionDecision decide(const Graph& g, const std::vector<std::string>& names, GroupAnalysis& a) {
  FusionContext ctx(g, DeviceParams{});
  return analyze_group(ctx, nodes_named(g, names), a);
}

} // namespace

// The expanded LayerNorm chain is one Regional group over rows of the last axis, reading x
// and the constants and writing only y.
TEST_CASE("planner legality: expanded LayerNorm is one regional group", "[planner]") {
  GraphBuilder b;
  TensorId x = b.input({8, 16, 64});
  b.output(layer_norm_chain(b, x, 64, "ln_"));
  Graph g = b.finish();
  GroupAnalysis a;
  FusionDecision d = decide(g,
                            {"ln_mean", "ln_sub", "ln_pow", "ln_var", "ln_eps", "ln_sqrt", "ln_div",
                             "ln_gamma", "ln_beta"},
                            a);
  INFO(d.reason);
  REQUIRE(d.legal);
  CHECK(a.scheme == StitchScheme::Regional);
  CHECK(a.rows == 128);
  CHECK(a.row_length == 64);
  CHECK(a.outputs == std::vector<TensorId>{g.outputs[0]});
  CHECK(a.cached_rows == 1); // x is read by every pass (x - mean is computed again from it)
}

// Softmax with its scale and additive mask: pointwise producers of the row op's row.
TEST_CASE("planner legality: scaled, masked softmax is regional", "[planner]") {
  GraphBuilder b;
  TensorId scores = b.input({2, 4, 16, 16});
  TensorId mask = b.input({2, 1, 1, 16});
  TensorId scaled = b.op(OpKind::Div, {scores, b.constant({}, 8.0f)}, "scale");
  TensorId masked = b.op(OpKind::Add, {scaled, mask}, "mask");
  b.output(softmax_chain(b, masked, "softmax"));
  Graph g = b.finish();
  GroupAnalysis a;
  std::vector<std::string> nodes = {"scale", "mask"};
  for (const std::string& n : softmax_nodes("softmax"))
    nodes.push_back(n);
  FusionDecision d = decide(g, nodes, a);
  INFO(d.reason);
  REQUIRE(d.legal);
  CHECK(a.scheme == StitchScheme::Regional);
  CHECK(a.rows == 128);
  CHECK(a.row_length == 16);
}

// Pointwise results of different shapes have no single iteration space.
TEST_CASE("planner legality: local group needs one output shape", "[planner]") {
  GraphBuilder b;
  TensorId x = b.input({4, 8});
  TensorId row = b.input({4, 1});
  TensorId e = b.op(OpKind::Exp, {row}, "exp");
  TensorId s = b.op(OpKind::Add, {x, e}, "add");
  b.output(e);
  b.output(s);
  Graph g = b.finish();
  GroupAnalysis a;
  FusionDecision d = decide(g, {"exp", "add"}, a);
  REQUIRE_FALSE(d.legal);
  CHECK_THAT(d.reason, Catch::Contains("different shapes"));
  // Without the small output the chain is Local and the small exp is recomputed per element.
  GraphBuilder b2;
  TensorId x2 = b2.input({4, 8});
  TensorId row2 = b2.input({4, 1});
  b2.output(b2.op(OpKind::Add, {x2, b2.op(OpKind::Exp, {row2}, "exp")}, "add"));
  Graph g2 = b2.finish();
  FusionDecision d2 = decide(g2, {"exp", "add"}, a);
  REQUIRE(d2.legal);
  CHECK(a.scheme == StitchScheme::Local);
  CHECK(a.recomputed == 32 - 4);
}

// Movement nodes in a Local group are index remappings; the cost model sees what they read.
TEST_CASE("planner legality: a local group reads through transposes and slices and concats",
          "[planner]") {
  // Rotary embedding's rotate_half after the head transpose: one Local group; the innermost
  // axis stays innermost, so every read is coalesced, and both halves are read.
  GraphBuilder b;
  TensorId x = b.input({2, 8, 3, 16});
  TensorId q = b.op(OpKind::Transpose, {x}, "t", {{"perm", std::vector<int64_t>{0, 2, 1, 3}}});
  TensorId axis = b.constant_ints({3});
  TensorId q1 = b.op(OpKind::Slice, {q, b.constant_ints({0}), b.constant_ints({8}), axis}, "s1");
  TensorId q2 = b.op(OpKind::Slice, {q, b.constant_ints({8}), b.constant_ints({16}), axis}, "s2");
  TensorId neg = b.op(OpKind::Neg, {q2}, "neg");
  TensorId rot = b.op(OpKind::Concat, {neg, q1}, "cat", {{"axis", int64_t{-1}}});
  b.output(b.op(OpKind::Add, {q, rot}, "add"));
  Graph g = b.finish();
  GroupAnalysis a;
  FusionDecision d = decide(g, {"t", "s1", "s2", "neg", "cat", "add"}, a);
  INFO(d.reason);
  REQUIRE(d.legal);
  CHECK(a.scheme == StitchScheme::Local);
  const auto& spec = std::get<LocalSpec>(a.group.spec);
  REQUIRE(spec.moves.size() == 4);
  CHECK(spec.iteration == Shape{2, 3, 8, 16});
  CHECK(spec.io.reads == std::vector<TensorId>{x});
  CHECK(spec.uncoalesced_bytes == 0);
  CHECK(spec.unread_bytes == 0);
  CHECK(a.recomputed == 0); // Neg runs once per element of its half
  const MovementRead& cat = spec.moves[3];
  REQUIRE(cat.parts.size() == 2);
  CHECK(cat.axis == 3);
  CHECK((cat.parts[1].begin == 8 && cat.parts[1].end == 16 && cat.parts[1].offset[3] == -8));
  const MovementRead& t = spec.moves[0];
  CHECK(t.parts[0].source == std::vector<int32_t>{0, 2, 1, 3});

  // A transpose of the two innermost axes: consecutive elements of the iteration read elements
  // 16 floats apart, a 32-byte sector each for 4 useful bytes.
  GraphBuilder b2;
  TensorId y = b2.input({4, 8, 16});
  TensorId yt = b2.op(OpKind::Transpose, {y}, "t", {{"perm", std::vector<int64_t>{0, 2, 1}}});
  b2.output(b2.op(OpKind::Relu, {yt}, "relu"));
  Graph g2 = b2.finish();
  FusionDecision d2 = decide(g2, {"t", "relu"}, a);
  REQUIRE(d2.legal);
  CHECK(std::get<LocalSpec>(a.group.spec).uncoalesced_bytes == 4 * 8 * 16 * 4 * 7);

  // A slice of the first half: the other half is never read, and not charged.
  GraphBuilder b3;
  TensorId z = b3.input({4, 32});
  TensorId zs =
      b3.op(OpKind::Slice,
            {z, b3.constant_ints({0}), b3.constant_ints({16}), b3.constant_ints({1})}, "s");
  b3.output(b3.op(OpKind::Relu, {zs}, "relu"));
  Graph g3 = b3.finish();
  FusionDecision d3 = decide(g3, {"s", "relu"}, a);
  REQUIRE(d3.legal);
  CHECK(std::get<LocalSpec>(a.group.spec).unread_bytes == 4 * 16 * 4);
  FusionContext ctx3(g3, DeviceParams{});
  // Half the input, the output, and the Slice's starts, ends and axes (3 x 8 bytes).
  CHECK(group_cost(ctx3, a).bytes == 4 * 16 * 4 + 4 * 16 * 4 + 3 * 8);

  // A row op does not read through a transpose (Regional groups hold no movement nodes).
  GraphBuilder b4;
  TensorId w = b4.input({4, 8, 16});
  TensorId wt = b4.op(OpKind::Transpose, {w}, "t", {{"perm", std::vector<int64_t>{0, 2, 1}}});
  b4.output(b4.op(OpKind::ReduceMax, {wt}, "max", {{"axes", last_axis()}}));
  Graph g4 = b4.finish();
  FusionDecision d4 = decide(g4, {"t", "max"}, a);
  REQUIRE_FALSE(d4.legal);
  CHECK_THAT(d4.reason, Catch::Contains("index remapping") || Catch::Contains("transpose"));
}

// A group that a path leaves and re-enters could never be run as one kernel.
TEST_CASE("planner legality: the group must be convex", "[planner]") {
  GraphBuilder b;
  TensorId x = b.input({4, 8, 8});
  TensorId a1 = b.op(OpKind::Relu, {x}, "first");
  TensorId t =
      b.op(OpKind::Transpose, {a1}, "transpose", {{"perm", std::vector<int64_t>{0, 2, 1}}});
  b.output(b.op(OpKind::Add, {a1, t}, "last"));
  Graph g = b.finish();
  GroupAnalysis a;
  FusionDecision d = decide(g, {"first", "last"}, a);
  REQUIRE_FALSE(d.legal);
  CHECK_THAT(d.reason, Catch::Contains("not convex") && Catch::Contains("'transpose' (Transpose)"));
  // Without the Add, the Relu and the Transpose after it are one Local group, writing the
  // transposed result (the Transpose an index remapping of the Relu's value).
  d = decide(g, {"first", "transpose"}, a);
  REQUIRE(d.legal);
  CHECK(std::get<LocalSpec>(a.group.spec).moves.size() == 1);
}

// Rows too long to keep in shared memory between the reductions are read again by each pass,
// and the cost model charges those reads.
TEST_CASE("planner legality: a regional row that fits no cache is read again, and costs it",
          "[planner]") {
  GraphBuilder b;
  TensorId x = b.input({2, 100000});
  b.output(layer_norm_chain(b, x, 100000, "ln_"));
  Graph g = b.finish();
  GroupAnalysis a;
  FusionDecision d = decide(g,
                            {"ln_mean", "ln_sub", "ln_pow", "ln_var", "ln_eps", "ln_sqrt", "ln_div",
                             "ln_gamma", "ln_beta"},
                            a);
  INFO(d.reason);
  REQUIRE(d.legal);
  const auto& spec = std::get<RegionalSpec>(a.group.spec);
  CHECK(spec.cache == RowCache::None);
  CHECK(a.group.launch.dynamic_shared_bytes == 0);
  // x is read by all three passes: two more reads of its 800000 bytes.
  CHECK(spec.reread_bytes == 2 * 2 * 100000 * 4);
  FusionContext ctx(g, DeviceParams{});
  int64_t once = 0;
  for (TensorId t : a.inputs)
    once += g.tensor(t).bytes();
  for (TensorId t : a.outputs)
    once += g.tensor(t).bytes();
  CHECK(group_cost(ctx, a).bytes == once + spec.reread_bytes);
}

// Row ops over different rows cannot share a block per row.
TEST_CASE("planner legality: row ops must share the row space", "[planner]") {
  GraphBuilder b;
  TensorId x = b.input({8, 64});
  TensorId m = b.op(OpKind::ReduceMax, {x}, "rowmax", {{"axes", last_axis()}});
  TensorId all = b.op(OpKind::ReduceMean, {x}, "allmean", {{"axes", std::vector<int64_t>{0, 1}}});
  b.output(b.op(OpKind::Add, {m, all}, "add"));
  Graph g = b.finish();
  GroupAnalysis a;
  FusionDecision d = decide(g, {"rowmax", "allmean", "add"}, a);
  REQUIRE_FALSE(d.legal);
  CHECK_THAT(d.reason, Catch::Contains("reduce different rows"));
}

// MatMul + bias + Relu is a cuBLASLt epilogue; an Exp is not.
TEST_CASE("planner legality: GEMM epilogues", "[planner]") {
  GraphBuilder b;
  TensorId x = b.input({16, 32});
  TensorId w = b.constant({32, 64}, 0.5f);
  TensorId y = b.op(OpKind::MatMul, {x, w}, "matmul");
  TensorId biased = b.op(OpKind::Add, {y, b.constant({64}, 1.0f)}, "bias");
  TensorId act = b.op(OpKind::Relu, {biased}, "relu");
  b.output(b.op(OpKind::Exp, {act}, "exp"));
  Graph g = b.finish();
  GroupAnalysis a;
  FusionDecision d = decide(g, {"matmul", "bias", "relu"}, a);
  INFO(d.reason);
  REQUIRE(d.legal);
  CHECK(a.kind == GroupKind::GemmLibrary);
  CHECK(a.epilogue_nodes == 2);
  d = decide(g, {"matmul", "bias", "relu", "exp"}, a);
  REQUIRE_FALSE(d.legal);
  CHECK_THAT(d.reason, Catch::Contains("follows the epilogue's activation"));
  d = decide(g, {"bias", "relu", "exp"}, a);
  CHECK(d.legal); // without the product: a Local chain
  CHECK(a.scheme == StitchScheme::Local);
}

// Multi-query attention's scores: four query heads against one key head broadcast over them
// (K^T [2,1,8,16] against Q [2,4,16,8]): the heads stack into M, one call batched over the two
// sequences (B advancing by one head's K x N), not a loop of calls; where Q's rows do not
// continue from head to head (read through a Transpose) the loop stays.
TEST_CASE("planner legality: a key head shared by query heads stacks them into M", "[planner]") {
  GraphBuilder b;
  TensorId q = b.input({2, 4, 16, 8}), kt = b.input({2, 1, 8, 16});
  b.output(b.op(OpKind::MatMul, {q, kt}, "scores"));
  Graph g = b.finish();
  GroupAnalysis a;
  FusionDecision d = decide(g, {"scores"}, a);
  INFO(d.reason);
  REQUIRE(d.legal);
  const auto& spec = std::get<GemmSpec>(a.group.spec);
  CHECK(spec.outer.empty());
  CHECK((spec.m == 64 && spec.n == 16 && spec.k == 8 && spec.stacked == 4));
  CHECK((spec.batch_count == 2 && spec.stride_a == 512 && spec.stride_b == 128 &&
         spec.stride_d == 1024));

  GraphBuilder t;
  TensorId q_rows = t.input({2, 16, 4, 8}), kt2 = t.input({2, 1, 8, 16});
  TensorId q_heads =
      t.op(OpKind::Transpose, {q_rows}, "q_heads",
           std::map<std::string, Attribute::Value>{{"perm", std::vector<int64_t>{0, 2, 1, 3}}});
  t.output(t.op(OpKind::MatMul, {q_heads, kt2}, "scores"));
  Graph gt = t.finish();
  d = decide(gt, {"q_heads", "scores"}, a);
  INFO(d.reason);
  REQUIRE(d.legal);
  const auto& strided = std::get<GemmSpec>(a.group.spec);
  CHECK(strided.outer == Shape{2});
  CHECK((strided.m == 16 && strided.batch_count == 4 && strided.stride_b == 0));
}

// Attention's head split and merge: a MatMul reads Q [B,H,S,D] and K^T [B,H,D,S] through the
// Transposes of the projections' [B,S,H,D] views, and P.V writes its result straight into the
// merged [B,S,H,D] layout. The heads are the library's batch (one stride); the batch axis B is
// a loop of calls where B > 1 (no single stride covers both).
TEST_CASE("planner legality: a MatMul reads and writes through transposes", "[planner]") {
  for (int64_t batch : {1, 2}) {
    GraphBuilder b;
    TensorId q = b.input({batch, 16, 4, 8}), k = b.input({batch, 16, 4, 8});
    TensorId v = b.input({batch, 16, 4, 8});
    auto perm = [](std::vector<int64_t> p) {
      return std::map<std::string, Attribute::Value>{{"perm", p}};
    };
    TensorId qt = b.op(OpKind::Transpose, {q}, "q_heads", perm({0, 2, 1, 3}));
    TensorId kt = b.op(OpKind::Transpose, {k}, "k_heads", perm({0, 2, 3, 1}));
    TensorId vt = b.op(OpKind::Transpose, {v}, "v_heads", perm({0, 2, 1, 3}));
    TensorId scores = b.op(OpKind::MatMul, {qt, kt}, "scores");
    TensorId o = b.op(OpKind::MatMul, {scores, vt}, "context");
    b.output(b.op(OpKind::Transpose, {o}, "merge", perm({0, 2, 1, 3})));
    Graph g = b.finish();
    INFO("batch " << batch);
    GroupAnalysis a;
    FusionDecision d = decide(g, {"q_heads", "k_heads", "scores"}, a);
    INFO(d.reason);
    REQUIRE(d.legal);
    CHECK(a.kind == GroupKind::GemmLibrary);
    CHECK(a.inputs == std::vector<TensorId>{q, k});
    const auto& qk = std::get<GemmSpec>(a.group.spec);
    CHECK(qk.a == q);
    CHECK(qk.b == k);
    CHECK((qk.m == 16 && qk.n == 16 && qk.k == 8));
    CHECK((!qk.trans_a && qk.lda == 32)); // Q's rows are 4 heads x 8 apart
    CHECK((qk.trans_b && qk.ldb == 32));  // K^T's columns are K's rows: B used transposed
    CHECK((qk.batch_count == 4 && qk.stride_a == 8 && qk.stride_b == 8 && qk.stride_d == 256));
    CHECK(qk.outer == (batch == 1 ? Shape{} : Shape{2}));
    if (batch == 2) {
      CHECK(qk.outer_stride_a == std::vector<int64_t>{512});
      CHECK(qk.outer_stride_d == std::vector<int64_t>{1024});
    }
    d = decide(g, {"v_heads", "context", "merge"}, a);
    INFO(d.reason);
    REQUIRE(d.legal);
    CHECK(a.outputs == std::vector<TensorId>{g.outputs[0]});
    const auto& pv = std::get<GemmSpec>(a.group.spec);
    CHECK(pv.layout_b == node_named(g, "v_heads"));
    CHECK(pv.layout_result == node_named(g, "merge"));
    CHECK((pv.ldb == 32 && !pv.trans_b && pv.ldd == 32));
    CHECK((pv.batch_count == 4 && pv.stride_b == 8 && pv.stride_d == 8));
    // A loop over B costs a library call per batch index.
    FusionContext ctx(g, DeviceParams{});
    CHECK(group_cost(ctx, a).launches == batch);
  }
}

// A product of a transpose with itself reads the one stored tensor as both operands.
TEST_CASE("planner legality: a MatMul of a transpose with itself reads it twice in place",
          "[planner]") {
  GraphBuilder b;
  TensorId x = b.input({8, 8});
  TensorId xt = b.op(OpKind::Transpose, {x}, "xt", {{"perm", std::vector<int64_t>{1, 0}}});
  b.output(b.op(OpKind::MatMul, {xt, xt}, "square"));
  Graph g = b.finish();
  GroupAnalysis a;
  FusionDecision d = decide(g, {"xt", "square"}, a);
  INFO(d.reason);
  REQUIRE(d.legal);
  const auto& spec = std::get<GemmSpec>(a.group.spec);
  CHECK((spec.a == x && spec.b == x));
  CHECK((spec.trans_a && spec.trans_b && spec.lda == 8 && spec.ldb == 8));
  CHECK(a.inputs == std::vector<TensorId>{x});
}

// What a library call cannot read or write in place stays a copy, with the reason.
TEST_CASE("planner legality: transposes a MatMul cannot read or write through", "[planner]") {
  GraphBuilder b;
  TensorId x = b.input({16, 4, 8});
  auto perm = [](std::vector<int64_t> p) {
    return std::map<std::string, Attribute::Value>{{"perm", p}};
  };
  TensorId xt = b.op(OpKind::Transpose, {x}, "heads", perm({1, 0, 2}));
  TensorId y = b.op(OpKind::MatMul, {xt, b.constant({8, 8}, 0.5f)}, "product");
  TensorId moved = b.op(OpKind::Transpose, {y}, "moves_columns", perm({0, 2, 1}));
  b.output(b.op(OpKind::Relu, {xt}, "second_reader"));
  TensorId r = b.op(OpKind::MatMul, {b.input({4, 16, 8}), b.constant({8, 8}, 0.25f)}, "r");
  TensorId res = b.op(OpKind::Add, {r, b.input({4, 16, 8})}, "residual");
  b.output(b.op(OpKind::Transpose, {res}, "after_residual", perm({1, 0, 2})));
  b.output(moved);
  Graph g = b.finish();
  GroupAnalysis a;
  FusionDecision d = decide(g, {"heads", "product"}, a);
  REQUIRE_FALSE(d.legal);
  CHECK_THAT(d.reason, Catch::Contains("is read elsewhere than by"));
  d = decide(g, {"product", "moves_columns"}, a);
  REQUIRE_FALSE(d.legal);
  CHECK_THAT(d.reason, Catch::Contains("moves its last axis"));
  d = decide(g, {"r", "residual", "after_residual"}, a);
  REQUIRE_FALSE(d.legal);
  CHECK_THAT(d.reason, Catch::Contains("residual addend is stored in the product's layout"));
  // The Transpose and a pointwise reader are a Local group (the Transpose read through).
  d = decide(g, {"heads", "second_reader"}, a);
  REQUIRE(d.legal);
  CHECK(a.scheme == StitchScheme::Local);
}

// Where each GEMM addend goes is the spec's decision, and the cost model prices what it makes:
// a bias row is the library's bias, a lone full-shape addend its C, and an addend the library
// cannot take (Gemm's C as a column [M,1]) goes to a fill kernel: a second launch, which writes
// the result and has the GEMM read it back as C.
TEST_CASE("planner legality: GEMM addends and the fill kernel's cost", "[planner]") {
  GraphBuilder b;
  TensorId x = b.input({16, 32});
  TensorId w = b.constant({32, 64}, 0.5f);
  TensorId y = b.op(OpKind::Gemm, {x, w, b.constant({64}, 1.0f)}, "row_c");
  b.output(
      b.op(OpKind::Gemm, {y, b.constant({64, 64}, 0.25f), b.constant({16, 1}, 2.0f)}, "column_c"));
  Graph g = b.finish();
  FusionContext ctx(g, DeviceParams{});
  GroupAnalysis row, column;
  REQUIRE(decide(g, {"row_c"}, row).legal);
  const auto& plain = std::get<GemmSpec>(row.group.spec);
  CHECK(plain.bias == 0); // C [64] with beta 1: the bias epilogue
  CHECK(plain.fill.empty());
  CHECK(group_cost(ctx, row).launches == 1);
  REQUIRE(decide(g, {"column_c"}, column).legal);
  const auto& spec = std::get<GemmSpec>(column.group.spec);
  CHECK(spec.bias < 0);
  CHECK(spec.c < 0);
  REQUIRE(spec.fill.size() == 1);
  CHECK(spec.fill_blocks > 0);
  const GroupCost cost = group_cost(ctx, column);
  CHECK(cost.launches == 2);
  CHECK(cost.launch == 2 * DeviceParams{}.launch_cost_bytes());
  int64_t once = 0;
  for (TensorId t : column.inputs)
    once += g.tensor(t).bytes();
  for (TensorId t : column.outputs)
    once += g.tensor(t).bytes();
  CHECK(cost.bytes == once + 2 * 16 * 64 * 4); // the result written by the fill, read as C
  CHECK(group_launches(make_group(ctx, column)) == 2);
}

// A column reduction and its broadcast consumer: one cooperative launch with scratch.
TEST_CASE("planner legality: column reduction is global", "[planner]") {
  GraphBuilder b;
  TensorId x = b.input({256, 64});
  TensorId m = b.op(OpKind::ReduceMean, {x}, "colmean", {{"axes", std::vector<int64_t>{0}}});
  b.output(b.op(OpKind::Sub, {x, m}, "center"));
  Graph g = b.finish();
  GroupAnalysis a;
  FusionDecision d = decide(g, {"colmean", "center"}, a);
  INFO(d.reason);
  REQUIRE(d.legal);
  CHECK(a.scheme == StitchScheme::Global);
  CHECK(a.rows == 256);
  CHECK(a.row_length == 64);
  CHECK(a.group.launch.cooperative);
  CHECK(a.group.scratch_bytes > 0);
}

// Unrelated pointwise ops of different shapes share one launch as independent parts.
TEST_CASE("planner legality: unrelated ops are independent parts", "[planner]") {
  GraphBuilder b;
  TensorId x = b.input({4, 8});
  TensorId y = b.input({3, 5});
  b.output(b.op(OpKind::Relu, {x}, "relu"));
  b.output(b.op(OpKind::Exp, {y}, "exp"));
  Graph g = b.finish();
  GroupAnalysis a;
  FusionDecision d = decide(g, {"relu", "exp"}, a);
  INFO(d.reason);
  REQUIRE(d.legal);
  CHECK(a.scheme == StitchScheme::Independent);
  CHECK(a.parts.size() == 2);
}

// Internal tensors cost nothing: the fused chain pays for x, the constants and y only, and
// one launch instead of two.
TEST_CASE("planner cost: internal tensors and launches", "[planner]") {
  GraphBuilder b;
  TensorId x = b.input({1024, 1024});
  TensorId r = b.op(OpKind::Relu, {x}, "relu");
  b.output(b.op(OpKind::Exp, {r}, "exp"));
  Graph g = b.finish();
  FusionContext ctx(g, DeviceParams{});
  GroupAnalysis fused, relu, exp;
  REQUIRE(analyze_group(ctx, {0, 1}, fused));
  REQUIRE(analyze_group(ctx, {0}, relu));
  REQUIRE(analyze_group(ctx, {1}, exp));
  GroupCost c = group_cost(ctx, fused);
  const int64_t mib4 = 1024 * 1024 * 4;
  CHECK(c.bytes == 2 * mib4);
  CHECK(c.launch == DeviceParams{}.launch_cost_bytes());
  CHECK(c.parallelism == 0); // a million elements fill the device
  CHECK(group_cost(ctx, relu).bytes + group_cost(ctx, exp).bytes == 4 * mib4);
  CHECK(c.total() < group_cost(ctx, relu).total() + group_cost(ctx, exp).total());
}

// Few rows on 132 SMs: the regional kernel is charged for the idle device, on the bytes it
// streams (x in, y out; not the reduction's axes).
TEST_CASE("planner cost: parallelism penalty for few rows", "[planner]") {
  GraphBuilder b;
  TensorId x = b.input({4, 4096});
  b.output(softmax_chain(b, x, "softmax"));
  Graph g = b.finish();
  FusionContext ctx(g, DeviceParams{});
  GroupAnalysis a;
  REQUIRE(analyze_group(ctx, {0, 1, 2, 3, 4}, a));
  GroupCost c = group_cost(ctx, a);
  const int64_t streamed = 2 * 4 * 4096 * 4;
  CHECK(c.parallelism ==
        static_cast<int64_t>((kMaxSlowdown - 1.0) * static_cast<double>(streamed)));
}

// Tensors inside a fused group get no storage; the group's outputs are in the arena or the
// caller's buffers; a Global group's scratch gets an arena range.
TEST_CASE("planner memory plan: internal tensors and scratch", "[planner]") {
  GraphBuilder b;
  TensorId x = b.input({256, 64});
  TensorId m = b.op(OpKind::ReduceMean, {x}, "colmean", {{"axes", std::vector<int64_t>{0}}});
  TensorId c = b.op(OpKind::Sub, {x, m}, "center");
  b.output(b.op(OpKind::Transpose, {c}, "transpose", {{"perm", std::vector<int64_t>{1, 0}}}));
  Graph g = b.finish();
  PlannerOptions options;
  options.planner = "ilp";
  options.no_fuse = {"transpose"}; // a kernel of its own, reading c from the arena
  FusionPlan plan = plan_fusion(g, options);
  REQUIRE(plan.groups.size() == 2);
  REQUIRE(plan.groups[0].scheme == StitchScheme::Global);
  MemoryPlan memory = plan_memory(g, plan);
  CHECK(memory.storage[m].kind == StorageKind::None);
  CHECK(memory.storage[c].kind == StorageKind::Arena);
  CHECK(memory.scratch_offset[0] >= 0);
  CHECK(memory.scratch_offset[1] == -1);
  CHECK(memory.arena_bytes >= plan.groups[0].scratch_bytes);
}

// Each planner fills the groups' inputs and outputs; none keeps one group per node.
TEST_CASE("planner: none, greedy and ilp fill inputs and outputs", "[planner]") {
  GraphBuilder b;
  TensorId x = b.input({8, 16, 64});
  b.output(layer_norm_chain(b, x, 64, "ln_"));
  Graph g = b.finish();
  for (const char* name : {"none", "greedy", "ilp"}) {
    PlannerOptions options;
    options.planner = name;
    FusionPlan plan = plan_fusion(g, options);
    INFO(name);
    for (const FusionGroup& group : plan.groups) {
      CHECK_FALSE(group.outputs.empty());
      CHECK_FALSE(group.inputs.empty());
    }
    if (std::string(name) == "none") CHECK(plan.groups.size() == g.nodes.size());
    if (std::string(name) == "ilp") CHECK(plan.groups.size() == 1);
    if (std::string(name) == "greedy") CHECK(plan.groups.size() > 1); // splits at reductions
    // Compared with none and greedy (the ILP's search runs only for an ilp plan).
    CHECK(plan.totals.size() == (std::string(name) == "ilp" ? 3u : 2u));
    CHECK(plan.totals[0].planner == name);
  }
}

// Per-row pointwise nodes (an attention mask's arithmetic on [2,16] next to a row op over
// [2,16,64]) are Regional: the emitter evaluates them once per row.
TEST_CASE("planner legality: per-row mask arithmetic joins a regional group", "[planner]") {
  GraphBuilder b;
  TensorId x = b.input({2, 16, 64});
  TensorId mask = b.input({2, 16});
  TensorId mean = b.op(OpKind::ReduceMean, {x}, "mean", {{"axes", last_axis()}});
  b.output(b.op(OpKind::Sub, {x, mean}, "center"));
  TensorId inv = b.op(OpKind::Sub, {b.constant({}, 1.0f), mask}, "inv");
  b.output(b.op(OpKind::Mul, {inv, b.constant({}, -10000.0f)}, "bias"));
  Graph g = b.finish();
  GroupAnalysis a;
  FusionDecision d = decide(g, {"mean", "center", "inv", "bias"}, a);
  INFO(d.reason);
  REQUIRE(d.legal);
  CHECK(a.scheme == StitchScheme::Regional);
  CHECK(a.rows == 32);
  CHECK(a.row_length == 64);
}

// A full-row node reading an input that does not broadcast to the row space [2,16,64] (a
// [32,1] column against [32,64]) is not Regional: the emitter indexes full rows by that space.
TEST_CASE("planner legality: an input off the row space keeps a group from being regional",
          "[planner]") {
  GraphBuilder b;
  TensorId x = b.input({2, 16, 64});
  TensorId y = b.input({32, 64});
  TensorId column = b.input({32, 1});
  b.output(b.op(OpKind::ReduceMean, {x}, "mean", {{"axes", last_axis()}}));
  b.output(b.op(OpKind::Add, {y, column}, "shift"));
  Graph g = b.finish();
  FusionContext ctx(g, DeviceParams{});
  GroupAnalysis a;
  FusionDecision d = analyze_group(ctx, nodes_named(g, {"mean", "shift"}), a);
  INFO(d.reason);
  // Unrelated parts may still run side by side (Independent), never as one row space.
  if (d.legal)
    CHECK(a.scheme == StitchScheme::Independent);
  else
    CHECK(d.reason.find("does not broadcast to the row space [2,16,64]") != std::string::npos);
}

// --no-fuse: a named node is refused in any group of two or more with the flag as the reason,
// and every planner then gives it a group of its own while still fusing its neighbours.
TEST_CASE("planner legality: --no-fuse keeps a node alone in every planner", "[planner]") {
  GraphBuilder b;
  TensorId x = b.input({8, 16, 64});
  b.output(layer_norm_chain(b, x, 64, "ln_"));
  Graph g = b.finish();
  const std::vector<std::string> kept = {"ln_sqrt"};
  FusionContext ctx(g, DeviceParams{}, kept);
  GroupAnalysis a;
  FusionDecision d = analyze_group(ctx, nodes_named(g, {"ln_eps", "ln_sqrt"}), a);
  REQUIRE_FALSE(d.legal);
  CHECK(d.reason == "'ln_sqrt' (Sqrt) is kept out of fusion by --no-fuse");
  CHECK(analyze_group(ctx, nodes_named(g, {"ln_sqrt"}), a).legal);

  for (const char* planner : {"greedy", "ilp"}) {
    INFO("planner " << planner);
    PlannerOptions options;
    options.planner = planner;
    options.no_fuse = kept;
    FusionPlan plan = plan_fusion(g, options);
    const int32_t sqrt_node = node_named(g, "ln_sqrt");
    size_t fused_groups = 0;
    for (const FusionGroup& group : plan.groups) {
      const bool holds_sqrt =
          std::find(group.nodes.begin(), group.nodes.end(), sqrt_node) != group.nodes.end();
      if (holds_sqrt) CHECK(group.nodes.size() == 1);
      if (group.nodes.size() > 1) ++fused_groups;
    }
    CHECK(fused_groups >= 1); // the rest of the chain still fuses
  }
}

// --no-fuse NAME of a composite that lowering split into "NAME/..." nodes: the parts still
// fuse with each other, never with anything else.
TEST_CASE("planner legality: --no-fuse on a lowered composite keeps its parts together",
          "[planner]") {
  GraphBuilder b;
  TensorId x = b.input({8, 16, 64});
  TensorId scaled = b.op(OpKind::Mul, {x, b.constant({}, 0.5f)}, "scale");
  TensorId e = b.op(OpKind::Exp, {scaled}, "sm/Exp");
  TensorId y = b.op(OpKind::Relu, {e}, "sm/Relu");
  b.output(b.op(OpKind::Neg, {y}, "after"));
  Graph g = b.finish();
  CHECK(names_node_or_its_parts("sm", "sm/Exp"));
  CHECK_FALSE(names_node_or_its_parts("sm", "smx/Exp"));
  CHECK_FALSE(names_node_or_its_parts("sm", "sm/"));
  FusionContext ctx(g, DeviceParams{}, {"sm"});
  GroupAnalysis a;
  CHECK(analyze_group(ctx, nodes_named(g, {"sm/Exp", "sm/Relu"}), a).legal);
  FusionDecision before = analyze_group(ctx, nodes_named(g, {"scale", "sm/Exp"}), a);
  CHECK(before.reason == "'sm/Exp' (Exp) is kept out of fusion by --no-fuse");
  FusionDecision after = analyze_group(ctx, nodes_named(g, {"sm/Relu", "after"}), a);
  CHECK(after.reason == "'sm/Relu' (Relu) is kept out of fusion by --no-fuse");
}

namespace {

// Relu6 -> depthwise 3x3 Conv -> Relu6, MobileNet's middle, on [1,16,12,12]; `w` a constant.
Graph depthwise_block(GraphBuilder& b, bool also_read_producer = false) {
  TensorId x = b.input({1, 16, 12, 12});
  TensorId lo = b.constant({}, 0.0f), hi = b.constant({}, 6.0f);
  TensorId r = b.op(OpKind::Clip, {x, lo, hi}, "relu6_in");
  TensorId w = b.constant({16, 1, 3, 3}, 0.1f);
  TensorId bias = b.constant({16}, 0.5f);
  TensorId c = b.op(OpKind::Conv, {r, w, bias}, "dwconv",
                    {{"group", int64_t{16}}, {"pads", std::vector<int64_t>{1, 1, 1, 1}}});
  b.output(b.op(OpKind::Clip, {c, lo, hi}, "relu6_out"));
  if (also_read_producer) b.output(b.op(OpKind::Neg, {r}, "neg"));
  return b.finish();
}

} // namespace

// A depthwise Conv is a window op: with its producer (recomputed per tap) and consumer it is
// one Local group; greedy, where a window op takes producers but never joins its consumers,
// needs two launches, the ILP one.
TEST_CASE("planner legality: a depthwise Conv fuses with its producer and consumer", "[planner]") {
  GraphBuilder b;
  Graph g = depthwise_block(b);
  FusionContext ctx(g, DeviceParams{});
  CHECK(ctx.node_class[node_named(g, "dwconv")] == NodeClass::Window);
  GroupAnalysis a;
  FusionDecision d = decide(g, {"relu6_in", "dwconv", "relu6_out"}, a);
  INFO(d.reason);
  REQUIRE(d.legal);
  CHECK(a.scheme == StitchScheme::Local);
  CHECK(a.iteration == Shape{1, 16, 12, 12});
  CHECK(a.recomputed == 16 * 12 * 12 * 9 - 16 * 12 * 12); // the producer, 9 taps per output
  REQUIRE(a.inputs.size() == 5); // x, the two clip bounds, the filter, the bias
  REQUIRE(a.outputs.size() == 1);
  // Alone, the depthwise Conv stays a cuDNN call.
  CHECK(single_node_group(g, node_named(g, "dwconv"), DeviceParams{}).kind ==
        GroupKind::ConvLibrary);
  PlannerOptions options;
  options.planner = "greedy";
  CHECK(plan_fusion(g, options).groups.size() == 2);
  options.planner = "ilp";
  CHECK(plan_fusion(g, options).groups.size() == 1);
}

TEST_CASE("planner legality: a window group's producers must not be read elsewhere", "[planner]") {
  GraphBuilder b;
  Graph g = depthwise_block(b, true);
  GroupAnalysis a;
  FusionDecision d = decide(g, {"relu6_in", "dwconv"}, a);
  CHECK_FALSE(d.legal);
  CHECK_THAT(d.reason, Catch::Contains("recomputes it at every tap"));
}

TEST_CASE("planner legality: a full convolution and two windows are refused", "[planner]") {
  GraphBuilder b;
  TensorId x = b.input({1, 4, 8, 8});
  TensorId full = b.op(OpKind::Conv, {x, b.constant({4, 4, 3, 3}, 0.1f)}, "conv");
  TensorId p1 =
      b.op(OpKind::MaxPool, {full}, "pool1", {{"kernel_shape", std::vector<int64_t>{2, 2}}});
  b.output(
      b.op(OpKind::AveragePool, {p1}, "pool2", {{"kernel_shape", std::vector<int64_t>{2, 2}}}));
  Graph g = b.finish();
  FusionContext ctx(g, DeviceParams{});
  CHECK(ctx.node_class[node_named(g, "conv")] == NodeClass::Conv);
  CHECK(ctx.node_class[node_named(g, "pool1")] == NodeClass::Window);
  GroupAnalysis a;
  FusionDecision d = decide(g, {"pool1", "pool2"}, a);
  CHECK_FALSE(d.legal);
  CHECK_THAT(d.reason, Catch::Contains("two window ops"));
}

// A window op next to an unrelated op is no Independent pair: the Independent kernel's parts
// are pointwise sets or row ops with their pointwise nodes.
TEST_CASE("planner legality: a window op is no independent part", "[planner]") {
  GraphBuilder b;
  TensorId x = b.input({1, 4, 8, 8});
  TensorId y = b.input({3, 5});
  b.output(b.op(OpKind::MaxPool, {x}, "pool", {{"kernel_shape", std::vector<int64_t>{2, 2}}}));
  b.output(b.op(OpKind::Exp, {y}, "exp"));
  Graph g = b.finish();
  GroupAnalysis a;
  FusionDecision d = decide(g, {"pool", "exp"}, a);
  CHECK_FALSE(d.legal);
  CHECK_THAT(d.reason, Catch::Contains("an independent part holds pointwise ops, index remappings, "
                                       "views, row lookups and row ops only"));
}

namespace {

// Relu -> GlobalAveragePool -> Flatten (a view) -> Gemm (a Linear layer: W [10,64] with transB,
// a bias) -> Relu: a CNN's classifier on [batch,64,7,7].
Graph classifier(GraphBuilder& b, int64_t batch = 1, bool also_read_view = false) {
  TensorId x = b.input({batch, 64, 7, 7});
  TensorId r = b.op(OpKind::Relu, {x}, "relu");
  TensorId pooled = b.op(OpKind::GlobalAveragePool, {r}, "gap");
  TensorId flat = b.op(OpKind::Flatten, {pooled}, "flatten");
  TensorId fc = b.op(OpKind::Gemm, {flat, b.constant({10, 64}, 0.1f), b.constant({10}, 0.5f)}, "fc",
                     {{"transB", int64_t{1}}});
  b.output(b.op(OpKind::Relu, {fc}, "relu_out"));
  if (also_read_view) b.output(flat);
  Graph g = b.finish();
  make_views(g);
  return g;
}

} // namespace

// Row ops whose per-row values are the vector of a one-row Gemm stitch to it through a grid
// barrier: one Global group where greedy (a reduction never joins its consumers) needs the
// reduction's kernel and the cuBLASLt call.
TEST_CASE("planner legality: row ops stitch to the one-row matrix product they feed", "[planner]") {
  GraphBuilder b;
  Graph g = classifier(b);
  FusionContext ctx(g, DeviceParams{});
  CHECK(ctx.node_class[node_named(g, "flatten")] == NodeClass::View);
  CHECK(ctx.node_class[node_named(g, "fc")] == NodeClass::Gemm);
  GroupAnalysis a;
  FusionDecision d = decide(g, {"relu", "gap", "flatten", "fc", "relu_out"}, a);
  INFO(d.reason);
  REQUIRE(d.legal);
  CHECK(a.kind == GroupKind::Kernel);
  CHECK(a.scheme == StitchScheme::Global);
  CHECK(a.group.mapping == ThreadMapping::WarpPerRow);
  CHECK(a.rows == 64);
  CHECK(a.row_length == 49);
  CHECK(a.group.launch.cooperative);
  CHECK(a.group.launch.vector_width == 4); // B constant, K = 64
  CHECK(a.group.scratch_bytes == 64 * 4);  // the vector
  // Resident at the cooperative register budget, which the kernel's launch bounds promise.
  const DeviceParams device;
  CHECK(a.group.launch.min_blocks_per_sm * device.sm_count >= a.group.launch.grid[0]);
  CHECK(a.group.launch.min_blocks_per_sm * a.group.launch.block[0] * 64 <= device.registers_per_sm);
  REQUIRE(a.outputs.size() == 1);
  // Alone, the product stays a cuBLASLt call, and a view an alias.
  CHECK(single_node_group(g, node_named(g, "fc"), DeviceParams{}).kind == GroupKind::GemmLibrary);
  CHECK(single_node_group(g, node_named(g, "flatten"), DeviceParams{}).kind == GroupKind::Alias);
  PlannerOptions options;
  options.planner = "greedy";
  FusionPlan greedy = plan_fusion(g, options);
  CHECK(plan_totals(greedy).launches == 2); // {relu, gap}, {fc, relu_out} (the view is free)
  options.planner = "ilp";
  FusionPlan ilp = plan_fusion(g, options);
  REQUIRE(ilp.groups.size() == 1);
  CHECK(ilp.groups[0].scheme == StitchScheme::Global);
  CHECK(plan_totals(ilp).bytes < plan_totals(greedy).bytes);
}

// A squeeze-and-excitation block's first half as canonicalize leaves it: GlobalAveragePool ->
// Flatten -> Gemm (its 1 x 1 convolution, W [4, 16]) -> Reshape to the pixels [1, 4, 1, 1] ->
// SiLU (Sigmoid, and Mul reading the pixels twice), with `extra` multiplied in when given.
Graph squeeze_excite(GraphBuilder& b, std::optional<Shape> extra = std::nullopt) {
  TensorId x = b.input({1, 16, 5, 5});
  TensorId pooled = b.op(OpKind::GlobalAveragePool, {x}, "gap");
  TensorId flat = b.op(OpKind::Flatten, {pooled}, "flatten");
  TensorId fc = b.op(OpKind::Gemm, {flat, b.constant({4, 16}, 0.1f), b.constant({4}, 0.5f)}, "fc",
                     {{"transB", int64_t{1}}});
  TensorId pixels = b.op(OpKind::Reshape, {fc, b.constant_ints({1, 4, 1, 1})}, "pixels");
  TensorId s = b.op(OpKind::Sigmoid, {pixels}, "sigmoid");
  TensorId silu = b.op(OpKind::Mul, {pixels, s}, "silu");
  if (extra) silu = b.op(OpKind::Mul, {silu, b.constant(*extra, 2.0f)}, "scale");
  b.output(silu);
  Graph g = b.finish();
  make_views(g);
  return g;
}

// The consumers of the one-row product may read it through views of its result (the
// pixels of a 1 x 1 convolution made a Gemm): the pool, the product and the SiLU after it are
// one Global group, the consumers per output j; a consumer reading anything but those values
// and scalars there is refused.
TEST_CASE("planner legality: a matrix-vector product's consumers read it through views",
          "[planner]") {
  {
    GraphBuilder b;
    Graph g = squeeze_excite(b);
    GroupAnalysis a;
    FusionDecision d = decide(g, {"gap", "flatten", "fc", "pixels", "sigmoid", "silu"}, a);
    INFO(d.reason);
    REQUIRE(d.legal);
    CHECK(a.scheme == StitchScheme::Global);
    const auto& spec = std::get<RowGemvSpec>(a.group.spec);
    CHECK(spec.result_views == std::vector<int32_t>{node_named(g, "pixels")});
    CHECK(spec.consumers.size() == 2);
    PlannerOptions options;
    FusionPlan ilp = plan_fusion(g, options);
    REQUIRE(ilp.groups.size() == 1);
    CHECK(ilp.groups[0].scheme == StitchScheme::Global);
  }
  {
    // A scalar read there is one value for every output.
    GraphBuilder b;
    Graph g = squeeze_excite(b, Shape{1});
    GroupAnalysis a;
    FusionDecision d = decide(g, {"gap", "flatten", "fc", "pixels", "sigmoid", "silu", "scale"}, a);
    INFO(d.reason);
    CHECK(d.legal);
  }
  {
    // A tensor of the pixels' shape is not indexed by the product's outputs.
    GraphBuilder b;
    Graph g = squeeze_excite(b, Shape{1, 4, 1, 1});
    GroupAnalysis a;
    FusionDecision d = decide(g, {"gap", "flatten", "fc", "pixels", "sigmoid", "silu", "scale"}, a);
    CHECK_FALSE(d.legal);
    CHECK_THAT(d.reason, Catch::Contains("only scalars may be read there"));
  }
  {
    // The view read outside the group: the group would have to write it.
    GraphBuilder b;
    Graph g = squeeze_excite(b);
    GroupAnalysis a;
    FusionDecision d = decide(g, {"gap", "flatten", "fc", "pixels", "sigmoid"}, a);
    CHECK_FALSE(d.legal);
  }
}

TEST_CASE("planner legality: the matrix-vector stitch refuses what it cannot run", "[planner]") {
  SECTION("two rows are a matrix product, not a matrix-vector one") {
    GraphBuilder b;
    Graph g = classifier(b, 2);
    GroupAnalysis a;
    FusionDecision d = decide(g, {"relu", "gap", "flatten", "fc"}, a);
    CHECK_FALSE(d.legal);
    CHECK_THAT(d.reason, Catch::Contains("is not one row"));
  }
  SECTION("a single-value B is no matrix-vector product") {
    GraphBuilder b;
    TensorId x = b.input({1, 1, 4, 4});
    TensorId pooled = b.op(OpKind::GlobalAveragePool, {x}, "gap");
    TensorId flat = b.op(OpKind::Flatten, {pooled}, "flatten");
    b.output(b.op(OpKind::Gemm, {flat, b.constant({1, 1}, 2.0f)}, "fc"));
    Graph g = b.finish();
    make_views(g);
    GroupAnalysis a;
    FusionDecision d = decide(g, {"gap", "flatten", "fc"}, a);
    CHECK_FALSE(d.legal);
    CHECK_THAT(d.reason, Catch::Contains("single value"));
  }
  SECTION("a view read besides the product") {
    GraphBuilder b;
    Graph g = classifier(b, 1, true);
    GroupAnalysis a;
    FusionDecision d = decide(g, {"relu", "gap", "flatten", "fc"}, a);
    CHECK_FALSE(d.legal);
    CHECK_THAT(d.reason, Catch::Contains("is read besides the product"));
  }
  SECTION("a view without the product") {
    GraphBuilder b;
    Graph g = classifier(b);
    GroupAnalysis a;
    FusionDecision d = decide(g, {"gap", "flatten"}, a);
    CHECK_FALSE(d.legal);
    CHECK_THAT(d.reason, Catch::Contains("views fuse only between"));
  }
  SECTION("the product without the row ops, but with its epilogue, stays cuBLASLt's") {
    GraphBuilder b;
    Graph g = classifier(b);
    GroupAnalysis a;
    FusionDecision d = decide(g, {"fc", "relu_out"}, a);
    REQUIRE(d.legal);
    CHECK(a.kind == GroupKind::GemmLibrary);
  }
}

namespace {

// ResNet's basic block tail: Conv (with bias) -> Add(residual) -> Relu on [1,8,6,6].
Graph conv_block(GraphBuilder& b, bool bias = true, bool relu_first = false) {
  TensorId x = b.input({1, 8, 6, 6});
  TensorId skip = b.input({1, 8, 6, 6});
  std::vector<TensorId> inputs = {x, b.constant({8, 8, 3, 3}, 0.1f)};
  if (bias) inputs.push_back(b.constant({8}, 0.5f));
  TensorId c = b.op(OpKind::Conv, inputs, "conv", {{"pads", std::vector<int64_t>{1, 1, 1, 1}}});
  if (relu_first) {
    TensorId r = b.op(OpKind::Relu, {c}, "relu");
    b.output(b.op(OpKind::Add, {r, skip}, "add"));
  } else {
    TensorId s = b.op(OpKind::Add, {c, skip}, "add");
    b.output(b.op(OpKind::Relu, {s}, "relu"));
  }
  return b.finish();
}

} // namespace

// A biased Conv takes a residual add and then a Relu as its cuDNN epilogue, in every planner.
TEST_CASE("planner legality: a convolution takes a residual add and Relu as its epilogue",
          "[planner]") {
  GraphBuilder b;
  Graph g = conv_block(b);
  FusionContext ctx(g, DeviceParams{});
  CHECK(ctx.node_class[node_named(g, "conv")] == NodeClass::Conv);
  GroupAnalysis a;
  FusionDecision d = decide(g, {"conv", "add", "relu"}, a);
  INFO(d.reason);
  REQUIRE(d.legal);
  CHECK(a.kind == GroupKind::ConvLibrary);
  CHECK(a.epilogue_nodes == 2);
  REQUIRE(a.inputs.size() == 4); // x, W, bias, the residual
  REQUIRE(a.outputs.size() == 1);
  for (const char* planner : {"greedy", "ilp"}) {
    INFO(planner);
    PlannerOptions options;
    options.planner = planner;
    FusionPlan plan = plan_fusion(g, options);
    REQUIRE(plan.groups.size() == 1);
    CHECK(plan.groups[0].kind == GroupKind::ConvLibrary);
  }
}

TEST_CASE("planner legality: a convolution's epilogue is what cuDNN fuses", "[planner]") {
  SECTION("Relu before the residual add") {
    GraphBuilder b;
    Graph g = conv_block(b, true, true);
    GroupAnalysis a;
    CHECK(decide(g, {"conv", "relu"}, a).legal);
    FusionDecision d = decide(g, {"conv", "relu", "add"}, a);
    CHECK_FALSE(d.legal);
    CHECK_THAT(d.reason, Catch::Contains("follows the epilogue's Relu"));
  }
  SECTION("a Conv without a bias takes no epilogue") {
    GraphBuilder b;
    Graph g = conv_block(b, false);
    FusionContext ctx(g, DeviceParams{});
    CHECK(ctx.node_class[node_named(g, "conv")] == NodeClass::Conv);
    GroupAnalysis a;
    const FusionDecision d = decide(g, {"conv", "add"}, a);
    CHECK_FALSE(d.legal);
    CHECK_THAT(d.reason, Catch::Contains("cannot be an epilogue"));
  }
  SECTION("a broadcast addend is no residual") {
    GraphBuilder b;
    TensorId x = b.input({1, 4, 5, 5});
    TensorId c =
        b.op(OpKind::Conv, {x, b.constant({4, 4, 1, 1}, 0.1f), b.constant({4}, 0.5f)}, "conv");
    b.output(b.op(OpKind::Add, {c, b.input({1, 4, 1, 1})}, "add"));
    Graph g = b.finish();
    GroupAnalysis a;
    FusionDecision d = decide(g, {"conv", "add"}, a);
    CHECK_FALSE(d.legal);
    CHECK_THAT(d.reason, Catch::Contains("not a float32 residual"));
  }
}
