// test_gemm_half_host.cpp: the host target's stitch_library_gemm on float16 and bfloat16
// operands against a double triple loop over the same stored inputs (half_reference.h for the
// tolerance: one ulp of the output type plus fp32 accumulation error): every transpose, padded
// leading dimensions, batches with a broadcast operand, alpha, C with beta (C apart and C in
// place of D), the bias, the Relu and tanh-GELU epilogues, K = 1, M = 1, N = 1, and a column
// count past one panel. Sizes are multiples of nothing; inputs are random and never zero.
#include "half_reference.h"

#include <catch2/catch.hpp>

#include <limits>

using namespace stitch::library::testing;

namespace {

constexpr int32_t kHalfTypes[] = {STITCH_LIBRARY_FLOAT16, STITCH_LIBRARY_BFLOAT16};

std::size_t span(int64_t rows, int64_t cols, int64_t ld, int64_t batch, int64_t stride) {
  return static_cast<std::size_t>((batch - 1) * stride + (rows - 1) * ld + cols);
}

struct HalfGemm {
  TypedTensor a, b, c, bias, d;
};

// Random A, B, C and bias of the descriptor's dtype; D (NaN) as C when `c_is_d`.
HalfGemm make_operands(const stitch_gemm_desc& g, uint32_t seed, bool c_is_d = false) {
  HalfGemm operands;
  operands.a = random_tensor(
      g.dtype, span(g.trans_a ? g.k : g.m, g.trans_a ? g.m : g.k, g.lda, g.batch_count, g.stride_a),
      seed);
  operands.b = random_tensor(
      g.dtype, span(g.trans_b ? g.n : g.k, g.trans_b ? g.k : g.n, g.ldb, g.batch_count, g.stride_b),
      seed + 1);
  operands.c = random_tensor(g.dtype, span(g.m, g.n, g.ldc, g.batch_count, g.stride_c), seed + 2);
  operands.bias = random_tensor(g.dtype, static_cast<std::size_t>(g.n), seed + 3);
  operands.d = c_is_d ? operands.c
                      : filled_tensor(g.dtype, span(g.m, g.n, g.ldd, g.batch_count, g.stride_d),
                                      std::numeric_limits<float>::quiet_NaN());
  return operands;
}

// Runs the GEMM as generated code does and checks D against the double reference.
void check_half_gemm(const stitch_gemm_desc& desc, uint32_t seed, bool with_bias,
                     bool c_is_d = false) {
  INFO(dtype_label(desc.dtype) << " m=" << desc.m << " n=" << desc.n << " k=" << desc.k << " trans "
                               << desc.trans_a << desc.trans_b << " batch " << desc.batch_count
                               << " epilogue " << desc.epilogue << " bias " << with_bias << " beta "
                               << desc.beta);
  HalfGemm operands = make_operands(desc, seed, c_is_d);
  const Expected expected = reference_gemm(
      desc, operands.a.values.data(), operands.b.values.data(), operands.c.values.data(),
      with_bias ? operands.bias.values.data() : nullptr, operands.d.size());
  stitch_abi_buffers buffers = {};
  char error[512] = {};
  const void* c = c_is_d ? operands.d.data() : operands.c.data();
  const int32_t status = stitch_library_gemm(&buffers, &desc, operands.a.data(), operands.b.data(),
                                             c, with_bias ? operands.bias.data() : nullptr,
                                             operands.d.data(), error, sizeof(error));
  INFO(error);
  REQUIRE(status == 0);
  const Comparison comparison = compare_typed(operands.d, expected, desc.k);
  CHECK(comparison.mismatch == "");
  // One rounding of an fp32 result: nearly every element is the exact value correctly rounded
  // (the rest sit within fp32 accumulation error of a rounding tie).
  CHECK(comparison.correctly_rounded >= comparison.compared * 95 / 100);
}

stitch_gemm_desc half_desc(int32_t dtype, int64_t m, int64_t n, int64_t k) {
  stitch_gemm_desc desc = stitch_gemm_desc_packed(m, n, k);
  desc.dtype = dtype;
  return desc;
}

} // namespace

TEST_CASE("float16 and bfloat16 GEMM: every transpose, padded leading dims, alpha",
          "[library][half]") {
  for (int32_t dtype : kHalfTypes) {
    for (int32_t trans_a : {0, 1}) {
      for (int32_t trans_b : {0, 1}) {
        stitch_gemm_desc desc = half_desc(dtype, 7, 13, 19);
        desc.trans_a = trans_a;
        desc.trans_b = trans_b;
        desc.lda = (trans_a ? desc.m : desc.k) + 3;
        desc.ldb = (trans_b ? desc.k : desc.n) + 2;
        desc.ldd = desc.n + 5;
        desc.alpha = 0.75f;
        check_half_gemm(desc, 100 + 2 * trans_a + trans_b, false);
      }
    }
  }
}

