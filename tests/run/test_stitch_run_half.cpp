// stitch-run end to end with float16 and bfloat16 tensors, on the fake host-target model
// built with FAKE_MODEL_HALF (fake_model.cpp: neg_h = -h in float16, neg_b = -b in
// bfloat16, each by its sign bit): inputs from .npy and .pb in every form, 16-bit expected
// outputs, a float32 reference for a float16 output, and outputs written and read back.
#include <catch2/catch.hpp>
#include <onnx/onnx_pb.h>

#include <fstream>

#include "driver/run/npy.h"
#include "run_test_support.h"
#include "tool_runner.h"

using namespace stitch::run;
using namespace stitch::run::testing;

namespace {

// Values whose float16 and bfloat16 roundings are inexact (0.1, -1.7, 3.14159, 1000.3).
const std::vector<float> kValues = {0.1f, -1.7f, 3.14159f, 1000.3f, -0.0f, 65504.0f};

std::vector<uint16_t> bits_of(const std::vector<float>& values, uint16_t (*convert)(float)) {
  std::vector<uint16_t> bits;
  for (float value : values)
    bits.push_back(convert(value));
  return bits;
}

std::vector<float> negated(const std::vector<float>& values) {
  std::vector<float> out;
  for (float value : values)
    out.push_back(-value);
  return out;
}

// A 16-bit float TensorProto: bit patterns in int32_data, or raw_data.
onnx::TensorProto proto_16(const std::string& name, int data_type,
                           const std::vector<uint16_t>& bits, bool raw) {
  onnx::TensorProto proto;
  proto.set_name(name);
  proto.set_data_type(data_type);
  proto.add_dims(2);
  proto.add_dims(3);
  if (raw)
    proto.set_raw_data(std::string(reinterpret_cast<const char*>(bits.data()), bits.size() * 2));
  else
    for (uint16_t b : bits)
      proto.add_int32_data(b);
  return proto;
}

void write_proto(const std::string& path, const onnx::TensorProto& proto) {
  std::ofstream out(path, std::ios::binary);
  out << proto.SerializeAsString();
}

} // namespace

TEST_CASE("stitch-run feeds and compares float16 and bfloat16 tensors in npy and pb",
          "[run][tool][half]") {
  // Proves: float16 .npy ('<f2') and bfloat16 .npy ('<V2', as ml_dtypes saves it) inputs
  // reach the model unchanged, and 16-bit expected outputs in .pb int32_data and raw_data
  // compare equal (exit 0); one flipped bit in the expected bfloat16 is exit 1.
  TempDir dir;
  std::vector<uint16_t> h = bits_of(kValues, float_to_half);
  std::vector<uint16_t> b = bits_of(kValues, float_to_bfloat16);
  write_npy(dir.file("h.npy"), make_tensor(STITCH_FLOAT16, {2, 3}, h));
  write_npy(dir.file("b.npy"), make_tensor(STITCH_BFLOAT16, {2, 3}, b));
  std::vector<float> minus = negated(kValues);
  write_proto(dir.file("neg_h.pb"),
              proto_16("neg_h", onnx::TensorProto::FLOAT16, bits_of(minus, float_to_half), false));
  write_proto(dir.file("neg_b.pb"), proto_16("neg_b", onnx::TensorProto::BFLOAT16,
                                             bits_of(minus, float_to_bfloat16), true));
  const std::vector<std::string> inputs = {STITCH_FAKE_MODEL_HALF, "--input",
                                           "h=" + dir.file("h.npy"), "--input",
                                           "b=" + dir.file("b.npy")};
  std::vector<std::string> args = inputs;
  args.insert(args.end(), {"--expected", "neg_h=" + dir.file("neg_h.pb"), "--expected",
                           "neg_b=" + dir.file("neg_b.pb")});
  ToolResult r = run_stitch_run(args);
  CHECK(r.status == 0);
  CHECK_THAT(r.output, Catch::Contains("input  h: float16[2,3] <- " + dir.file("h.npy")));
  CHECK_THAT(r.output, Catch::Contains("input  b: bfloat16[2,3] <- " + dir.file("b.npy")));
  CHECK_THAT(r.output, Catch::Contains("max abs err 0, max rel err 0, rel L2 err 0, 0 of 6 "
                                       "elements mismatch: OK"));
  CHECK_THAT(r.output, Catch::Contains("PASS: all 2 compared outputs match"));

  std::vector<uint16_t> wrong = bits_of(minus, float_to_bfloat16);
  wrong[2] ^= 1; // -3.140625 (0xc049) becomes -3.125 (0xc048)
  write_proto(dir.file("wrong_b.pb"), proto_16("neg_b", onnx::TensorProto::BFLOAT16, wrong, false));
  args = inputs;
  args.insert(args.end(), {"--expected", "neg_b=" + dir.file("wrong_b.pb")});
  ToolResult mismatch = run_stitch_run(args);
  CHECK(mismatch.status == 1);
  CHECK_THAT(mismatch.output, Catch::Contains("first at [0,2]: got -3.140625, expected -3.125"));
}

