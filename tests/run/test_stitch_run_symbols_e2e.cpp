// stitch-run on a library with symbolic dims that stitchc really compiled (host target): a
// small MLP over x float32[batch,seq,8] (MatMul by an [8,16] weight, bias, Relu, a scale, a
// residual and a Sigmoid), built here with ModelBuilder and compiled once with
// --dim batch=1..4 --dim seq=1..9@4, then run at several shapes against a reference computed
// here. Registered apart from stitch_run_tests because it needs stitchc.
#include <catch2/catch.hpp>

#include <cmath>

#include "driver/run/npy.h"
#include "model_builder.h"
#include "run_test_support.h"
#include "tool_runner.h"

using namespace stitch::run;
using namespace stitch::run::testing;

namespace {

constexpr int64_t kIn = 8;
constexpr int64_t kOut = 16;

// Fresh values in [-1, 1), none of them special, from a fixed recipe.
std::vector<float> fresh_values(size_t count, uint32_t seed) {
  std::vector<float> values;
  uint32_t state = seed * 2654435761u + 1;
  for (size_t i = 0; i < count; ++i) {
    state = state * 1664525u + 1013904223u;
    values.push_back(static_cast<float>(state >> 8) / static_cast<float>(1u << 23) - 1.0f);
  }
  return values;
}

// h = x W + b; a = 2 Relu(h) + h; y = Sigmoid(a) + a, row by row.
std::vector<float> reference(const std::vector<float>& x, const std::vector<float>& w,
                             const std::vector<float>& b, int64_t rows) {
  std::vector<float> y;
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < kOut; ++c) {
      double h = b[c];
      for (int64_t k = 0; k < kIn; ++k)
        h += static_cast<double>(x[r * kIn + k]) * w[k * kOut + c];
      double a = 2 * std::max(h, 0.0) + h;
      y.push_back(static_cast<float>(1 / (1 + std::exp(-a)) + a));
    }
  }
  return y;
}

} // namespace

TEST_CASE("stitch-run runs a library stitchc compiled with symbolic dims at several shapes",
          "[run][symbols]") {
  std::filesystem::path dir = stitch::test::fresh_temp_dir("run_symbols_e2e");
  const std::vector<float> w = fresh_values(kIn * kOut, 1), b = fresh_values(kOut, 2);
  stitch::test::ModelBuilder builder;
  builder.input("x", onnx::TensorProto::FLOAT, {-1, -1, kIn}, {"batch", "seq"}).output("y");
  builder.initializer_f32("w", {kIn, kOut}, w).initializer_f32("b", {kOut}, b);
  builder.initializer_f32("two", {}, {2.0f});
  builder.node("MatMul", {"x", "w"}, {"xw"});
  builder.node("Add", {"xw", "b"}, {"h"});
  builder.node("Relu", {"h"}, {"r"});
  builder.node("Mul", {"r", "two"}, {"m"});
  builder.node("Add", {"m", "h"}, {"a"});
  builder.node("Sigmoid", {"a"}, {"s"});
  builder.node("Add", {"s", "a"}, {"y"});
  const std::string model = builder.write_to(dir);
  const std::string library = (dir / "libmodel.so").string();
  ToolResult compiled = run_program(STITCHC_PATH, {model, "-o", library, "--target", "host",
                                                   "--dim", "batch=1..4", "--dim", "seq=1..9@4"});
  REQUIRE(compiled.status == 0);

  // Proves: --info gives the symbols' ranges and names the dims of the input and the output.
  ToolResult info = run_stitch_run({library, "--info"});
  CHECK(info.status == 0);
  CHECK_THAT(info.output, Catch::Contains("symbol batch in 1..4\n  symbol seq in 1..9"));
  CHECK_THAT(info.output, Catch::Contains("input  x: float32[batch,seq,8]"));
  CHECK_THAT(info.output, Catch::Contains("output y: float32[batch,seq,16]"));

  // Proves: one library matches the reference at the smallest shape, at odd sizes between and
  // at the largest, each input file run at its own shape.
  for (auto [batch, seq] : {std::pair<int64_t, int64_t>{1, 1}, {3, 7}, {4, 9}, {2, 4}}) {
    INFO("batch " << batch << ", seq " << seq);
    const std::string tag = std::to_string(batch) + "x" + std::to_string(seq);
    const std::vector<float> x =
        fresh_values(batch * seq * kIn, static_cast<uint32_t>(batch * 10 + seq));
    const std::string x_file = (dir / ("x_" + tag + ".npy")).string();
    const std::string y_file = (dir / ("y_" + tag + ".npy")).string();
    write_npy(x_file, make_tensor(STITCH_FLOAT32, {batch, seq, kIn}, x));
    write_npy(y_file,
              make_tensor(STITCH_FLOAT32, {batch, seq, kOut}, reference(x, w, b, batch * seq)));
    ToolResult r = run_stitch_run({library, "--input", "x=" + x_file, "--expected", "y=" + y_file});
    CHECK(r.status == 0);
    CHECK_THAT(r.output, Catch::Contains("dims   batch=" + std::to_string(batch) +
                                         " seq=" + std::to_string(seq)));
    CHECK_THAT(r.output, Catch::Contains("PASS: all 1 compared outputs match"));
  }

  // Proves: random inputs at the --dim sizes, timed at that shape.
  ToolResult timed =
      run_stitch_run({library, "--dim", "batch=3", "--dim", "seq=5", "--iters", "2"});
  CHECK(timed.status == 0);
  CHECK_THAT(timed.output, Catch::Contains("input  x: float32[3,5,8] <- random (seed 0)"));
  CHECK_THAT(timed.output, Catch::Contains("output y: float32[3,5,16]"));
  CHECK_THAT(timed.output, Catch::Contains("timing at batch=3 seq=5: 2 runs"));

  // Proves: --shape-context runs the shape again in a context laid out for it alone, which
  // needs less memory than one for the maxima, and compares the outputs bitwise.
  ToolResult own =
      run_stitch_run({library, "--dim", "batch=1", "--dim", "seq=2", "--shape-context"});
  CHECK(own.status == 0);
  CHECK_THAT(own.output,
             Catch::Matches("(.|\n)*context memory: [0-9]+ bytes for the symbols' "
                            "maxima, [0-9]+ for this shape alone \\([0-9.]+%\\)(.|\n)*"));
  CHECK_THAT(own.output,
             Catch::Contains("the context for this shape gives the same bytes (1 output): OK"));
  CHECK_THAT(own.output, !Catch::Contains("(100.0%)"));

  // Proves: an input outside the compiled range is refused with the library's message, which
  // names the input, the dim, its symbol and the range.
  const std::string big = (dir / "x_big.npy").string();
  write_npy(big, make_tensor(STITCH_FLOAT32, {5, 1, kIn}, fresh_values(5 * kIn, 9)));
  ToolResult refused = run_stitch_run({library, "--input", "x=" + big});
  CHECK(refused.status == 2);
  CHECK_THAT(refused.output, Catch::Contains("input 0 ('x'): shape is [5,1,8] but dim 0 "
                                             "('batch') must be in 1..4"));
}
