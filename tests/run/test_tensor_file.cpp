// ONNX TensorProto (.pb) reading: values from raw_data and from each typed field ONNX
// assigns, the name kept, and malformed or unsupported protos refused with a reason. Also
// the extension dispatch of read_tensor_file.
#include <catch2/catch.hpp>
#include <onnx/onnx_pb.h>

#include <fstream>

#include "driver/run/npy.h"
#include "driver/run/run_error.h"
#include "driver/run/tensor_file.h"
#include "run_test_support.h"

using namespace stitch::run;
using namespace stitch::run::testing;

namespace {

onnx::TensorProto proto_of(int data_type, std::vector<int64_t> dims) {
  onnx::TensorProto proto;
  proto.set_name("t");
  proto.set_data_type(data_type);
  for (int64_t dim : dims)
    proto.add_dims(dim);
  return proto;
}

HostTensor parse(const onnx::TensorProto& proto) {
  return parse_tensor_proto(proto.SerializeAsString(), "t.pb").tensor;
}

std::string proto_error(const std::string& bytes) {
  try {
    parse_tensor_proto(bytes, "bad.pb");
  } catch (const RunError& error) {
    return error.what();
  }
  return "no error";
}

} // namespace

TEST_CASE("pb tensors with raw_data parse to their bytes", "[run][pb]") {
  // Proves: raw_data is taken as little-endian elements; dims, dtype and name are kept.
  onnx::TensorProto proto = proto_of(onnx::TensorProto::FLOAT, {2, 2});
  std::vector<float> values = {1.5f, -2.0f, 0.25f, 8.0f};
  proto.set_raw_data(std::string(reinterpret_cast<const char*>(values.data()), 16));
  NamedTensor named = parse_tensor_proto(proto.SerializeAsString(), "t.pb");
  CHECK(named.name == "t");
  CHECK(describe_tensor(named.tensor) == "float32[2,2]");
  CHECK(values_of<float>(named.tensor) == values);

  onnx::TensorProto scalar = proto_of(onnx::TensorProto::INT64, {});
  int64_t value = -(int64_t{1} << 40);
  scalar.set_raw_data(std::string(reinterpret_cast<const char*>(&value), 8));
  CHECK(values_of<int64_t>(parse(scalar)) == std::vector<int64_t>{value});
}

TEST_CASE("pb tensors with typed fields parse to their values", "[run][pb]") {
  // Proves: each typed field ONNX defines is read for the dtypes it carries.
  onnx::TensorProto f = proto_of(onnx::TensorProto::FLOAT, {3});
  for (float v : {1.0f, -0.5f, 3.25f})
    f.add_float_data(v);
  CHECK(values_of<float>(parse(f)) == std::vector<float>{1.0f, -0.5f, 3.25f});

  onnx::TensorProto d = proto_of(onnx::TensorProto::DOUBLE, {2});
  d.add_double_data(1e300);
  d.add_double_data(-2.5);
  CHECK(values_of<double>(parse(d)) == std::vector<double>{1e300, -2.5});

  onnx::TensorProto i64 = proto_of(onnx::TensorProto::INT64, {2});
  i64.add_int64_data(INT64_MIN);
  i64.add_int64_data(7);
  CHECK(values_of<int64_t>(parse(i64)) == std::vector<int64_t>{INT64_MIN, 7});

  onnx::TensorProto i8 = proto_of(onnx::TensorProto::INT8, {2});
  i8.add_int32_data(-3);
  i8.add_int32_data(127);
  CHECK(values_of<int8_t>(parse(i8)) == std::vector<int8_t>{-3, 127});

  onnx::TensorProto b = proto_of(onnx::TensorProto::BOOL, {3});
  for (int v : {1, 0, 1})
    b.add_int32_data(v);
  CHECK(values_of<uint8_t>(parse(b)) == std::vector<uint8_t>{1, 0, 1});

  onnx::TensorProto h = proto_of(onnx::TensorProto::FLOAT16, {2});
  h.add_int32_data(0x3c00); // 1.0
  h.add_int32_data(0xc000); // -2.0
  HostTensor half = parse(h);
  CHECK(half_to_float(values_of<uint16_t>(half)[0]) == 1.0f);
  CHECK(half_to_float(values_of<uint16_t>(half)[1]) == -2.0f);

  onnx::TensorProto u32 = proto_of(onnx::TensorProto::UINT32, {2});
  u32.add_uint64_data(4000000000u);
  u32.add_uint64_data(1);
  CHECK(values_of<uint32_t>(parse(u32)) == std::vector<uint32_t>{4000000000u, 1});

  onnx::TensorProto bf = proto_of(onnx::TensorProto::BFLOAT16, {1});
  bf.add_int32_data(0x3f80);
  CHECK(bfloat16_to_float(values_of<uint16_t>(parse(bf))[0]) == 1.0f);

  onnx::TensorProto empty = proto_of(onnx::TensorProto::FLOAT, {0, 3});
  CHECK(parse(empty).bytes.empty());
}

