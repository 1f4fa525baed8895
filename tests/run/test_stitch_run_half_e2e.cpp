// stitch-run on a half-precision library stitchc really compiled (host target): an Add of two
// float16 (and bfloat16) inputs, run on .npy inputs and compared with an exact 16-bit .pb
// reference and with a float32 reference of the unrounded inputs (as a reduced-precision
// build is compared with its fp32 model). Registered apart from stitch_run_tests because it
// needs stitchc.
#include <catch2/catch.hpp>
#include <fmt/format.h>
#include <onnx/onnx_pb.h>

#include <cmath>
#include <fstream>

#include "driver/run/npy.h"
#include "model_builder.h"
#include "run_test_support.h"
#include "tool_runner.h"

using namespace stitch::run;
using namespace stitch::run::testing;

namespace {

struct HalfType {
  int onnx_type;
  stitch_dtype dtype;
  uint16_t (*to_bits)(float);
  float (*to_float)(uint16_t);
  double max_rel_l2; // what rounding the inputs and the sum to this type costs, with margin
};

const HalfType kFloat16{onnx::TensorProto::FLOAT16, STITCH_FLOAT16, float_to_half, half_to_float,
                        2e-3};
const HalfType kBfloat16{onnx::TensorProto::BFLOAT16, STITCH_BFLOAT16, float_to_bfloat16,
                         bfloat16_to_float, 1.6e-2};

std::vector<uint16_t> to_bits(const HalfType& type, const std::vector<float>& values) {
  std::vector<uint16_t> bits;
  for (float value : values)
    bits.push_back(type.to_bits(value));
  return bits;
}

void check_add_model(const HalfType& type) {
  const std::string name = dtype_name(type.dtype);
  INFO("the Add model in " << name);
  std::filesystem::path dir = stitch::test::fresh_temp_dir("run_half_e2e");
  stitch::test::ModelBuilder builder;
  builder.input("a", type.onnx_type, {2, 3}).input("b", type.onnx_type, {2, 3});
  builder.node("Add", {"a", "b"}, {"y"});
  builder.output("y", type.onnx_type, {2, 3}, true);
  const std::string model = builder.write_to(dir);
  const std::string library = (dir / "libmodel.so").string();
  ToolResult compiled = run_program(STITCHC_PATH, {model, "-o", library, "--target", "host"});
  REQUIRE(compiled.status == 0);

  // Fresh values, none exact in 16 bits; the float32 reference adds them unrounded.
  const std::vector<float> a = {0.1f, -1.7f, 3.14159f, 12.345f, -0.333f, 250.7f};
  const std::vector<float> b = {0.2f, 0.65f, -2.71828f, 7.77f, -0.6f, 0.3f};
  std::vector<float> reference;
  std::vector<uint16_t> exact;
  for (size_t i = 0; i < a.size(); ++i) {
    reference.push_back(static_cast<float>(static_cast<double>(a[i]) + b[i]));
    exact.push_back(
        type.to_bits(type.to_float(type.to_bits(a[i])) + type.to_float(type.to_bits(b[i]))));
  }
  const auto file = [&](const std::string& f) { return (dir / f).string(); };
  write_npy(file("a.npy"), make_tensor(type.dtype, {2, 3}, to_bits(type, a)));
  write_npy(file("b.npy"), make_tensor(type.dtype, {2, 3}, to_bits(type, b)));
  write_npy(file("ref32.npy"), make_tensor(STITCH_FLOAT32, {2, 3}, reference));
  onnx::TensorProto exact_proto;
  exact_proto.set_name("y");
  exact_proto.set_data_type(type.onnx_type);
  exact_proto.add_dims(2);
  exact_proto.add_dims(3);
  for (uint16_t bits : exact)
    exact_proto.add_int32_data(bits);
  std::ofstream(file("exact.pb"), std::ios::binary) << exact_proto.SerializeAsString();

  const std::vector<std::string> inputs = {library, "--input", "a=" + file("a.npy"), "--input",
                                           "b=" + file("b.npy")};
  auto run_with = [&](std::vector<std::string> extra) {
    std::vector<std::string> args = inputs;
    args.insert(args.end(), extra.begin(), extra.end());
    return run_stitch_run(args);
  };
  // Proves: the sum is rounded once to the 16-bit type, bit for bit what the host computes.
  ToolResult bitwise =
      run_with({"--expected", "y=" + file("exact.pb"), "--rtol", "0", "--atol", "0"});
  CHECK(bitwise.status == 0);
  CHECK_THAT(bitwise.output, Catch::Contains("output y: " + name + "[2,3]"));
  // Proves: against the float32 reference, the relative L2 error is the rounding's and
  // --max-rel-l2 decides by it.
  std::string bound = fmt::format("{:g}", type.max_rel_l2);
  ToolResult loose = run_with({"--expected", "y=" + file("ref32.npy"), "--max-rel-l2", bound});
  CHECK(loose.status == 0);
  CHECK_THAT(loose.output,
             Catch::Contains(name + " output vs float32 expected, compared as double: OK"));
  ToolResult tight = run_with({"--expected", "y=" + file("ref32.npy"), "--max-rel-l2", "1e-7"});
  CHECK(tight.status == 1);
}

} // namespace

TEST_CASE("stitch-run runs a float16 Add model stitchc compiled for the host", "[run][half]") {
  check_add_model(kFloat16);
}

TEST_CASE("stitch-run runs a bfloat16 Add model stitchc compiled for the host", "[run][half]") {
  check_add_model(kBfloat16);
}