TEST_CASE("float16 and bfloat16 GEMM: batches, with A or B broadcast", "[library][half]") {
  for (int32_t dtype : kHalfTypes) {
    stitch_gemm_desc desc = half_desc(dtype, 5, 11, 9);
    desc.batch_count = 3;
    desc.stride_a = desc.m * desc.k + 4;
    desc.stride_b = 0; // one B for every batch
    desc.stride_d = desc.m * desc.n + 7;
    check_half_gemm(desc, 200, true);
    desc.stride_a = 0; // one A for every batch
    desc.stride_b = desc.k * desc.n;
    desc.trans_b = 1;
    desc.ldb = desc.k;
    check_half_gemm(desc, 201, false);
  }
}

TEST_CASE("float16 and bfloat16 GEMM: C with beta, bias, Relu and tanh GELU", "[library][half]") {
  for (int32_t dtype : kHalfTypes) {
    for (int32_t epilogue :
         {STITCH_GEMM_EPILOGUE_NONE, STITCH_GEMM_EPILOGUE_RELU, STITCH_GEMM_EPILOGUE_GELU_TANH}) {
      stitch_gemm_desc desc = half_desc(dtype, 6, 17, 23);
      desc.epilogue = epilogue;
      desc.alpha = 1.25f;
      desc.beta = -0.5f;
      desc.ldc = desc.n + 1;
      desc.batch_count = 2;
      desc.stride_a = desc.m * desc.k;
      desc.stride_b = desc.k * desc.n;
      desc.stride_c = desc.m * desc.ldc;
      desc.stride_d = desc.m * desc.n;
      check_half_gemm(desc, 300 + epilogue, true);
      check_half_gemm(desc, 310 + epilogue, false);
    }
  }
}

TEST_CASE("float16 and bfloat16 GEMM: C in place of D accumulates onto it", "[library][half]") {
  for (int32_t dtype : kHalfTypes) {
    stitch_gemm_desc desc = half_desc(dtype, 9, 10, 14);
    desc.beta = 1.0f;
    desc.epilogue = STITCH_GEMM_EPILOGUE_RELU;
    check_half_gemm(desc, 400, true, /*c_is_d=*/true);
  }
}

TEST_CASE("float16 and bfloat16 GEMM: K = 1, M = 1, N = 1", "[library][half]") {
  for (int32_t dtype : kHalfTypes) {
    check_half_gemm(half_desc(dtype, 6, 5, 1), 500, true);    // K = 1: one product, one rounding
    check_half_gemm(half_desc(dtype, 1, 21, 13), 501, true);  // M = 1: a row
    check_half_gemm(half_desc(dtype, 15, 1, 12), 502, false); // N = 1: a column
    check_half_gemm(half_desc(dtype, 1, 1, 1), 503, true);
  }
}

TEST_CASE("float16 and bfloat16 GEMM: more columns than one panel, a long K", "[library][half]") {
  for (int32_t dtype : kHalfTypes) {
    stitch_gemm_desc desc = half_desc(dtype, 6, 131, 301);
    desc.trans_b = 1;
    desc.ldb = desc.k;
    check_half_gemm(desc, 600, true);
  }
}

TEST_CASE("float16 and bfloat16 GEMM give bitwise the same D twice", "[library][half]") {
  for (int32_t dtype : kHalfTypes) {
    stitch_gemm_desc desc = half_desc(dtype, 11, 19, 37);
    desc.epilogue = STITCH_GEMM_EPILOGUE_GELU_TANH;
    HalfGemm first = make_operands(desc, 700), second = make_operands(desc, 700);
    stitch_abi_buffers buffers = {};
    for (HalfGemm* run : {&first, &second})
      REQUIRE(stitch_library_gemm(&buffers, &desc, run->a.data(), run->b.data(), nullptr,
                                  run->bias.data(), run->d.data(), nullptr, 0) == 0);
    CHECK(first.d.bytes == second.d.bytes);
  }
}

TEST_CASE("a half GEMM with allow_tf32 or an unknown dtype is refused", "[library][half]") {
  stitch_gemm_desc desc = half_desc(STITCH_LIBRARY_FLOAT16, 2, 2, 2);
  desc.allow_tf32 = 1;
  TypedTensor a = random_tensor(desc.dtype, 4, 1), d = filled_tensor(desc.dtype, 4, 0.0f);
  stitch_abi_buffers buffers = {};
  char error[256] = {};
  CHECK(stitch_library_gemm(&buffers, &desc, a.data(), a.data(), nullptr, nullptr, d.data(), error,
                            sizeof(error)) == STITCH_ERROR_INTERNAL);
  CHECK(std::string(error) ==
        "stitch_library_gemm: allow_tf32 is for float32 operands, not float16");
  desc.allow_tf32 = 0;
  desc.dtype = 7;
  CHECK(stitch_library_gemm(&buffers, &desc, a.data(), a.data(), nullptr, nullptr, d.data(), error,
                            sizeof(error)) == STITCH_ERROR_INTERNAL);
  CHECK(std::string(error) == "stitch_library_gemm: unknown dtype 7 (STITCH_LIBRARY_FLOAT32, "
                              "_FLOAT16 or _BFLOAT16)");
}
