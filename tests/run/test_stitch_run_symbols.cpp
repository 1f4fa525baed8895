// stitch-run on libraries with symbolic dims: the pieces of symbols.h (--dim parsing, each
// symbol's value for a run, dims named by their symbols), then the tool end to end on the fake
// model's symbolic variant (fake_model.cpp, FAKE_MODEL_SYMBOLIC: x float32[batch,seq] with
// batch in 1..4 and seq in 1..5; y = 2x + 1, idx = argmax per row, positive/mask:0 = x > 0).
#include <catch2/catch.hpp>
#include <onnx/onnx_pb.h>

#include <fstream>
#include <functional>

#include "driver/run/npy.h"
#include "driver/run/run_error.h"
#include "driver/run/symbols.h"
#include "run_test_support.h"
#include "tool_runner.h"

using namespace stitch::run;
using namespace stitch::run::testing;

namespace {

const std::vector<SymbolInfo> kSymbols = {{"batch", 1, 8}, {"seq", 1, 64}};

// x float32[batch,seq,16], as stitch_model_input and stitch_model_input_symbols describe it.
TensorInfo symbolic_input() {
  return TensorInfo{"x", STITCH_FLOAT32, {-1, -1, 16}, 8 * 64 * 16 * 4, {0, 1, -1}};
}

std::string thrown_by(const std::function<void()>& call) {
  try {
    call();
  } catch (const RunError& error) {
    return error.what();
  }
  return "(nothing thrown)";
}

// The fake model's outputs for x of `rows` by `cols` floats.
struct FakeOutputs {
  HostTensor y, idx;
};

FakeOutputs fake_outputs(const std::vector<float>& x, int64_t rows, int64_t cols) {
  std::vector<float> y;
  std::vector<int64_t> idx;
  for (int64_t row = 0; row < rows; ++row) {
    int64_t best = 0;
    for (int64_t col = 0; col < cols; ++col) {
      y.push_back(2 * x[row * cols + col] + 1);
      if (x[row * cols + col] > x[row * cols + best]) best = col;
    }
    idx.push_back(best);
  }
  return {make_tensor(STITCH_FLOAT32, {rows, cols}, y), make_tensor(STITCH_INT64, {rows}, idx)};
}

} // namespace

TEST_CASE("stitch-run's --dim arguments are NAME=SIZE with a size in the symbol's range",
          "[run][symbols]") {
  // Proves: each --dim names a symbol and a size in its range; every other form, an unknown
  // name (the message lists the symbols), a size out of range, a symbol given twice and any
  // --dim for a library of fixed shapes are refused with a message naming the argument.
  CHECK(parse_dim_arg("seq=12") == std::pair<std::string, int64_t>{"seq", 12});
  auto requested = requested_symbol_values({"seq=12"}, kSymbols);
  REQUIRE(requested.size() == 2);
  CHECK_FALSE(requested[0]);
  CHECK(requested[1] == 12);
  CHECK(requested_symbol_values({"batch=1", "seq=64"}, kSymbols)[1] == 64);
  auto error = [](std::vector<std::string> args, std::vector<SymbolInfo> symbols = kSymbols) {
    return thrown_by([&] { requested_symbol_values(args, symbols); });
  };
  CHECK_THAT(error({"seq"}), Catch::Contains("--dim 'seq' is not NAME=VALUE"));
  CHECK_THAT(error({"=3"}), Catch::Contains("is not NAME=VALUE"));
  CHECK_THAT(error({"seq=-1"}), Catch::Contains("the size '-1' is not a non-negative integer"));
  CHECK_THAT(error({"seq=1.5"}), Catch::Contains("the size '1.5' is not"));
  CHECK_THAT(error({"seq=99999999999999999999"}), Catch::Contains("is not a non-negative"));
  CHECK_THAT(error({"len=3"}), Catch::Contains("--dim 'len=3' names no symbolic dim of the "
                                               "library; its symbolic dims are: batch in 1..8, "
                                               "seq in 1..64"));
  CHECK_THAT(error({"seq=65"}), Catch::Contains("--dim 'seq=65': seq must be in 1..64"));
  CHECK_THAT(error({"batch=0"}), Catch::Contains("batch must be in 1..8"));
  CHECK_THAT(error({"seq=3", "seq=3"}), Catch::Contains("gives the symbolic dim 'seq' twice"));
  CHECK_THAT(error({"seq=3"}, {}), Catch::Contains("the library has no symbolic dims"));
  CHECK(requested_symbol_values({}, {}).empty());
}

