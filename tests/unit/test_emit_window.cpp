// Golden checks on the code generated for pooling kernels (kernel_window.cpp) and library
// calls (library_calls.cpp): each compiles a one-node model through the pipeline, the plan
// and the emitter, and looks for the lines that carry the op's semantics.
#include <catch2/catch.hpp>

#include <string>

#include "emitter/emit_model.h"
#include "frontend/onnx_loader.h"
#include "graph/error.h"
#include "graph/pipeline.h"
#include "model_builder.h"
#include "planner/memory_plan.h"
#include "planner/planner.h"

using namespace stitch;
using stitch::test::ModelBuilder;

namespace {

constexpr int kFloat = onnx::TensorProto::FLOAT;

// The generated source of the model's only group with work.
std::string group_source(const ModelBuilder& m) {
  Graph g = load_onnx(m.write());
  run_pipeline(g, {});
  PlannerOptions options; // the per-op plan, after check_code_generation
  options.planner = "none";
  FusionPlan plan = plan_fusion(g, options);
  MemoryPlan memory = plan_memory(g, plan);
  GeneratedModel model = emit_model(g, plan, memory, "host");
  REQUIRE(model.groups.size() == 1);
  return model.groups[0].text;
}

bool has(const std::string& text, const std::string& line) {
  return text.find(line) != std::string::npos;
}

} // namespace

// ---- Pooling ----

TEST_CASE("MaxPool clamps its taps to the input and keeps the first maximum", "[emitter]") {
  // Proves: window starts include the begin pad, tap loops use first_tap/end_tap with the
  // dilation and input size, a later equal value does not replace the maximum, and Indices
  // count the whole flattened input.
  ModelBuilder m(12);
  m.input("x", kFloat, {1, 2, 5, 6}).output("y").output("i");
  auto& n = m.node("MaxPool", {"x"}, {"y", "i"});
  test::set_attr_ints(n, "kernel_shape", {3, 2});
  test::set_attr_ints(n, "strides", {2, 1});
  test::set_attr_ints(n, "pads", {1, 0, 1, 0});
  test::set_attr_ints(n, "dilations", {1, 2});
  std::string src = group_source(m);
  CHECK(has(src, "const int64_t start0 = o0 * 2 - 1;"));
  CHECK(has(src, "const int64_t start1 = o1;"));
  CHECK(has(src, "const int64_t k1_end = stitch::window::end_tap(start1, 2, 2, 6);"));
  CHECK(has(src, "const int64_t x1 = start1 + k1 * 2;"));
  CHECK(has(src, "const float v = xp[x0 * 6 + x1];"));
  CHECK(has(src, "if (best_at < 0 || v > best)"));
  CHECK(has(src, "indices[i] = best_at < 0 ? -1 : plane * 30 + best_at;"));
}

TEST_CASE("MaxPool with storage_order=1 gives column-major indices", "[emitter]") {
  ModelBuilder m(12);
  m.input("x", kFloat, {1, 1, 4, 5}).output("y").output("i");
  auto& n = m.node("MaxPool", {"x"}, {"y", "i"});
  test::set_attr_ints(n, "kernel_shape", {2, 2});
  test::set_attr_int(n, "storage_order", 1);
  std::string src = group_source(m);
  CHECK(has(src, "best_at = x0 + x1 * 4; // column-major (storage_order=1)"));
}

TEST_CASE("MaxPool without a read Indices output writes none", "[emitter]") {
  ModelBuilder m(12);
  m.input("x", kFloat, {1, 1, 4, 4}).output("y");
  test::set_attr_ints(m.node("MaxPool", {"x"}, {"y"}), "kernel_shape", {2, 2});
  std::string src = group_source(m);
  CHECK_FALSE(has(src, "indices"));
}

