// stitch-run end to end: the real executable run as a subprocess on the fake host-target
// model (fake_model.cpp: y = 2x + 1, idx = argmax per row, positive/mask:0 = x > 0), with
// fixture files generated here in C++. Each case checks the exit status and the lines of
// the report that matter.
#include <catch2/catch.hpp>
#include <fmt/format.h>
#include <onnx/onnx_pb.h>

#include <fstream>

#include "driver/run/npy.h"
#include "run_test_support.h"
#include "tool_runner.h"

using namespace stitch::run;
using namespace stitch::run::testing;

namespace {

const std::vector<float> kX = {0.5f, -0.25f, 0.75f, -1.0f, -0.5f, 0.125f};

// The fake model's outputs for an input x of 6 floats, as the model computes them.
struct FakeOutputs {
  HostTensor y, idx, mask;
};

FakeOutputs reference_outputs(const std::vector<float>& x) {
  std::vector<float> y;
  std::vector<uint8_t> mask;
  std::vector<int64_t> idx;
  for (int row = 0; row < 2; ++row) {
    int64_t best = 0;
    for (int col = 0; col < 3; ++col) {
      float v = x[row * 3 + col];
      y.push_back(2 * v + 1);
      mask.push_back(v > 0 ? 1 : 0);
      if (v > x[row * 3 + best]) best = col;
    }
    idx.push_back(best);
  }
  return {make_tensor(STITCH_FLOAT32, {2, 3}, y), make_tensor(STITCH_INT64, {2}, idx),
          make_tensor(STITCH_BOOL, {2, 3}, mask)};
}

void write_proto(const std::string& path, const onnx::TensorProto& proto) {
  std::ofstream out(path, std::ios::binary);
  out << proto.SerializeAsString();
}

onnx::TensorProto float_proto(const std::string& name, std::vector<int64_t> dims,
                              const std::vector<float>& values, bool raw) {
  onnx::TensorProto proto;
  proto.set_name(name);
  proto.set_data_type(onnx::TensorProto::FLOAT);
  for (int64_t dim : dims)
    proto.add_dims(dim);
  if (raw)
    proto.set_raw_data(
        std::string(reinterpret_cast<const char*>(values.data()), values.size() * 4));
  else
    for (float v : values)
      proto.add_float_data(v);
  return proto;
}

// An ONNX test-data folder for the fake model: input_0.pb in raw_data, the outputs in typed
// fields; `y_offset` is added to the expected y.
void write_test_data(const TempDir& dir, float y_offset) {
  FakeOutputs expected = reference_outputs(kX);
  write_proto(dir.file("input_0.pb"), float_proto("x", {2, 3}, kX, true));
  std::vector<float> y = values_of<float>(expected.y);
  for (float& v : y)
    v += y_offset;
  write_proto(dir.file("output_0.pb"), float_proto("y", {2, 3}, y, false));
  onnx::TensorProto idx;
  idx.set_name("idx");
  idx.set_data_type(onnx::TensorProto::INT64);
  idx.add_dims(2);
  for (int64_t v : values_of<int64_t>(expected.idx))
    idx.add_int64_data(v);
  write_proto(dir.file("output_1.pb"), idx);
  onnx::TensorProto mask;
  mask.set_name("positive/mask:0");
  mask.set_data_type(onnx::TensorProto::BOOL);
  mask.add_dims(2);
  mask.add_dims(3);
  for (uint8_t v : expected.mask.bytes)
    mask.add_int32_data(v);
  write_proto(dir.file("output_2.pb"), mask);
}

} // namespace

TEST_CASE("stitch-run runs a host library on random inputs", "[run][tool]") {
  // Proves: with no input files the input is random (seeded), every output is reported,
  // and nothing compared means exit 0.
  ToolResult r = run_stitch_run({STITCH_FAKE_MODEL});
  CHECK(r.status == 0);
  CHECK_THAT(r.output, Catch::Contains("target host"));
  CHECK_THAT(r.output, Catch::Contains("input  x: float32[2,3] <- random (seed 0)"));
  CHECK_THAT(r.output, Catch::Contains("output y: float32[2,3]: min"));
  CHECK_THAT(r.output, Catch::Contains("output idx: int64[2]"));
  CHECK_THAT(r.output, Catch::Contains("output positive/mask:0: bool[2,3]"));
  CHECK_THAT(r.output, Catch::Contains("no expected outputs given"));
}