TEST_CASE("each symbol takes --dim's size, else an input file's, else its maximum",
          "[run][symbols]") {
  // Proves: the order of choice; a file whose dim differs from --dim is refused with the
  // input, the file, the dim and the size asked for, and so is a file's size out of range
  // that a random input would take; dims_at puts the values in; a type names
  // each symbolic dim by its symbol, and a dim computed from the symbols (-2) as "?".
  const std::vector<TensorInfo> inputs = {symbolic_input()};
  std::vector<std::optional<int64_t>> none(2), seq_12 = {std::nullopt, 12};
  std::vector<std::optional<std::vector<int64_t>>> no_file(1), file = {{{3, 12, 16}}};
  const std::vector<std::string> origins = {"x.npy"};
  CHECK(choose_symbol_values(kSymbols, none, inputs, no_file, origins) == SymbolValues{8, 64});
  CHECK(choose_symbol_values(kSymbols, seq_12, inputs, no_file, origins) == SymbolValues{8, 12});
  CHECK(choose_symbol_values(kSymbols, none, inputs, file, origins) == SymbolValues{3, 12});
  CHECK(choose_symbol_values(kSymbols, seq_12, inputs, file, origins) == SymbolValues{3, 12});
  std::vector<std::optional<int64_t>> seq_5 = {std::nullopt, 5};
  CHECK_THAT(thrown_by([&] { choose_symbol_values(kSymbols, seq_5, inputs, file, origins); }),
             Catch::Contains("input 'x': x.npy has 12 in dim 1 ('seq'), but --dim asks for "
                             "seq=5"));
  // A random input would take a file's size: it must be in range (else the library says so).
  const std::vector<TensorInfo> two = {symbolic_input(), symbolic_input()};
  std::vector<std::optional<std::vector<int64_t>>> huge = {{{3, 100000, 16}}, std::nullopt};
  CHECK_THAT(thrown_by([&] {
               choose_symbol_values(kSymbols, none, two, huge, {"x.npy", ""});
             }),
             Catch::Contains("x.npy has 100000 in dim 1 ('seq'), but seq must be in 1..64"));
  huge.back() = huge.front();
  CHECK(choose_symbol_values(kSymbols, none, two, huge, {"x.npy", "y.npy"}) ==
        SymbolValues{3, 100000});
  CHECK(dims_at(inputs[0], {3, 7}) == std::vector<int64_t>{3, 7, 16});
  CHECK(describe_symbolic_type(inputs[0], kSymbols) == "float32[batch,seq,16]");
  TensorInfo flattened{"rows", STITCH_FLOAT32, {-1, 16}, 0, {-2, -1}};
  CHECK(describe_symbolic_type(flattened, kSymbols) == "float32[?,16]");
  CHECK(describe_binding(kSymbols, {3, 7}) == "batch=3 seq=7");
  CHECK(describe_binding({}, {}).empty());
}

