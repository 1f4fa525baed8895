// test_gemm_host.cpp: the host target's stitch_library_gemm against a double-precision triple
// loop (library_reference.h) on random nonzero data, called the way generated code calls it
// (through a stitch_abi_buffers), plus its determinism and speed.
#include "library_reference.h"

#include <catch2/catch.hpp>

#include <chrono>
#include <limits>

using namespace stitch::library::testing;

namespace {

constexpr float kUnwritten = std::numeric_limits<float>::quiet_NaN();

// Elements a strided batch of row-major matrices spans.
std::size_t span(int64_t rows, int64_t cols, int64_t ld, int64_t batch, int64_t stride) {
  return static_cast<std::size_t>((batch - 1) * stride + (rows - 1) * ld + cols);
}

// Random operands laid out as `desc` says, and D filled with NaN so an unwritten element shows.
struct GemmOperands {
  std::vector<float> a, b, c, bias, d;

  GemmOperands(const stitch_gemm_desc& g, uint32_t seed) {
    a = random_values(
        span(g.trans_a ? g.k : g.m, g.trans_a ? g.m : g.k, g.lda, g.batch_count, g.stride_a), seed);
    b = random_values(
        span(g.trans_b ? g.n : g.k, g.trans_b ? g.k : g.n, g.ldb, g.batch_count, g.stride_b),
        seed + 1);
    c = random_values(span(g.m, g.n, g.ldc, g.batch_count, g.stride_c), seed + 2);
    bias = random_values(static_cast<std::size_t>(g.n), seed + 3);
    d.assign(span(g.m, g.n, g.ldd, g.batch_count, g.stride_d), kUnwritten);
  }
};

// Runs the GEMM as generated code does; D is `d` (or C, when the test makes C alias D).
int32_t call_gemm(const stitch_gemm_desc& desc, const float* a, const float* b, const float* c,
                  const float* bias, float* d, std::string* message = nullptr) {
  stitch_abi_buffers buffers = {};
  char error[512] = {};
  const int32_t status =
      stitch_library_gemm(&buffers, &desc, a, b, c, bias, d, error, sizeof(error));
  if (message != nullptr) *message = error;
  return status;
}

void check_gemm(const stitch_gemm_desc& desc, uint32_t seed, bool with_bias = false) {
  GemmOperands operands(desc, seed);
  const float* bias = with_bias ? operands.bias.data() : nullptr;
  std::string message;
  REQUIRE(call_gemm(desc, operands.a.data(), operands.b.data(), operands.c.data(), bias,
                    operands.d.data(), &message) == 0);
  INFO(message);
  const Expected expected = reference_gemm(desc, operands.a.data(), operands.b.data(),
                                           operands.c.data(), bias, operands.d.size());
  CHECK(first_mismatch(operands.d, expected) == "");
}

} // namespace

TEST_CASE("GEMM of odd sizes, each transpose combination, matches the triple loop", "[library]") {
  const int64_t sizes[] = {1, 3, 17, 65};
  uint32_t seed = 1;
  for (int64_t m : sizes)
    for (int64_t n : sizes)
      for (int64_t k : sizes)
        for (int trans = 0; trans < 4; ++trans) {
          stitch_gemm_desc desc = stitch_gemm_desc_packed(m, n, k);
          desc.trans_a = trans & 1;
          desc.trans_b = trans >> 1;
          desc.lda = desc.trans_a ? m : k;
          desc.ldb = desc.trans_b ? k : n;
          INFO("m=" << m << " n=" << n << " k=" << k << " trans_a=" << desc.trans_a
                    << " trans_b=" << desc.trans_b);
          check_gemm(desc, seed++);
        }
}

TEST_CASE("GEMM reads padded leading dimensions and writes only D's rows", "[library]") {
  stitch_gemm_desc desc = stitch_gemm_desc_packed(9, 133, 70); // 133 > one column panel
  desc.trans_a = 1;
  desc.lda = 9 + 5;
  desc.ldb = 133 + 3;
  desc.ldd = 133 + 7;
  GemmOperands operands(desc, 11);
  REQUIRE(call_gemm(desc, operands.a.data(), operands.b.data(), nullptr, nullptr,
                    operands.d.data()) == 0);
  const Expected expected = reference_gemm(desc, operands.a.data(), operands.b.data(), nullptr,
                                           nullptr, operands.d.size());
  CHECK(first_mismatch(operands.d, expected) == "");
  // The padding of each row of D is not D's: it keeps its NaN.
  for (int64_t i = 0; i + 1 < desc.m; ++i)
    for (int64_t j = desc.n; j < desc.ldd; ++j)
      CHECK(std::isnan(operands.d[i * desc.ldd + j]));
}