TEST_CASE("float16 and bfloat16 pb files written by onnx parse to their bit patterns",
          "[run][pb]") {
  // Proves: both forms onnx 1.20 writes for 16-bit floats, raw_data (numpy_helper.from_array)
  // and bit patterns in int32_data (helper.make_tensor), read to the same tensor.
  // The values 1, -2.5 and 0.0999755859375 (0x2e66 in float16; 0x3dcd, 0.099609375, in
  // bfloat16).
  const std::string half_raw = literal_bytes("\x08\x03\x10\x0a\x42\x01hJ\x06\x00<\x00\xc1\x66.");
  const std::string half_int32 =
      literal_bytes("\x08\x03\x10\x0a*\x07\x80x\x80\x82\x03\xe6\x5c\x42\x01h");
  const std::string bf16_raw = literal_bytes("\x08\x03\x10\x10\x42\x01\x62J\x06\x80\x3f \xc0\xcd=");
  const std::string bf16_int32 =
      literal_bytes("\x08\x03\x10\x10*\x07\x80\x7f\xa0\x80\x03\xcd{B\x01\x62");
  for (const std::string* bytes : {&half_raw, &half_int32}) {
    NamedTensor named = parse_tensor_proto(*bytes, "h.pb");
    CHECK(named.name == "h");
    CHECK(describe_tensor(named.tensor) == "float16[3]");
    CHECK(values_of<uint16_t>(named.tensor) == std::vector<uint16_t>{0x3c00, 0xc100, 0x2e66});
    CHECK(half_to_float(values_of<uint16_t>(named.tensor)[2]) == 0.0999755859375f);
  }
  for (const std::string* bytes : {&bf16_raw, &bf16_int32}) {
    NamedTensor named = parse_tensor_proto(*bytes, "b.pb");
    CHECK(named.name == "b");
    CHECK(describe_tensor(named.tensor) == "bfloat16[3]");
    CHECK(values_of<uint16_t>(named.tensor) == std::vector<uint16_t>{0x3f80, 0xc020, 0x3dcd});
    CHECK(bfloat16_to_float(values_of<uint16_t>(named.tensor)[1]) == -2.5f);
  }
}

TEST_CASE("16-bit float int32_data outside 0..65535 is refused, not cut", "[run][pb]") {
  // Proves: a value that is no 16-bit pattern is named with its position instead of being
  // silently truncated to another number.
  for (int data_type : {onnx::TensorProto::FLOAT16, onnx::TensorProto::BFLOAT16}) {
    onnx::TensorProto proto = proto_of(data_type, {2});
    proto.add_int32_data(0x3c00);
    proto.add_int32_data(0x13c00);
    CHECK_THAT(proto_error(proto.SerializeAsString()),
               Catch::Contains("int32_data[1] is 80896, not a"));
    onnx::TensorProto negative = proto_of(data_type, {1});
    negative.add_int32_data(-1);
    CHECK_THAT(proto_error(negative.SerializeAsString()),
               Catch::Contains("int32_data[0] is -1, not a"));
  }
}