TEST_CASE("stitch-run writes outputs of random inputs as consistent, reproducible npy files",
          "[run][tool]") {
  // Proves: --output-dir writes one .npy per output under a safe name; the random input was
  // not zeros (y is not all 1) and lies in [-1, 1); outputs agree with each other; the same
  // seed gives the same files and another seed different ones.
  TempDir dir;
  std::string first = dir.file("first"), again = dir.file("again"), other = dir.file("other");
  REQUIRE(run_stitch_run({STITCH_FAKE_MODEL, "--output-dir", first}).status == 0);
  REQUIRE(run_stitch_run({STITCH_FAKE_MODEL, "--output-dir", again, "--seed", "0"}).status == 0);
  REQUIRE(run_stitch_run({STITCH_FAKE_MODEL, "--output-dir", other, "--seed", "1"}).status == 0);
  HostTensor y = read_npy(first + "/y.npy");
  HostTensor idx = read_npy(first + "/idx.npy");
  HostTensor mask = read_npy(first + "/positive_mask_0.npy");
  REQUIRE(describe_tensor(y) == "float32[2,3]");
  std::vector<float> x;
  for (float v : values_of<float>(y))
    x.push_back((v - 1) / 2);
  bool all_zero = true;
  for (float v : x) {
    CHECK(v >= -1.0f);
    CHECK(v < 1.0f);
    all_zero = all_zero && v == 0.0f;
  }
  CHECK(!all_zero);
  FakeOutputs expected = reference_outputs(x);
  CHECK(idx.bytes == expected.idx.bytes);
  CHECK(mask.bytes == expected.mask.bytes);
  CHECK(read_npy(again + "/y.npy").bytes == y.bytes);
  CHECK(read_npy(other + "/y.npy").bytes != y.bytes);
}

TEST_CASE("stitch-run matches expected npy outputs for npy inputs", "[run][tool]") {
  // Proves: --input feeds a .npy file and --expected compares all three outputs (float,
  // int64, bool), exiting 0 when all match.
  TempDir dir;
  FakeOutputs expected = reference_outputs(kX);
  write_npy(dir.file("x.npy"), make_tensor(STITCH_FLOAT32, {2, 3}, kX));
  write_npy(dir.file("y.npy"), expected.y);
  write_npy(dir.file("idx.npy"), expected.idx);
  write_npy(dir.file("mask.npy"), expected.mask);
  ToolResult r =
      run_stitch_run({STITCH_FAKE_MODEL, "--input", "x=" + dir.file("x.npy"), "--expected",
                      "y=" + dir.file("y.npy"), "--expected", "idx=" + dir.file("idx.npy"),
                      "--expected", "positive/mask:0=" + dir.file("mask.npy")});
  CHECK(r.status == 0);
  CHECK_THAT(r.output, Catch::Contains("input  x: float32[2,3] <- " + dir.file("x.npy")));
  CHECK_THAT(
      r.output,
      Catch::Contains("max abs err 0, max rel err 0, rel L2 err 0, 0 of 6 elements mismatch: OK"));
  CHECK_THAT(r.output,
             Catch::Contains("PASS: all 3 compared outputs match (rtol 0.001, atol 1e-05)"));
}