TEST_CASE("AveragePool divides by the taps inside the input or the padded input", "[emitter]") {
  // Proves: count_include_pad=0 counts taps inside [0, size); count_include_pad=1 counts those
  // inside [-pad begin, size + pad end), so a ceil_mode window past the end pad is not counted.
  for (int include : {0, 1}) {
    ModelBuilder m(19);
    m.input("x", kFloat, {1, 1, 5, 5}).output("y");
    auto& n = m.node("AveragePool", {"x"}, {"y"});
    test::set_attr_ints(n, "kernel_shape", {3, 3});
    test::set_attr_ints(n, "strides", {2, 2});
    test::set_attr_ints(n, "pads", {1, 1, 1, 1});
    test::set_attr_int(n, "ceil_mode", 1);
    test::set_attr_int(n, "count_include_pad", include);
    std::string src = group_source(m);
    if (include)
      CHECK(has(src, "stitch::window::taps_inside(start0 + 1, 1, 3, 7) * "
                     "stitch::window::taps_inside(start1 + 1, 1, 3, 7);"));
    else
      CHECK(has(src, "stitch::window::taps_inside(start0, 1, 3, 5) * "
                     "stitch::window::taps_inside(start1, 1, 3, 5);"));
    CHECK(has(src, "sum += xp[x0 * 5 + x1];"));
    CHECK(has(src, "y[i] = sum / static_cast<float>(count);"));
  }
}

TEST_CASE("AveragePool with SAME_LOWER puts the odd pad at the begin", "[emitter]") {
  ModelBuilder m(12);
  m.input("x", kFloat, {1, 1, 4, 4}).output("y");
  auto& n = m.node("AveragePool", {"x"}, {"y"});
  test::set_attr_ints(n, "kernel_shape", {2, 2});
  test::set_attr_string(n, "auto_pad", "SAME_LOWER");
  std::string src = group_source(m);
  CHECK(has(src, "const int64_t start0 = o0 - 1;"));
}

// ---- MatMul ----

TEST_CASE("MatMul with B shared by every batch is one taller GEMM", "[emitter]") {
  ModelBuilder m(13);
  m.input("a", kFloat, {2, 3, 4, 5}).input("b", kFloat, {5, 6}).output("y");
  m.node("MatMul", {"a", "b"}, {"y"});
  std::string src = group_source(m);
  CHECK(has(src, "#include \"library/stitch_library.h\""));
  CHECK(has(src, "stitch_gemm_desc desc = stitch_gemm_desc_packed(24, 6, 5); // m, n, k"));
  CHECK(has(src, "return stitch_library_gemm(b, &desc, lhs, rhs, nullptr, nullptr, result, error, "
                 "error_size);"));
}

TEST_CASE("MatMul with A broadcast over the batch uses stride 0", "[emitter]") {
  ModelBuilder m(13);
  m.input("a", kFloat, {4, 5}).input("b", kFloat, {3, 5, 6}).output("y");
  m.node("MatMul", {"a", "b"}, {"y"});
  std::string src = group_source(m);
  CHECK(has(src, "desc.batch_count = 3;"));
  CHECK(has(src, "desc.stride_a = 0; // A broadcast"));
  CHECK(has(src, "desc.stride_b = 30;"));
}

TEST_CASE("MatMul batch broadcasting that strides cannot express loops over the outer axis",
          "[emitter]") {
  // [2,1,4,5] x [1,3,5,6]: the inner batch axis (3) steps B only, the outer one (2) A only.
  ModelBuilder m(13);
  m.input("a", kFloat, {2, 1, 4, 5}).input("b", kFloat, {1, 3, 5, 6}).output("y");
  m.node("MatMul", {"a", "b"}, {"y"});
  std::string src = group_source(m);
  CHECK(has(src, "desc.batch_count = 3;"));
  CHECK(has(src, "desc.stride_a = 0; // A broadcast"));
  CHECK(has(src, "for (int64_t outer = 0; outer < 2; ++outer)"));
  CHECK(
      has(src,
          "stitch_library_gemm(b, &desc, lhs + c0 * 20, rhs, nullptr, nullptr, result + c0 * 72,"));
  CHECK(has(src, "if (status != 0) return status;"));
}

TEST_CASE("MatMul of two vectors is a 1x1 GEMM", "[emitter]") {
  ModelBuilder m(13);
  m.input("a", kFloat, {7}).input("b", kFloat, {7}).output("y");
  m.node("MatMul", {"a", "b"}, {"y"});
  CHECK(has(group_source(m), "stitch_gemm_desc_packed(1, 1, 7); // m, n, k"));
}

// ---- Gemm ----

