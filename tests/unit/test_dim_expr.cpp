// DimExpr: the canonical form of symbolic dims, checked against direct evaluation.
#include <catch2/catch.hpp>

#include <random>

#include "graph/dim_expr.h"
#include "graph/error.h"

using namespace stitch;

namespace {

const DimExpr batch = DimExpr::symbol("batch");
const DimExpr seq = DimExpr::symbol("seq");

int64_t floor_div(int64_t a, int64_t d) { return a / d - ((a % d != 0) && ((a < 0) != (d < 0))); }

} // namespace

TEST_CASE("DimExpr: equal expressions have one form", "[dim_expr]") {
  CHECK(batch * seq == seq * batch);
  CHECK((seq + 1) - 1 == seq);
  CHECK(seq - seq == DimExpr(0));
  CHECK((seq + 1) * (seq + 1) == seq * seq + DimExpr(2) * seq + 1);
  CHECK(DimExpr::floor_div(DimExpr(2) * seq + 4, 2) == seq + 2);
  CHECK(DimExpr::floor_div(DimExpr(2) * seq + 2, 4) == DimExpr::floor_div(seq + 1, 2));
  CHECK(DimExpr::floor_div(DimExpr::floor_div(seq, 2), 3) == DimExpr::floor_div(seq, 6));
  CHECK(DimExpr::ceil_div(seq, 1) == seq);
  CHECK(DimExpr::mod(DimExpr(4) * seq, 2) == DimExpr(0));
  CHECK(DimExpr::min(seq, batch) == DimExpr::min(batch, seq));
  CHECK(DimExpr::max(seq + 1, seq) == seq + 1);
  CHECK(batch * seq != seq);
  CHECK(DimExpr::floor_div(seq, 2) != DimExpr::ceil_div(seq, 2));
}

TEST_CASE("DimExpr: printing", "[dim_expr]") {
  CHECK(DimExpr(7).to_string() == "7");
  CHECK(DimExpr(0).to_string() == "0");
  CHECK((seq * batch).to_string() == "batch*seq");
  CHECK((DimExpr(2) * seq + 1).to_string() == "2*seq+1");
  CHECK((DimExpr(1) - seq).to_string() == "-seq+1");
  CHECK(DimExpr::ceil_div(seq, 2).to_string() == "floor((seq+1)/2)");
  CHECK(DimExpr::min(seq, 64).to_string() == "min(seq,64)");
  CHECK(sym_shape_to_string({batch, seq, 768}) == "[batch,seq,768]");
}

TEST_CASE("DimExpr: ranges decide min and max and bound every expression", "[dim_expr]") {
  SymbolRanges ranges{{"batch", {1, 8}}, {"seq", {1, 64}}};
  CHECK(DimExpr::min(seq, 64, &ranges) == seq);
  CHECK(DimExpr::max(seq, 0, &ranges) == seq);
  CHECK(DimExpr::min(seq, 32, &ranges) != seq); // 33..64 pass 32
  DimBounds b = (batch * seq - 1).bounds(ranges);
  CHECK(b.lo == 0);
  CHECK(b.hi == 511);
  b = DimExpr::floor_div(seq + 1, 2).bounds(ranges);
  CHECK(b.lo == 1);
  CHECK(b.hi == 32);
  b = (DimExpr(100) - seq).bounds(ranges);
  CHECK(b.lo == 36);
  CHECK(b.hi == 99);
}

// Proves: sizes that grow with every symbol are recognized (sums and products of symbols,
// floor divisions, min and max of them), and those that may shrink are not (a negative term, a
// product with a factor that may be negative).
TEST_CASE("DimExpr: which expressions never decrease as the symbols grow", "[dim_expr]") {
  SymbolRanges ranges{{"batch", {1, 8}}, {"seq", {1, 64}}};
  CHECK((batch * seq * 768).non_decreasing(ranges));
  CHECK((seq - 1).non_decreasing(ranges));
  CHECK(DimExpr::ceil_div(seq, 16).non_decreasing(ranges));
  CHECK((batch * DimExpr::min(seq, 32) + 4).non_decreasing(ranges));
  CHECK(DimExpr(5).non_decreasing(ranges));
  CHECK(!(DimExpr(64) - seq).non_decreasing(ranges));
  CHECK(!(batch * seq - seq * seq).non_decreasing(ranges));
  CHECK(!(batch * DimExpr::floor_div(seq - 3, 2)).non_decreasing(ranges)); // -1 at seq 1
}