TEST_CASE("stitch-run compares against outputs it wrote itself", "[run][tool]") {
  // Proves: outputs written with --output-dir are valid expected files for a later run with
  // the same seed (write, then compare).
  TempDir dir;
  REQUIRE(run_stitch_run({STITCH_FAKE_MODEL, "--seed", "5", "--output-dir", dir.path().string()})
              .status == 0);
  ToolResult r =
      run_stitch_run({STITCH_FAKE_MODEL, "--seed", "5", "--expected", "y=" + dir.file("y.npy"),
                      "--expected", "idx=" + dir.file("idx.npy")});
  CHECK(r.status == 0);
  CHECK_THAT(r.output, Catch::Contains("PASS: all 2 compared outputs match"));
  ToolResult other_seed =
      run_stitch_run({STITCH_FAKE_MODEL, "--seed", "6", "--expected", "y=" + dir.file("y.npy")});
  CHECK(other_seed.status == 1);
}

TEST_CASE("stitch-run exits 1 and prints the max error on a wrong expected output", "[run][tool]") {
  // Proves: a float output off by 0.5 and an int output off by one are each reported with
  // their max error and first mismatch, and the exit status is 1.
  TempDir dir;
  FakeOutputs expected = reference_outputs(kX);
  std::vector<float> y = values_of<float>(expected.y);
  y[4] += 0.5f;
  std::vector<int64_t> idx = values_of<int64_t>(expected.idx);
  idx[1] += 1;
  write_npy(dir.file("x.npy"), make_tensor(STITCH_FLOAT32, {2, 3}, kX));
  write_npy(dir.file("y.npy"), make_tensor(STITCH_FLOAT32, {2, 3}, y));
  write_npy(dir.file("idx.npy"), make_tensor(STITCH_INT64, {2}, idx));
  ToolResult r =
      run_stitch_run({STITCH_FAKE_MODEL, "--input", "x=" + dir.file("x.npy"), "--expected",
                      "y=" + dir.file("y.npy"), "--expected", "idx=" + dir.file("idx.npy")});
  CHECK(r.status == 1);
  // rel L2: the one error 0.5 against ||y|| = sqrt(4 + 0.25 + 6.25 + 1 + 0.25 + 1.5625).
  CHECK_THAT(r.output,
             Catch::Contains("max abs err 0.5, max rel err 1, rel L2 err 0.137038, 1 of 6 "
                             "elements mismatch; first at [1,1]: got 0, expected 0.5: "
                             "MISMATCH"));
  CHECK_THAT(r.output,
             Catch::Contains("1 of 2 elements mismatch; first at [1]: got 2, expected 3"));
  CHECK_THAT(r.output, Catch::Contains("FAIL: 2 of 2 compared outputs mismatch"));

  ToolResult loose = run_stitch_run({STITCH_FAKE_MODEL, "--input", "x=" + dir.file("x.npy"),
                                     "--expected", "y=" + dir.file("y.npy"), "--atol", "0.6"});
  CHECK(loose.status == 0);
}

TEST_CASE("stitch-run --max-rel-l2 passes or fails by the relative L2 error", "[run][tool]") {
  // Proves: y off by 0.5 at one element has rel L2 err 0.137038 (see above): --max-rel-l2
  // alone passes at 0.2 though the element is far outside rtol/atol, fails at 0.1 (exit 1);
  // with --atol given too both criteria hold; a negative bound is a usage error (exit 2).
  TempDir dir;
  std::vector<float> y = values_of<float>(reference_outputs(kX).y);
  y[4] += 0.5f;
  write_npy(dir.file("x.npy"), make_tensor(STITCH_FLOAT32, {2, 3}, kX));
  write_npy(dir.file("y.npy"), make_tensor(STITCH_FLOAT32, {2, 3}, y));
  const std::vector<std::string> base = {STITCH_FAKE_MODEL, "--input", "x=" + dir.file("x.npy"),
                                         "--expected", "y=" + dir.file("y.npy")};
  auto with = [&](std::vector<std::string> extra) {
    std::vector<std::string> args = base;
    args.insert(args.end(), extra.begin(), extra.end());
    return run_stitch_run(args);
  };
  ToolResult pass = with({"--max-rel-l2", "0.2"});
  CHECK(pass.status == 0);
  CHECK_THAT(pass.output, Catch::Contains("rel L2 err 0.137038 (<= 0.2): OK"));
  CHECK_THAT(pass.output, Catch::Contains("PASS: all 1 compared outputs match (rel L2 <= 0.2)"));
  ToolResult fail = with({"--max-rel-l2", "0.1"});
  CHECK(fail.status == 1);
  CHECK_THAT(fail.output, Catch::Contains("rel L2 err 0.137038 (> 0.1): MISMATCH"));
  CHECK_THAT(fail.output, Catch::Contains("FAIL: 1 of 1 compared outputs mismatch (rel L2 <= "
                                          "0.1)"));
  ToolResult both = with({"--max-rel-l2", "0.2", "--atol", "1e-5"});
  CHECK(both.status == 1);
  CHECK_THAT(both.output, Catch::Contains("(rtol 0.001, atol 1e-05 and rel L2 <= 0.2)"));
  CHECK(with({"--max-rel-l2", "0.2", "--atol", "0.6"}).status == 0);
  ToolResult negative = with({"--max-rel-l2", "-1"});
  CHECK(negative.status == 2);
  CHECK_THAT(negative.output, Catch::Contains("--max-rel-l2 must be a non-negative number"));
}

