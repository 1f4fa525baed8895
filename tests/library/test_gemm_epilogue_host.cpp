// test_gemm_epilogue_host.cpp: the host target's GEMM epilogue, as the emitter uses it for a
// GemmLibrary group [MatMul, Add bias, Add residual, activation]: the residual as C with beta 1
// (D separate), the bias row, then Relu or the tanh Gelu, in one call. The fused call must give
// bitwise what the unfused graph gives on the host target: the plain GEMM, then each Add in
// fp32, then the activation's own device function (stitch_ops.cuh, the op table's "device"
// column, which generated kernels call), and must match a double-precision reference.
#include "library_reference.h"

#include "device/stitch_ops.cuh"

#include <catch2/catch.hpp>

#include <limits>

using namespace stitch::library::testing;

namespace {

constexpr float kUnwritten = std::numeric_limits<float>::quiet_NaN();

int32_t call_gemm(const stitch_gemm_desc& desc, const float* a, const float* b, const float* c,
                  const float* bias, float* d) {
  stitch_abi_buffers buffers = {};
  char error[512] = {};
  const int32_t status =
      stitch_library_gemm(&buffers, &desc, a, b, c, bias, d, error, sizeof(error));
  INFO(error);
  return status;
}

// The activation as the unfused graph's kernel computes it.
float activate(int32_t epilogue, float x) {
  if (epilogue == STITCH_GEMM_EPILOGUE_RELU) return stitch::ops::relu(x);
  if (epilogue == STITCH_GEMM_EPILOGUE_GELU_TANH) return stitch::ops::gelu(x, /*tanh*/ 1);
  return x;
}

const char* epilogue_name(int32_t epilogue) {
  if (epilogue == STITCH_GEMM_EPILOGUE_RELU) return "relu";
  if (epilogue == STITCH_GEMM_EPILOGUE_GELU_TANH) return "gelu_tanh";
  return "none";
}

// A packed (batched) MatMul of `desc`'s sizes with a residual of D's shape and a bias of n.
struct EpilogueCase {
  stitch_gemm_desc desc;
  std::vector<float> a, b, residual, bias;

  EpilogueCase(int64_t batch, int64_t m, int64_t n, int64_t k, int32_t epilogue, uint32_t seed)
      : desc(stitch_gemm_desc_packed(m, n, k)) {
    desc.batch_count = batch;
    a = random_values(static_cast<std::size_t>(batch * m * k), seed);
    b = random_values(static_cast<std::size_t>(batch * k * n), seed + 1);
    residual = random_values(static_cast<std::size_t>(batch * m * n), seed + 2);
    bias = random_values(static_cast<std::size_t>(n), seed + 3);
    desc.epilogue = epilogue;
  }

  std::size_t size() const { return residual.size(); }
};

// What the unfused graph computes: Y = act((A @ B + residual) + bias), one fp32 rounding per op.
// (The fused call adds C before the bias, as cuBLASLt does; the graph's two Adds are in that
// order here, so the results are bitwise comparable.)
std::vector<float> unfused(const EpilogueCase& c, bool with_residual, bool with_bias) {
  stitch_gemm_desc plain = c.desc;
  plain.epilogue = STITCH_GEMM_EPILOGUE_NONE;
  std::vector<float> y(c.size(), kUnwritten);
  REQUIRE(call_gemm(plain, c.a.data(), c.b.data(), nullptr, nullptr, y.data()) == 0);
  for (std::size_t i = 0; i < y.size(); ++i) {
    float value = y[i];
    if (with_residual) value = value + c.residual[i];
    if (with_bias) value = value + c.bias[i % static_cast<std::size_t>(c.desc.n)];
    y[i] = activate(c.desc.epilogue, value);
  }
  return y;
}

// The fused call: residual as C with beta 1 into a separate D, the bias epilogue, the activation.
std::vector<float> fused(const EpilogueCase& c, bool with_residual, bool with_bias) {
  stitch_gemm_desc desc = c.desc;
  desc.beta = with_residual ? 1.0f : 0.0f;
  std::vector<float> d(c.size(), kUnwritten);
  REQUIRE(call_gemm(desc, c.a.data(), c.b.data(), with_residual ? c.residual.data() : nullptr,
                    with_bias ? c.bias.data() : nullptr, d.data()) == 0);
  return d;
}

} // namespace

TEST_CASE("GEMM epilogue equals MatMul, then Add residual, Add bias, then the activation",
          "[library]") {
  struct Sizes {
    int64_t batch, m, n, k;
  };
  // Odd sizes, one past a column panel (128), and a batch sharing one bias.
  const Sizes sizes[] = {{1, 1, 1, 1}, {1, 7, 5, 3}, {1, 17, 129, 33}, {3, 9, 40, 65}};
  uint32_t seed = 200;
  for (int32_t epilogue :
       {STITCH_GEMM_EPILOGUE_NONE, STITCH_GEMM_EPILOGUE_RELU, STITCH_GEMM_EPILOGUE_GELU_TANH})
    for (const Sizes& s : sizes)
      for (int parts = 1; parts < 4; ++parts) {
        const bool with_residual = (parts & 1) != 0, with_bias = (parts & 2) != 0;
        INFO(epilogue_name(epilogue)
             << " batch=" << s.batch << " m=" << s.m << " n=" << s.n << " k=" << s.k
             << (with_residual ? " +residual" : "") << (with_bias ? " +bias" : ""));
        const EpilogueCase c(s.batch, s.m, s.n, s.k, epilogue, seed);
        seed += 4;
        const std::vector<float> d = fused(c, with_residual, with_bias);
        CHECK(bitwise_equal(d, unfused(c, with_residual, with_bias)));
        stitch_gemm_desc reference = c.desc;
        reference.beta = with_residual ? 1.0f : 0.0f;
        const Expected expected =
            reference_gemm(reference, c.a.data(), c.b.data(), c.residual.data(),
                           with_bias ? c.bias.data() : nullptr, d.size());
        CHECK(first_mismatch(d, expected) == "");
      }
}

TEST_CASE("the epilogue's activation sees the residual and the bias, not the bare product",
          "[library]") {
  // A residual and a bias that push every pre-activation value below zero: ReLU must give
  // zeros, which it would not if it ran before the adds (the product alone is not negative).
  EpilogueCase c(2, 5, 6, 4, STITCH_GEMM_EPILOGUE_RELU, 300);
  for (float& value : c.a)
    value = std::fabs(value);
  for (float& value : c.b)
    value = std::fabs(value);
  for (float& value : c.residual)
    value = -10.0f - std::fabs(value);
  const std::vector<float> d = fused(c, /*with_residual=*/true, /*with_bias=*/true);
  for (float value : d)
    CHECK(value == 0.0f);
  // Without them the same product stays positive.
  const std::vector<float> bare = fused(c, false, false);
  for (float value : bare)
    CHECK(value > 0.0f);
}

TEST_CASE("the comparison with the unfused graph catches a wrong order of bias and activation",
          "[library]") {
  // Guards the bitwise test above: applying the bias after the activation (a plausible bug)
  // differs from the graph's order.
  const EpilogueCase c(1, 4, 8, 6, STITCH_GEMM_EPILOGUE_GELU_TANH, 400);
  std::vector<float> wrong = fused(c, /*with_residual=*/true, /*with_bias=*/false);
  for (std::size_t i = 0; i < wrong.size(); ++i)
    wrong[i] += c.bias[i % 8];
  CHECK_FALSE(bitwise_equal(wrong, unfused(c, true, true)));
}