TEST_CASE("DimExpr: exact division by one term", "[dim_expr]") {
  auto q = DimExpr::exact_div(batch * seq * 768, batch * 12);
  REQUIRE(q);
  CHECK(*q == seq * 64);
  CHECK_FALSE(DimExpr::exact_div(batch * seq, seq + 1));
  CHECK_FALSE(DimExpr::exact_div(seq * 10, DimExpr(4)));
  CHECK_FALSE(DimExpr::exact_div(seq * 10, batch));
  CHECK(DimExpr::exact_div(DimExpr(0), batch) == DimExpr(0));
}

TEST_CASE("DimExpr: overflow is a user error, not undefined behavior", "[dim_expr]") {
  DimExpr big = DimExpr(int64_t{1} << 40) * seq;
  CHECK_THROWS_AS(big.evaluate({{"seq", int64_t{1} << 30}}), UserError);
  CHECK_THROWS_AS(DimExpr(int64_t{1} << 62) * 4, UserError);
}

// Proves: the canonical form keeps the value: random expressions built through every
// operation evaluate, at random symbol values, to what the operations give directly on numbers.
TEST_CASE("DimExpr: random expressions evaluate like the numbers they stand for", "[dim_expr]") {
  std::mt19937 rng(20261128);
  std::uniform_int_distribution<int> pick(0, 8), small(-5, 9), divisor(1, 6);
  for (int trial = 0; trial < 300; ++trial) {
    SymbolValues values{{"batch", std::uniform_int_distribution<int>(0, 9)(rng)},
                        {"seq", std::uniform_int_distribution<int>(0, 40)(rng)}};
    DimExpr e = seq;
    int64_t v = values["seq"];
    for (int step = 0; step < 6; ++step) {
      int64_t c = small(rng), d = divisor(rng);
      switch (pick(rng)) {
      case 0:
        e = e + batch;
        v += values["batch"];
        break;
      case 1:
        e = e - c;
        v -= c;
        break;
      case 2:
        e = e * c;
        v *= c;
        break;
      case 3:
        e = e * batch;
        v *= values["batch"];
        break;
      case 4:
        e = DimExpr::floor_div(e, d);
        v = floor_div(v, d);
        break;
      case 5:
        e = DimExpr::ceil_div(e, d);
        v = -floor_div(-v, d);
        break;
      case 6:
        e = DimExpr::mod(e, d);
        v = v - d * floor_div(v, d);
        break;
      case 7:
        e = DimExpr::min(e, seq + c);
        v = std::min<int64_t>(v, values["seq"] + c);
        break;
      default:
        e = DimExpr::max(e, batch);
        v = std::max<int64_t>(v, values["batch"]);
        break;
      }
      INFO(e.to_string() << " at batch=" << values["batch"] << " seq=" << values["seq"]);
      REQUIRE(e.evaluate(values) == v);
    }
  }
}