TEST_CASE("stitch-run reads an ONNX test-data folder of pb files", "[run][tool]") {
  // Proves: --test-data feeds input_0.pb (raw_data) and compares output_N.pb (typed fields)
  // by position; a wrong output_0.pb makes it exit 1.
  TempDir good;
  write_test_data(good, 0.0f);
  ToolResult r = run_stitch_run({STITCH_FAKE_MODEL, "--test-data", good.path().string()});
  CHECK(r.status == 0);
  CHECK_THAT(r.output, Catch::Contains("x: float32[2,3] <- " + good.file("input_0.pb")));
  CHECK_THAT(r.output, Catch::Contains("PASS: all 3 compared outputs match"));

  TempDir bad;
  write_test_data(bad, 0.01f);
  ToolResult wrong = run_stitch_run({STITCH_FAKE_MODEL, "--test-data", bad.path().string()});
  CHECK(wrong.status == 1);
  CHECK_THAT(wrong.output, Catch::Contains("max abs err 0.01"));
}

TEST_CASE("stitch-run times runs and prints median and p90", "[run][tool]") {
  // Proves: --iters and --warmup run the model more times and print the statistics.
  ToolResult r = run_stitch_run({STITCH_FAKE_MODEL, "--iters", "7", "--warmup", "2"});
  CHECK(r.status == 0);
  CHECK_THAT(r.output, Catch::Matches("[\\s\\S]*timing: 7 runs after 2 warmup \\(steady_clock\\): "
                                      "median [0-9.]+ ms, p90 [0-9.]+ ms[\\s\\S]*"));
  ToolResult untimed = run_stitch_run({STITCH_FAKE_MODEL});
  CHECK_THAT(untimed.output, !Catch::Contains("timing:"));
}

TEST_CASE("stitch-run refuses inputs of the wrong dtype, shape, name or format", "[run][tool]") {
  // Proves: each input problem is a clear message and exit status 2, before any run.
  TempDir dir;
  write_npy(dir.file("ints.npy"), make_tensor<int64_t>(STITCH_INT64, {2, 3}, {1, 2, 3, 4, 5, 6}));
  write_npy(dir.file("tall.npy"), make_tensor(STITCH_FLOAT32, {3, 2}, kX));
  std::ofstream(dir.file("broken.npy"), std::ios::binary)
      << literal_bytes("\x93NUMPY\x01\x00\x05\x00{'des");

  ToolResult dtype = run_stitch_run({STITCH_FAKE_MODEL, "--input", "x=" + dir.file("ints.npy")});
  CHECK(dtype.status == 2);
  CHECK_THAT(dtype.output,
             Catch::Contains("input 'x': " + dir.file("ints.npy") +
                             " holds int64[2,3], but the model expects float32[2,3]"));
  ToolResult shape = run_stitch_run({STITCH_FAKE_MODEL, "--input", "x=" + dir.file("tall.npy")});
  CHECK(shape.status == 2);
  CHECK_THAT(shape.output,
             Catch::Contains("holds float32[3,2], but the model expects float32[2,3]"));
  ToolResult name = run_stitch_run({STITCH_FAKE_MODEL, "--input", "z=" + dir.file("tall.npy")});
  CHECK(name.status == 2);
  CHECK_THAT(name.output, Catch::Contains("names no input of the model; its inputs are: 'x'"));
  ToolResult broken = run_stitch_run({STITCH_FAKE_MODEL, "--input", "x=" + dir.file("broken.npy")});
  CHECK(broken.status == 2);
  CHECK_THAT(broken.output, Catch::Contains("malformed .npy header"));
  ToolResult missing =
      run_stitch_run({STITCH_FAKE_MODEL, "--expected", "y=" + dir.file("none.npy")});
  CHECK(missing.status == 2);
  CHECK_THAT(missing.output, Catch::Contains("none.npy: cannot open"));
}

