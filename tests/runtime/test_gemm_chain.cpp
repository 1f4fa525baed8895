// The GEMM chain kernel (device/stitch_gemm_chain.cuh) on the host target: a GELU feed-forward
// block and a SiLU-gated MLP, in float16 and bfloat16, in clusters of 1 to 16 blocks, at sizes
// that are no multiple of the tiles (one row included), against a double-precision reference
// of the unfused computation (the hidden values rounded to the element type, as the unfused plan
// stores them).
#include "stitch_cuda.h"

#include "chain_kernels.h"
#include "device/stitch_half.cuh"
#include "runtime_test_support.h"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

using stitch::test::ChainActivation;
using stitch::test::ChainArgs;
using stitch::test::ChainGeometry;
using stitch::test::DeviceBuffer;

namespace {

struct ChainCase {
  ChainGeometry geometry = ChainGeometry::Half;
  ChainActivation activation = ChainActivation::BiasGelu;
  int64_t rows = 0, inner = 0, hidden = 0, columns = 0;
  int blocks = 1;
  bool vectors = false;
};

bool is_half(const ChainCase& c) { return c.geometry != ChainGeometry::Bf16Decode; }

float round_to_element(const ChainCase& c, double v) {
  return is_half(c) ? stitch::round_to_float16(static_cast<float>(v))
                    : stitch::round_to_bfloat16(static_cast<float>(v));
}

// The relative spacing of the element type (2^-10 for float16, 2^-7 for bfloat16).
double element_epsilon(const ChainCase& c) { return is_half(c) ? 0x1p-10 : 0x1p-7; }

struct ChainInputs {
  std::vector<float> x, w1, w3, b1, w2, b2;
};

ChainInputs make_inputs(const ChainCase& c, unsigned salt) {
  const auto values = [&](int64_t count, float scale, unsigned s) {
    std::vector<float> v =
        stitch::test::random_floats(static_cast<std::size_t>(count), -scale, scale, salt * 16 + s);
    for (float& e : v)
      e = round_to_element(c, e);
    return v;
  };
  ChainInputs in;
  in.x = values(c.rows * c.inner, 1.0f, 1);
  in.w1 = values(c.inner * c.hidden, 0.3f, 2);
  in.w3 = values(c.inner * c.hidden, 0.3f, 3);
  in.b1 = values(c.hidden, 0.5f, 4);
  in.w2 = values(c.hidden * c.columns, 0.3f, 5);
  in.b2 = values(c.columns, 0.5f, 6);
  return in;
}

struct Reference {
  std::vector<float> out;
  std::vector<double> magnitude; // Σ |hidden · w2| + |b2| per output: the scale of its error
};

Reference reference(const ChainCase& c, const ChainInputs& in) {
  std::vector<float> hidden(static_cast<std::size_t>(c.rows * c.hidden));
  for (int64_t m = 0; m < c.rows; ++m)
    for (int64_t n = 0; n < c.hidden; ++n) {
      double first = 0, second = 0;
      for (int64_t k = 0; k < c.inner; ++k) {
        first += double(in.x[m * c.inner + k]) * in.w1[k * c.hidden + n];
        second += double(in.x[m * c.inner + k]) * in.w3[k * c.hidden + n];
      }
      double h;
      if (c.activation == ChainActivation::BiasGelu) {
        const double v = first + in.b1[n];
        h = 0.5 * v * (1.0 + std::erf(v / std::sqrt(2.0)));
      } else {
        h = first / (1.0 + std::exp(-first)) * second;
      }
      hidden[m * c.hidden + n] = round_to_element(c, h);
    }
  Reference r;
  r.out.resize(static_cast<std::size_t>(c.rows * c.columns));
  r.magnitude.resize(r.out.size());
  for (int64_t m = 0; m < c.rows; ++m)
    for (int64_t j = 0; j < c.columns; ++j) {
      double sum = in.b2[j], magnitude = std::abs(in.b2[j]);
      for (int64_t n = 0; n < c.hidden; ++n) {
        const double term = double(hidden[m * c.hidden + n]) * in.w2[n * c.columns + j];
        sum += term;
        magnitude += std::abs(term);
      }
      r.out[m * c.columns + j] = round_to_element(c, sum);
      r.magnitude[m * c.columns + j] = magnitude;
    }
  return r;
}

std::vector<uint16_t> element_bits(const ChainCase& c, const std::vector<float>& values) {
  std::vector<uint16_t> bits(values.size());
  for (std::size_t i = 0; i < values.size(); ++i)
    bits[i] = is_half(c) ? stitch::float16(values[i]).bits : stitch::bfloat16(values[i]).bits;
  return bits;
}

std::vector<float> run_chain(const ChainCase& c, const ChainInputs& in) {
  DeviceBuffer<uint16_t> x(element_bits(c, in.x)), w1(element_bits(c, in.w1));
  DeviceBuffer<uint16_t> w3(element_bits(c, in.w3)), w2(element_bits(c, in.w2));
  DeviceBuffer<float> b1(in.b1), b2(in.b2);
  DeviceBuffer<float> out(static_cast<std::size_t>(c.rows * c.columns) + 1);
  ChainArgs args;
  args.x = x.get(), args.w1 = w1.get(), args.w3 = w3.get(), args.w2 = w2.get();
  args.b1 = b1.get(), args.b2 = b2.get(), args.out = out.get();
  args.rows = c.rows, args.inner = c.inner, args.hidden = c.hidden, args.columns = c.columns;
  args.activation = c.activation;
  args.vectors = c.vectors;
  REQUIRE(stitch::test::launch_gemm_chain(c.geometry, args, c.blocks) == cudaSuccess);
  std::vector<float> got = out.download();
  got.pop_back();
  return got;
}

} // namespace