TEST_CASE("Gemm with a broadcast C fills beta * C first and accumulates onto it", "[emitter]") {
  ModelBuilder m(13);
  m.input("a", kFloat, {5, 3}).input("b", kFloat, {4, 5}).input("c", kFloat, {3, 1}).output("y");
  auto& n = m.node("Gemm", {"a", "b", "c"}, {"y"});
  test::set_attr_int(n, "transA", 1);
  test::set_attr_int(n, "transB", 1);
  test::set_attr_float(n, "alpha", 0.25f);
  test::set_attr_float(n, "beta", 0.5f);
  std::string src = group_source(m);
  CHECK(has(src, "y[i] = 0.5f * c[i / 4];"));
  CHECK(has(src, "const int32_t status = stitch_launch_result(launched, \"stitch_g0_gemm_fill_c\", "
                 "0, error, error_size);"));
  CHECK(has(src, "desc.trans_a = 1; // A is stored [5, 3]"));
  CHECK(has(src, "desc.trans_b = 1; // B is stored [4, 5]"));
  CHECK(has(src, "desc.alpha = 0.25f;"));
  CHECK(has(src, "desc.beta = 1.0f;"));
  CHECK(has(
      src, "stitch_library_gemm(b, &desc, lhs, rhs, result, nullptr, result, error, error_size);"));
}

TEST_CASE("Gemm with a row-vector C and beta 1 uses the bias epilogue", "[emitter]") {
  ModelBuilder m(13);
  m.input("a", kFloat, {3, 5}).input("b", kFloat, {5, 4}).input("c", kFloat, {4}).output("y");
  m.node("Gemm", {"a", "b", "c"}, {"y"});
  std::string src = group_source(m);
  CHECK_FALSE(has(src, "__global__"));
  CHECK(
      has(src, "stitch_library_gemm(b, &desc, lhs, rhs, nullptr, c, result, error, error_size);"));
}

TEST_CASE("Gemm with a full C passes it as the GEMM's C with beta", "[emitter]") {
  ModelBuilder m(13);
  m.input("a", kFloat, {3, 5}).input("b", kFloat, {5, 4}).input("c", kFloat, {3, 4}).output("y");
  test::set_attr_float(m.node("Gemm", {"a", "b", "c"}, {"y"}), "beta", 2.0f);
  std::string src = group_source(m);
  CHECK(has(src, "desc.beta = 2.0f;"));
  CHECK(
      has(src, "stitch_library_gemm(b, &desc, lhs, rhs, c, nullptr, result, error, error_size);"));
}

// ---- Conv and ConvTranspose ----

TEST_CASE("Conv fills the descriptor from the node's shapes and attributes", "[emitter]") {
  ModelBuilder m(13);
  m.input("x", kFloat, {2, 4, 7, 5})
      .input("w", kFloat, {6, 2, 3, 3})
      .input("bias", kFloat, {6})
      .output("y");
  auto& n = m.node("Conv", {"x", "w", "bias"}, {"y"});
  test::set_attr_int(n, "group", 2);
  test::set_attr_ints(n, "strides", {2, 1});
  test::set_attr_ints(n, "pads", {1, 0, 1, 0});
  std::string src = group_source(m);
  CHECK(has(src, "desc.groups = 2;"));
  CHECK(has(src, "desc.in_spatial[0] = 7; desc.in_spatial[1] = 5;"));
  CHECK(has(src, "desc.out_spatial[0] = 4; desc.out_spatial[1] = 3;"));
  CHECK(has(src, "desc.pads_begin[0] = 1; desc.pads_begin[1] = 0;"));
  CHECK(has(src, "return stitch_library_conv(b, &desc, x, w, bias, y, error, error_size);"));
}