TEST_CASE("stitch-run compares a float16 output with a float32 reference as double",
          "[run][tool][half]") {
  // Proves: the float32 reference -kValues against the float16 output: float16 rounding
  // (relative error at most 2^-11) is within --max-rel-l2 1e-3 (exit 0) and not within 1e-6
  // (exit 1), and the report says the dtypes differ. The bfloat16 output is not compared.
  TempDir dir;
  write_npy(dir.file("h.npy"),
            make_tensor(STITCH_FLOAT16, {2, 3}, bits_of(kValues, float_to_half)));
  write_npy(dir.file("ref.npy"), make_tensor(STITCH_FLOAT32, {2, 3}, negated(kValues)));
  const std::vector<std::string> base = {STITCH_FAKE_MODEL_HALF,         "--input",
                                         "h=" + dir.file("h.npy"),       "--expected",
                                         "neg_h=" + dir.file("ref.npy"), "--max-rel-l2"};
  std::vector<std::string> args = base;
  args.push_back("1e-3");
  ToolResult r = run_stitch_run(args);
  CHECK(r.status == 0);
  CHECK_THAT(r.output, Catch::Contains("float16 output vs float32 expected, compared as double"));
  CHECK_THAT(r.output, Catch::Contains("PASS: all 1 compared outputs match (rel L2 <= 0.001)"));
  args = base;
  args.push_back("1e-6");
  ToolResult tight = run_stitch_run(args);
  CHECK(tight.status == 1);
  CHECK_THAT(tight.output, Catch::Contains("(> 1e-06)"));
}

TEST_CASE("stitch-run writes float16 and bfloat16 outputs that read back bit for bit",
          "[run][tool][half]") {
  // Proves: --output-dir writes neg_h.npy as '<f2' and neg_b.npy as '<V2' (ml_dtypes'
  // bfloat16), each holding the model's exact bits, and stitch-run accepts its own files as
  // expected outputs.
  TempDir dir;
  std::vector<uint16_t> h = bits_of(kValues, float_to_half);
  std::vector<uint16_t> b = bits_of(kValues, float_to_bfloat16);
  write_npy(dir.file("h.npy"), make_tensor(STITCH_FLOAT16, {2, 3}, h));
  write_npy(dir.file("b.npy"), make_tensor(STITCH_BFLOAT16, {2, 3}, b));
  const std::string out = dir.file("out");
  ToolResult r = run_stitch_run({STITCH_FAKE_MODEL_HALF, "--input", "h=" + dir.file("h.npy"),
                                 "--input", "b=" + dir.file("b.npy"), "--output-dir", out});
  CHECK(r.status == 0);
  HostTensor neg_h = read_npy(out + "/neg_h.npy");
  HostTensor neg_b = read_npy(out + "/neg_b.npy");
  CHECK(describe_tensor(neg_h) == "float16[2,3]");
  CHECK(describe_tensor(neg_b) == "bfloat16[2,3]");
  CHECK(values_of<uint16_t>(neg_h) == bits_of(negated(kValues), float_to_half));
  CHECK(values_of<uint16_t>(neg_b) == bits_of(negated(kValues), float_to_bfloat16));
  std::ifstream file(out + "/neg_b.npy", std::ios::binary);
  std::string head(64, '\0');
  file.read(head.data(), 64);
  CHECK_THAT(head, Catch::Contains("'descr': '<V2'"));

  ToolResult again =
      run_stitch_run({STITCH_FAKE_MODEL_HALF, "--input", "h=" + dir.file("h.npy"), "--input",
                      "b=" + dir.file("b.npy"), "--expected", "neg_h=" + out + "/neg_h.npy",
                      "--expected", "neg_b=" + out + "/neg_b.npy", "--rtol", "0", "--atol", "0"});
  CHECK(again.status == 0);
}