TEST_CASE("stitch-run --info lists the symbolic dims and names them in the tensors",
          "[run][symbols][tool]") {
  // Proves: each symbol is printed with its range; the input's and the outputs' symbolic dims
  // are named (the outputs' found by asking the library for their shapes); a library of fixed
  // shapes prints no symbols and its numbers as before.
  ToolResult r = run_stitch_run({STITCH_FAKE_MODEL_SYMBOLIC, "--info"});
  CHECK(r.status == 0);
  CHECK_THAT(r.output, Catch::Contains("symbol batch in 1..4\n  symbol seq in 1..5"));
  CHECK_THAT(r.output, Catch::Contains("input  x: float32[batch,seq]"));
  CHECK_THAT(r.output, Catch::Contains("output y: float32[batch,seq]"));
  CHECK_THAT(r.output, Catch::Contains("output idx: int64[batch]"));
  CHECK_THAT(r.output, Catch::Contains("output positive/mask:0: bool[batch,seq]"));
  ToolResult fixed = run_stitch_run({STITCH_FAKE_MODEL, "--info"});
  CHECK(fixed.status == 0);
  CHECK_THAT(fixed.output, Catch::Contains("stitchc arguments: fake_model.cpp\n  input  x: "
                                           "float32[2,3]"));
  CHECK_THAT(fixed.output, Catch::Contains("output idx: int64[2]"));
}

TEST_CASE("stitch-run makes random inputs at the sizes --dim gives, else at the maxima",
          "[run][symbols][tool]") {
  // Proves: without --dim the random input has every symbol at its maximum; with --dim, at
  // those sizes; the outputs (printed and written) have the shape the library gives for the
  // input's, and agree with the random input; the run's sizes are printed.
  ToolResult largest = run_stitch_run({STITCH_FAKE_MODEL_SYMBOLIC});
  CHECK(largest.status == 0);
  CHECK_THAT(largest.output, Catch::Contains("dims   batch=4 seq=5"));
  CHECK_THAT(largest.output, Catch::Contains("input  x: float32[4,5] <- random (seed 0)"));
  CHECK_THAT(largest.output, Catch::Contains("output idx: int64[4]"));

  TempDir dir;
  ToolResult r = run_stitch_run({STITCH_FAKE_MODEL_SYMBOLIC, "--dim", "seq=3", "--dim", "batch=2",
                                 "--output-dir", dir.path().string()});
  CHECK(r.status == 0);
  CHECK_THAT(r.output, Catch::Contains("dims   batch=2 seq=3"));
  CHECK_THAT(r.output, Catch::Contains("input  x: float32[2,3] <- random (seed 0)"));
  CHECK_THAT(r.output, Catch::Contains("output y: float32[2,3]"));
  HostTensor y = read_npy(dir.file("y.npy"));
  HostTensor idx = read_npy(dir.file("idx.npy"));
  REQUIRE(describe_tensor(y) == "float32[2,3]");
  REQUIRE(describe_tensor(idx) == "int64[2]");
  std::vector<float> x;
  for (float v : values_of<float>(y))
    x.push_back((v - 1) / 2);
  CHECK(idx.bytes == fake_outputs(x, 2, 3).idx.bytes);
}

TEST_CASE("stitch-run runs input files at their own shape and compares at that shape",
          "[run][symbols][tool]") {
  // Proves: an input file of any shape in range runs at that shape, and --expected compares
  // the outputs at it (exit 0, or 1 for a wrong one); timing names the shape it timed; an ONNX
  // test-data folder's input_0.pb likewise, with a --dim that agrees with it.
  TempDir dir;
  const std::vector<float> x = {0.5f, -0.25f, 0.75f, -1.0f, -0.5f, 0.125f};
  FakeOutputs expected = fake_outputs(x, 3, 2);
  write_npy(dir.file("x.npy"), make_tensor(STITCH_FLOAT32, {3, 2}, x));
  write_npy(dir.file("y.npy"), expected.y);
  write_npy(dir.file("idx.npy"), expected.idx);
  write_npy(dir.file("wrong_idx.npy"), fake_outputs(x, 2, 3).idx);
  ToolResult r = run_stitch_run({STITCH_FAKE_MODEL_SYMBOLIC, "--input", "x=" + dir.file("x.npy"),
                                 "--expected", "y=" + dir.file("y.npy"), "--expected",
                                 "idx=" + dir.file("idx.npy"), "--iters", "2"});
  CHECK(r.status == 0);
  CHECK_THAT(r.output, Catch::Contains("dims   batch=3 seq=2"));
  CHECK_THAT(r.output, Catch::Contains("PASS: all 2 compared outputs match"));
  CHECK_THAT(r.output, Catch::Contains("timing at batch=3 seq=2: 2 runs after 3 warmup"));
  ToolResult wrong =
      run_stitch_run({STITCH_FAKE_MODEL_SYMBOLIC, "--input", "x=" + dir.file("x.npy"), "--expected",
                      "idx=" + dir.file("wrong_idx.npy")});
  CHECK(wrong.status == 1);
  CHECK_THAT(wrong.output, Catch::Contains("the output is int64[3], but the expected tensor is "
                                           "int64[2]"));

  // An ONNX test-data folder: input_0.pb of [1,4] runs at batch=1 seq=4.
  TempDir data;
  onnx::TensorProto input;
  input.set_data_type(onnx::TensorProto::FLOAT);
  input.add_dims(1);
  input.add_dims(4);
  for (float v : {0.5f, 2.0f, -1.0f, 3.0f})
    input.add_float_data(v);
  std::ofstream(data.file("input_0.pb"), std::ios::binary) << input.SerializeAsString();
  ToolResult folder = run_stitch_run(
      {STITCH_FAKE_MODEL_SYMBOLIC, "--test-data", data.path().string(), "--dim", "seq=4"});
  CHECK(folder.status == 0);
  CHECK_THAT(folder.output, Catch::Contains("dims   batch=1 seq=4"));
  CHECK_THAT(folder.output, Catch::Contains("output idx: int64[1]: min 3 max 3"));
}