// Proves: bounds are sound, and min and max simplified by the ranges keep the value: random
// expressions built with and without the ranges evaluate alike at random points inside them,
// within the bounds of both.
TEST_CASE("DimExpr: bounds contain every value and range-simplified min/max keep it",
          "[dim_expr]") {
  std::mt19937 rng(20261129);
  const SymbolRanges ranges{{"batch", {1, 8}}, {"seq", {1, 64}}};
  std::uniform_int_distribution<int> pick(0, 6), small(-70, 70), divisor(1, 9);
  for (int trial = 0; trial < 300; ++trial) {
    DimExpr plain = seq, ranged = seq;
    for (int step = 0; step < 5; ++step) {
      const int64_t c = small(rng), d = divisor(rng);
      switch (pick(rng)) {
      case 0:
        plain = plain + batch;
        ranged = ranged + batch;
        break;
      case 1:
        plain = plain - c;
        ranged = ranged - c;
        break;
      case 2:
        plain = plain * (c % 5);
        ranged = ranged * (c % 5);
        break;
      case 3:
        plain = DimExpr::floor_div(plain, d);
        ranged = DimExpr::floor_div(ranged, d);
        break;
      case 4:
        plain = DimExpr::min(plain, DimExpr(c));
        ranged = DimExpr::min(ranged, DimExpr(c), &ranges);
        break;
      case 5:
        plain = DimExpr::max(plain, seq - c);
        ranged = DimExpr::max(ranged, seq - c, &ranges);
        break;
      default:
        plain = DimExpr::max(plain, batch * 2);
        ranged = DimExpr::max(ranged, batch * 2, &ranges);
        break;
      }
    }
    const DimBounds b = plain.bounds(ranges), rb = ranged.bounds(ranges);
    for (int point = 0; point < 20; ++point) {
      SymbolValues v{{"batch", std::uniform_int_distribution<int>(1, 8)(rng)},
                     {"seq", std::uniform_int_distribution<int>(1, 64)(rng)}};
      const int64_t value = plain.evaluate(v);
      INFO(plain.to_string() << " ~ " << ranged.to_string() << " at batch=" << v["batch"]
                             << " seq=" << v["seq"]);
      REQUIRE(ranged.evaluate(v) == value);
      REQUIRE((b.lo <= value && value <= b.hi));
      REQUIRE((rb.lo <= value && value <= rb.hi));
    }
  }
}

// Proves: every_value tries each value of an expression's one symbol (a constant once, with no
// values) and stops at the first false; it tries nothing for several symbols or a range of more
// than 2^16 values; largest is exact where it tries (20 - (seq - 5)^2 peaks inside the range, at
// 5, where the interval arithmetic's bounds say more) and falls back to the bounds otherwise.
TEST_CASE("dim expressions try every value of one symbol", "[dim_expr]") {
  const DimExpr seq = DimExpr::symbol("seq"), batch = DimExpr::symbol("batch");
  const SymbolRanges ranges = {{"seq", {1, 9}}, {"batch", {1, 4}}, {"wide", {1, 100000}}};
  std::vector<int64_t> seen;
  auto record = [&](const SymbolValues& v) {
    seen.push_back(v.empty() ? -1 : v.at("seq"));
    return true;
  };
  CHECK(seq.every_value(ranges, record) == std::optional<bool>(true));
  CHECK(seen == std::vector<int64_t>{1, 2, 3, 4, 5, 6, 7, 8, 9});
  seen.clear();
  CHECK(DimExpr(5).every_value(ranges, record) == std::optional<bool>(true));
  CHECK(seen == std::vector<int64_t>{-1});
  seen.clear();
  CHECK(DimExpr::floor_div(seq, 2).every_value(ranges, [&](const SymbolValues& v) {
    seen.push_back(v.at("seq"));
    return v.at("seq") < 4;
  }) == std::optional<bool>(false));
  CHECK(seen == std::vector<int64_t>{1, 2, 3, 4});
  seen.clear();
  CHECK_FALSE((seq * batch).every_value(ranges, record).has_value());
  CHECK_FALSE(DimExpr::symbol("wide").every_value(ranges, record).has_value());
  CHECK(seen.empty());

  const DimExpr half = DimExpr::ceil_div(seq, 2);
  const DimExpr peaked = DimExpr(20) - (seq - 5) * (seq - 5);
  CHECK(peaked.largest(ranges) == 20);
  CHECK(peaked.bounds(ranges).hi > 20); // the bounds alone say more
  CHECK((half * batch).largest(ranges) == (half * batch).bounds(ranges).hi);
}