TEST_CASE("Conv with asymmetric pads that change the window count copies X padded", "[emitter]") {
  // pads 0 at the begin and 1 at the end: the symmetric begin pad gives 4 windows, ONNX 5. The
  // library pads symmetrically, so a kernel first copies X with its pads into the group's
  // scratch (6 floats) and the call convolves that unpadded.
  ModelBuilder m(13);
  m.input("x", kFloat, {1, 1, 5}).input("w", kFloat, {1, 1, 2}).output("y");
  test::set_attr_ints(m.node("Conv", {"x", "w"}, {"y"}), "pads", {0, 1});
  std::string src = group_source(m);
  CHECK(has(src, "const int64_t source0 = 5, target0 = 6, from0 = 0;"));
  CHECK(has(src, "if (s0 >= source0) { padded[i] = 0.0f; continue; } // a pad"));
  CHECK(has(src, "padded[i] = x[(image * 1 + c) * source0 + s0];"));
  CHECK(has(src, "desc.in_spatial[0] = 6;"));
  CHECK(has(src, "desc.out_spatial[0] = 5;"));
  CHECK(has(src, "desc.pads_begin[0] = 0;"));
  CHECK(has(src, "return stitch_library_conv(b, &desc, padded, w, nullptr, y, error, "
                 "error_size);"));
}

TEST_CASE("Conv with asymmetric pads giving the same windows uses the begin pad", "[emitter]") {
  // 6 + 1 + 0 - 3 = 4 over stride 2 gives 3 windows, as 6 + 1 + 1 - 3 = 5 does.
  ModelBuilder m(13);
  m.input("x", kFloat, {1, 1, 6}).input("w", kFloat, {1, 1, 3}).output("y");
  auto& n = m.node("Conv", {"x", "w"}, {"y"});
  test::set_attr_ints(n, "pads", {1, 0});
  test::set_attr_ints(n, "strides", {2});
  std::string src = group_source(m);
  CHECK(has(src, "desc.pads_begin[0] = 1;"));
  CHECK(has(src, "desc.pads_end[0] = 1;"));
}

TEST_CASE("ConvTranspose the library's pads cannot give is computed whole and cropped",
          "[emitter]") {
  // SAME_UPPER at stride 2 over 3: 6 outputs of the whole 7, the library's symmetric begin pad
  // 0 giving 7 (an output padding of -1). The call writes the 7 x 7 into the group's scratch
  // (bias included), and a kernel copies the 6 x 6 from [0, 0] into Y.
  ModelBuilder m(13);
  m.input("x", kFloat, {1, 1, 3, 3})
      .input("w", kFloat, {1, 2, 3, 3})
      .input("bias", kFloat, {2})
      .output("y");
  auto& n = m.node("ConvTranspose", {"x", "w", "bias"}, {"y"});
  test::set_attr_ints(n, "strides", {2, 2});
  test::set_attr_string(n, "auto_pad", "SAME_UPPER");
  std::string src = group_source(m);
  CHECK(has(src, "const int64_t source0 = 7, target0 = 6, from0 = 0;"));
  CHECK(has(src, "const int64_t s0 = rest % target0 + from0; rest /= target0;"));
  CHECK(has(src, "if (s0 >= source0 || s1 >= source1) { y[i] = bias[c]; continue; } // "
                 "reached by no input"));
  CHECK(has(src, "y[i] = full[((image * 2 + c) * source0 + s0) * source1 + s1];"));
  CHECK(has(src, "desc.out_spatial[0] = 7;"));
  CHECK(has(src, "desc.pads_begin[0] = 0; desc.pads_begin[1] = 0;"));
  CHECK(has(src, "stitch_library_conv_transpose(b, &desc, x, w, bias, full, error, "
                 "error_size);"));
}

TEST_CASE("ConvTranspose with output_shape pads at the end through the output padding",
          "[emitter]") {
  ModelBuilder m(13);
  m.input("x", kFloat, {1, 1, 3, 3}).input("w", kFloat, {1, 2, 3, 3}).output("y");
  auto& n = m.node("ConvTranspose", {"x", "w"}, {"y"});
  test::set_attr_ints(n, "strides", {3, 2});
  test::set_attr_ints(n, "output_shape", {10, 8});
  std::string src = group_source(m);
  CHECK(has(src, "desc.out_channels = 2;"));
  CHECK(has(src, "desc.out_spatial[0] = 10; desc.out_spatial[1] = 8;"));
  CHECK(has(src, "desc.pads_begin[0] = 0; desc.pads_begin[1] = 0;"));
  CHECK(has(
      src, "return stitch_library_conv_transpose(b, &desc, x, w, nullptr, y, error, error_size);"));
}