TEST_CASE("stitch-run reports an expected file of another shape as a mismatch", "[run][tool]") {
  // Proves: a shape difference between output and expected is exit 1 with both types named.
  TempDir dir;
  write_npy(dir.file("tall.npy"), make_tensor(STITCH_FLOAT32, {3, 2}, kX));
  ToolResult r = run_stitch_run({STITCH_FAKE_MODEL, "--expected", "y=" + dir.file("tall.npy")});
  CHECK(r.status == 1);
  CHECK_THAT(r.output, Catch::Contains(
                           "the output is float32[2,3], but the expected tensor is float32[3,2]"));
}

TEST_CASE("stitch-run refuses files that are not stitchc libraries of its API version",
          "[run][tool]") {
  // Proves: a foreign shared library, a non-library file and a library of another API
  // version are each refused with exit 2 and a message saying which.
  ToolResult foreign = run_stitch_run({STITCH_NOT_A_MODEL});
  CHECK(foreign.status == 2);
  CHECK_THAT(foreign.output,
             Catch::Contains("not a stitchc library: it does not export stitch_api_version"));
  TempDir dir;
  std::ofstream(dir.file("libfake.so")) << "not an ELF file";
  ToolResult garbage = run_stitch_run({dir.file("libfake.so")});
  CHECK(garbage.status == 2);
  CHECK_THAT(garbage.output, Catch::Contains("cannot load the library"));
  ToolResult version = run_stitch_run({STITCH_FAKE_MODEL_OTHER_VERSION});
  CHECK(version.status == 2);
  CHECK_THAT(version.output,
             Catch::Contains(fmt::format("the library has stitch API version 99, but this "
                                         "stitch-run speaks version {}",
                                         STITCH_API_VERSION)));
}

TEST_CASE("stitch-run reports a failing run with the library's message", "[run][tool]") {
  // Proves: a stitch_run error status becomes exit 2 with stitch_status_name and
  // stitch_last_error in the message.
  ToolResult r = run_stitch_run({STITCH_FAKE_MODEL_FAILING});
  CHECK(r.status == 2);
  CHECK_THAT(r.output, Catch::Contains("stitch_run failed: STITCH_ERROR_CUDA: simulated failure"));
}

TEST_CASE("stitch-run refuses bad command lines with exit 2", "[run][tool]") {
  // Proves: usage errors (no library, bad numbers, contradictory flags) exit 2, and --help 0.
  CHECK(run_stitch_run({}).status == 2);
  CHECK(run_stitch_run({"--help"}).status == 0);
  CHECK(run_stitch_run({STITCH_FAKE_MODEL, "--iters", "many"}).status == 2);
  ToolResult rtol = run_stitch_run({STITCH_FAKE_MODEL, "--rtol", "-1"});
  CHECK(rtol.status == 2);
  CHECK_THAT(rtol.output, Catch::Contains("--rtol must be a non-negative number"));
  TempDir dir;
  ToolResult both =
      run_stitch_run({STITCH_FAKE_MODEL, "--random", "--test-data", dir.path().string()});
  CHECK(both.status == 2);
  CHECK_THAT(both.output, Catch::Contains("--random and --test-data contradict"));
}