TEST_CASE("malformed or unsupported pb tensors are refused with a reason", "[run][pb]") {
  // Proves: sizes are checked against dims and unsupported storage is named.
  onnx::TensorProto short_raw = proto_of(onnx::TensorProto::FLOAT, {2});
  short_raw.set_raw_data(std::string(7, '\0'));
  CHECK_THAT(proto_error(short_raw.SerializeAsString()),
             Catch::Contains("needs 8 bytes of raw_data, but it holds 7"));

  onnx::TensorProto few = proto_of(onnx::TensorProto::FLOAT, {3});
  few.add_float_data(1.0f);
  CHECK_THAT(proto_error(few.SerializeAsString()),
             Catch::Contains("needs 3 values in float_data, but it holds 1"));

  onnx::TensorProto wrong_field = proto_of(onnx::TensorProto::FLOAT, {1});
  wrong_field.add_int64_data(1);
  CHECK_THAT(proto_error(wrong_field.SerializeAsString()),
             Catch::Contains("0 there and 1 in other fields"));

  onnx::TensorProto both = proto_of(onnx::TensorProto::FLOAT, {1});
  both.set_raw_data(std::string(4, '\0'));
  both.add_float_data(1.0f);
  CHECK_THAT(proto_error(both.SerializeAsString()), Catch::Contains("both raw_data and typed"));

  onnx::TensorProto strings = proto_of(onnx::TensorProto::STRING, {1});
  strings.add_string_data("a");
  CHECK_THAT(proto_error(strings.SerializeAsString()), Catch::Contains("string tensors"));

  onnx::TensorProto complex = proto_of(onnx::TensorProto::COMPLEX64, {1});
  CHECK_THAT(proto_error(complex.SerializeAsString()), Catch::Contains("data type 14"));

  onnx::TensorProto external = proto_of(onnx::TensorProto::FLOAT, {1});
  external.set_data_location(onnx::TensorProto::EXTERNAL);
  auto* entry = external.add_external_data();
  entry->set_key("location");
  entry->set_value("weights.bin");
  CHECK_THAT(proto_error(external.SerializeAsString()), Catch::Contains("external data"));

  onnx::TensorProto negative = proto_of(onnx::TensorProto::FLOAT, {-1});
  CHECK_THAT(proto_error(negative.SerializeAsString()), Catch::Contains("negative or too large"));

  onnx::TensorProto huge = proto_of(onnx::TensorProto::FLOAT, {int64_t{1} << 40, int64_t{1} << 40});
  CHECK_THAT(proto_error(huge.SerializeAsString()), Catch::Contains("negative or too large"));

  CHECK_THAT(proto_error("\xff\xff\xff garbage"),
             Catch::Contains("not a serialized ONNX TensorProto"));
  CHECK_THAT(proto_error("\xff\xff\xff garbage"), Catch::StartsWith("bad.pb"));
}

TEST_CASE("tensor files are read by their extension", "[run][pb]") {
  // Proves: .npy and .pb files both load through read_tensor_file, and other names are refused.
  TempDir dir;
  onnx::TensorProto proto = proto_of(onnx::TensorProto::INT32, {2});
  proto.add_int32_data(5);
  proto.add_int32_data(-6);
  {
    std::ofstream out(dir.file("a.pb"), std::ios::binary);
    out << proto.SerializeAsString();
  }
  write_npy(dir.file("a.npy"), make_tensor<int32_t>(STITCH_INT32, {2}, {5, -6}));
  CHECK(read_tensor_file(dir.file("a.pb")).bytes == read_tensor_file(dir.file("a.npy")).bytes);
  CHECK_THROWS_WITH(read_tensor_file(dir.file("a.txt")),
                    Catch::Contains("unknown tensor file type"));
}