TEST_CASE("batched GEMM follows each operand's batch stride", "[library]") {
  stitch_gemm_desc desc = stitch_gemm_desc_packed(5, 7, 6);
  desc.batch_count = 3;
  desc.trans_b = 1;
  desc.ldb = 6;
  desc.stride_a = 5 * 6 + 4; // gaps between the batches' matrices
  desc.stride_b = 7 * 6 + 1;
  desc.stride_d = 5 * 7 + 9;
  GemmOperands operands(desc, 21);
  REQUIRE(call_gemm(desc, operands.a.data(), operands.b.data(), nullptr, nullptr,
                    operands.d.data()) == 0);
  const Expected expected = reference_gemm(desc, operands.a.data(), operands.b.data(), nullptr,
                                           nullptr, operands.d.size());
  CHECK(first_mismatch(operands.d, expected) == "");
  // The gaps between D's batches are untouched.
  for (int64_t batch = 0; batch + 1 < desc.batch_count; ++batch)
    for (int64_t at = 5 * 7; at < desc.stride_d; ++at)
      CHECK(std::isnan(operands.d[batch * desc.stride_d + at]));
}

TEST_CASE("a batch stride of 0 broadcasts A or B to every batch", "[library]") {
  for (int broadcast_a = 0; broadcast_a < 2; ++broadcast_a) {
    stitch_gemm_desc desc = stitch_gemm_desc_packed(4, 17, 3);
    desc.batch_count = 4;
    (broadcast_a ? desc.stride_a : desc.stride_b) = 0;
    INFO("broadcast " << (broadcast_a ? "A" : "B"));
    check_gemm(desc, 31 + broadcast_a);
  }
}

TEST_CASE("alpha and beta scale the product and C, with C aliasing D", "[library]") {
  stitch_gemm_desc desc = stitch_gemm_desc_packed(6, 5, 9);
  desc.batch_count = 2;
  desc.alpha = -0.75f;
  desc.beta = 1.5f;
  GemmOperands operands(desc, 41);
  std::vector<float> d = operands.c; // D starts as C and is overwritten in place
  REQUIRE(call_gemm(desc, operands.a.data(), operands.b.data(), d.data(), nullptr, d.data()) == 0);
  const Expected expected = reference_gemm(desc, operands.a.data(), operands.b.data(),
                                           operands.c.data(), nullptr, d.size());
  CHECK(first_mismatch(d, expected) == "");
}

TEST_CASE("a separate C is read only when beta is nonzero", "[library]") {
  stitch_gemm_desc desc = stitch_gemm_desc_packed(3, 17, 5);
  desc.ldc = 20;
  desc.beta = 0.5f;
  check_gemm(desc, 51);

  // beta == 0: C is not read at all, so NaN in it changes nothing (and it may be null).
  desc.beta = 0.0f;
  GemmOperands operands(desc, 52);
  std::vector<float> nan_c(operands.c.size(), kUnwritten);
  REQUIRE(call_gemm(desc, operands.a.data(), operands.b.data(), nan_c.data(), nullptr,
                    operands.d.data()) == 0);
  const Expected expected = reference_gemm(desc, operands.a.data(), operands.b.data(), nullptr,
                                           nullptr, operands.d.size());
  CHECK(first_mismatch(operands.d, expected) == "");
}

TEST_CASE("bias is added along N, to every row and batch", "[library]") {
  stitch_gemm_desc desc = stitch_gemm_desc_packed(7, 65, 17);
  desc.batch_count = 2;
  desc.beta = 1.0f;
  check_gemm(desc, 61, /*with_bias=*/true);
}

TEST_CASE("ReLU and tanh-GELU epilogues apply after bias", "[library]") {
  for (int32_t epilogue : {STITCH_GEMM_EPILOGUE_RELU, STITCH_GEMM_EPILOGUE_GELU_TANH}) {
    for (int with_bias = 0; with_bias < 2; ++with_bias) {
      stitch_gemm_desc desc = stitch_gemm_desc_packed(17, 33, 65);
      desc.epilogue = epilogue;
      desc.alpha = 0.5f;
      INFO("epilogue " << epilogue << (with_bias ? " with bias" : ""));
      check_gemm(desc, 71 + epilogue * 2 + with_bias, with_bias != 0);
    }
  }
}

// Proves: K = 0 (a product over a symbolic K at a size where it is 0) is an empty sum: D is
// act(beta * C + bias), every batch, with or without C, bias and transposes, A and B unread
// (null here), each element written (D starts as NaN).
TEST_CASE("a GEMM of K = 0 writes the epilogue of an empty sum", "[library]") {
  for (int variant = 0; variant < 4; ++variant) {
    stitch_gemm_desc desc = stitch_gemm_desc_packed(5, 19, 0);
    desc.batch_count = 3;
    desc.trans_a = variant & 1;
    desc.trans_b = (variant >> 1) & 1;
    desc.lda = desc.trans_a ? desc.m : 0;
    desc.ldb = desc.trans_b ? 0 : desc.n;
    desc.beta = variant == 0 ? 0.0f : 0.5f * static_cast<float>(variant);
    desc.epilogue = variant == 3 ? STITCH_GEMM_EPILOGUE_RELU : STITCH_GEMM_EPILOGUE_NONE;
    const bool with_bias = variant >= 2;
    INFO("variant " << variant);
    GemmOperands operands(desc, 81 + variant);
    const float* bias = with_bias ? operands.bias.data() : nullptr;
    std::string message;
    REQUIRE(call_gemm(desc, nullptr, nullptr, operands.c.data(), bias, operands.d.data(),
                      &message) == 0);
    INFO(message);
    const Expected expected =
        reference_gemm(desc, nullptr, nullptr, operands.c.data(), bias, operands.d.size());
    CHECK(first_mismatch(operands.d, expected) == "");
  }
}