TEST_CASE("stitch-run refuses inputs whose shape disagrees with the symbolic dims",
          "[run][symbols][tool]") {
  // Proves: each problem is one line and exit 2 before any run: a file of another rank (the
  // model's type named by its symbols), a file whose dim is outside its range (the library's
  // message), a file that disagrees with --dim, and --dim on a library of fixed shapes.
  TempDir dir;
  write_npy(dir.file("cube.npy"), make_tensor(STITCH_FLOAT32, {1, 1, 1}, std::vector<float>{1}));
  write_npy(dir.file("tall.npy"), make_tensor(STITCH_FLOAT32, {5, 1}, std::vector<float>(5, 1)));
  write_npy(dir.file("pair.npy"), make_tensor(STITCH_FLOAT32, {2, 1}, std::vector<float>(2, 1)));
  ToolResult rank =
      run_stitch_run({STITCH_FAKE_MODEL_SYMBOLIC, "--input", "x=" + dir.file("cube.npy")});
  CHECK(rank.status == 2);
  CHECK_THAT(rank.output, Catch::Contains("holds float32[1,1,1], but the model expects "
                                          "float32[batch,seq]"));
  ToolResult range =
      run_stitch_run({STITCH_FAKE_MODEL_SYMBOLIC, "--input", "x=" + dir.file("tall.npy")});
  CHECK(range.status == 2);
  CHECK_THAT(range.output, Catch::Contains("stitch_model_output_shapes failed: "
                                           "STITCH_ERROR_SHAPE_MISMATCH: input 0 ('x'): dim 0 "
                                           "('batch') must be in 1..4"));
  ToolResult conflict = run_stitch_run(
      {STITCH_FAKE_MODEL_SYMBOLIC, "--input", "x=" + dir.file("pair.npy"), "--dim", "batch=3"});
  CHECK(conflict.status == 2);
  CHECK_THAT(conflict.output, Catch::Contains("input 'x': " + dir.file("pair.npy") +
                                              " has 2 in dim 0 ('batch'), but --dim asks for "
                                              "batch=3"));
  ToolResult out_of_range = run_stitch_run({STITCH_FAKE_MODEL_SYMBOLIC, "--dim", "seq=6"});
  CHECK(out_of_range.status == 2);
  CHECK_THAT(out_of_range.output, Catch::Contains("--dim 'seq=6': seq must be in 1..5"));
  ToolResult fixed = run_stitch_run({STITCH_FAKE_MODEL, "--dim", "batch=2"});
  CHECK(fixed.status == 2);
  CHECK_THAT(fixed.output, Catch::Contains("the library has no symbolic dims"));
}