TEST_CASE("the GEMM chain equals the unfused feed-forward and gated MLP", "[runtime][chain]") {
  ChainCase c;
  SECTION("GELU feed-forward, float16, clusters of 1, 2 and 4, rows as vectors or not") {
    c.rows = 37, c.inner = 48, c.hidden = 200, c.columns = 72;
    c.blocks = GENERATE(1, 2, 4);
    c.vectors = GENERATE(false, true);
  }
  SECTION("SiLU-gated MLP, float16, a cluster of 8") {
    c.activation = ChainActivation::SiluGate;
    c.rows = 70, c.inner = 96, c.hidden = 136, c.columns = 130, c.blocks = 8;
  }
  SECTION("SiLU-gated MLP, float16, rows as vectors, the last vectors of a tile past the end") {
    c.activation = ChainActivation::SiluGate;
    c.rows = 70, c.inner = 88, c.hidden = 136, c.columns = 136, c.blocks = 8;
    c.vectors = true;
  }
  SECTION("GELU feed-forward, bfloat16, rows as vectors, a cluster of 16") {
    c.geometry = ChainGeometry::Bf16Decode;
    c.rows = 3, c.inner = 64, c.hidden = 1040, c.columns = 200, c.blocks = 16;
    c.vectors = true;
  }
  SECTION("SiLU-gated MLP, bfloat16, one row (decoding), clusters of 2 and 16") {
    c.geometry = ChainGeometry::Bf16Decode;
    c.activation = ChainActivation::SiluGate;
    c.rows = 1, c.inner = 64, c.hidden = 300, c.columns = 40;
    c.blocks = GENERATE(2, 16);
  }
  SECTION("GELU feed-forward, float16, a k step wider than the hidden tile") {
    c.geometry = ChainGeometry::HalfNarrow;
    c.rows = 21, c.inner = 72, c.hidden = 80, c.columns = 48, c.blocks = 2;
    c.vectors = GENERATE(false, true);
  }
  SECTION("GELU feed-forward, bfloat16, a hidden dim smaller than the cluster's slices") {
    c.geometry = ChainGeometry::Bf16Decode;
    c.rows = 19, c.inner = 20, c.hidden = 24, c.columns = 136, c.blocks = 4;
  }
  CAPTURE(c.rows, c.inner, c.hidden, c.columns, c.blocks, c.vectors);
  const ChainInputs in = make_inputs(c, 7);
  const Reference want = reference(c, in);
  const std::vector<float> got = run_chain(c, in);
  REQUIRE(got.size() == want.out.size());
  const double eps = element_epsilon(c);
  int bad = 0;
  for (std::size_t e = 0; e < got.size(); ++e) {
    // One rounding of the result, and a hidden value rounded the other way now and then.
    const double tolerance = eps * (2.0 * std::abs(want.out[e]) + want.magnitude[e]);
    if (!(std::abs(double(got[e]) - want.out[e]) <= tolerance)) {
      if (++bad <= 5) {
        CAPTURE(e, got[e], want.out[e], tolerance);
        CHECK(false);
      }
    }
  }
  CHECK(bad == 0);
  // Bitwise deterministic, and equal with rows loaded element by element.
  CHECK(run_chain(c, in) == got);
  c.vectors = !c.vectors;
  if (!c.vectors || (c.inner % 8 == 0 && c.hidden % 8 == 0 && c.columns % 8 == 0))
    CHECK(run_chain(c, in) == got);
}

TEST_CASE("a GEMM chain over no rows launches nothing", "[runtime][chain]") {
  ChainCase c;
  c.rows = 0, c.inner = 16, c.hidden = 32, c.columns = 16, c.blocks = 2;
  CHECK(run_chain(c, make_inputs(c, 3)).empty());
}