TEST_CASE("the same GEMM twice gives bitwise the same D", "[library]") {
  stitch_gemm_desc desc = stitch_gemm_desc_packed(37, 301, 129);
  desc.trans_b = 1;
  desc.ldb = 129;
  desc.epilogue = STITCH_GEMM_EPILOGUE_GELU_TANH;
  GemmOperands operands(desc, 81);
  std::vector<float> first = operands.d, second = operands.d;
  REQUIRE(call_gemm(desc, operands.a.data(), operands.b.data(), nullptr, operands.bias.data(),
                    first.data()) == 0);
  REQUIRE(call_gemm(desc, operands.a.data(), operands.b.data(), nullptr, operands.bias.data(),
                    second.data()) == 0);
  CHECK(bitwise_equal(first, second));
}

TEST_CASE("a row's result does not depend on the rows computed with it", "[library]") {
  // The fixed summation order: row i of a 9-row GEMM equals, bit for bit, the 1-row GEMM of
  // row i alone (which sits at a different place in the kernel's row blocks).
  stitch_gemm_desc desc = stitch_gemm_desc_packed(9, 140, 77);
  GemmOperands operands(desc, 91);
  REQUIRE(call_gemm(desc, operands.a.data(), operands.b.data(), nullptr, nullptr,
                    operands.d.data()) == 0);
  stitch_gemm_desc one_row = desc;
  one_row.m = 1;
  for (int64_t i = 0; i < desc.m; ++i) {
    std::vector<float> row(desc.n, kUnwritten);
    REQUIRE(call_gemm(one_row, operands.a.data() + i * desc.lda, operands.b.data(), nullptr,
                      nullptr, row.data()) == 0);
    const std::vector<float> in_full(operands.d.begin() + i * desc.n,
                                     operands.d.begin() + (i + 1) * desc.n);
    CHECK(bitwise_equal(row, in_full));
  }
}

TEST_CASE("an empty GEMM (m, n or batch 0) succeeds without touching D", "[library]") {
  std::vector<float> d(4, kUnwritten);
  const float a[1] = {1.0f}, b[1] = {1.0f};
  for (int empty = 0; empty < 3; ++empty) {
    stitch_gemm_desc desc = stitch_gemm_desc_packed(empty == 0 ? 0 : 2, empty == 1 ? 0 : 2, 1);
    if (empty == 2) desc.batch_count = 0;
    CHECK(call_gemm(desc, a, b, nullptr, nullptr, d.data()) == 0);
  }
  for (float value : d)
    CHECK(std::isnan(value));
}

TEST_CASE("a 128 x 768 x 768 GEMM takes well under a second", "[library]") {
  stitch_gemm_desc desc = stitch_gemm_desc_packed(128, 768, 768);
  GemmOperands operands(desc, 101);
  const auto start = std::chrono::steady_clock::now();
  REQUIRE(call_gemm(desc, operands.a.data(), operands.b.data(), nullptr, nullptr,
                    operands.d.data()) == 0);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  INFO("took " << seconds << " s");
#ifdef NDEBUG
  CHECK(seconds < 0.5);
#endif
  const Expected expected = reference_gemm(desc, operands.a.data(), operands.b.data(), nullptr,
                                           nullptr, operands.d.size());
  CHECK(first_mismatch(operands.d, expected) == "");
}

TEST_CASE("the comparison catches one wrong element", "[library]") {
  // Guards the tests above against a tolerance too loose to fail: a result off by one part in
  // 10^4 of its magnitude in a single element is reported.
  stitch_gemm_desc desc = stitch_gemm_desc_packed(8, 8, 8);
  GemmOperands operands(desc, 111);
  REQUIRE(call_gemm(desc, operands.a.data(), operands.b.data(), nullptr, nullptr,
                    operands.d.data()) == 0);
  const Expected expected = reference_gemm(desc, operands.a.data(), operands.b.data(), nullptr,
                                           nullptr, operands.d.size());
  REQUIRE(first_mismatch(operands.d, expected) == "");
  operands.d[27] += static_cast<float>(1e-4 * expected.magnitude[27]);
  CHECK(first_mismatch(operands.d, expected).find("element 27") == 0);
}
