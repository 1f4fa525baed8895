// .npy reading and writing: round trips over every dtype and format version, byte-exact
// agreement with files numpy 2.2 wrote, hand-written headers that must be accepted, and a
// corpus of malformed files that must be refused with a message saying why.
#include <catch2/catch.hpp>

#include "driver/run/npy.h"
#include "driver/run/run_error.h"
#include "run_test_support.h"

using namespace stitch::run;
using namespace stitch::run::testing;

namespace {

const stitch_dtype kNpyDtypes[] = {STITCH_FLOAT32, STITCH_FLOAT64, STITCH_FLOAT16, STITCH_INT8,
                                   STITCH_INT16,   STITCH_INT32,   STITCH_INT64,   STITCH_UINT8,
                                   STITCH_UINT16,  STITCH_UINT32,  STITCH_UINT64,  STITCH_BOOL,
                                   STITCH_BFLOAT16};

// A tensor of `dtype` whose bytes differ from element to element (bools hold 0 or 1).
HostTensor patterned_tensor(stitch_dtype dtype, std::vector<int64_t> dims) {
  HostTensor tensor;
  tensor.dtype = dtype;
  tensor.dims = std::move(dims);
  tensor.bytes.resize(tensor.element_count() * dtype_size(dtype));
  for (size_t i = 0; i < tensor.bytes.size(); ++i)
    tensor.bytes[i] = dtype == STITCH_BOOL ? i % 3 == 0 : static_cast<uint8_t>(i * 37 + 11);
  return tensor;
}

// A .npy file with the given header text (padded to nothing) and data bytes.
std::string npy_with_header(const std::string& header, const std::string& data, int version = 1) {
  std::string out = literal_bytes("\x93NUMPY");
  out += static_cast<char>(version);
  out += '\0';
  size_t width = version == 1 ? 2 : 4;
  for (size_t i = 0; i < width; ++i)
    out += static_cast<char>((header.size() >> (8 * i)) & 0xff);
  return out + header + data;
}

std::string npy_error(const std::string& bytes) {
  try {
    parse_npy(bytes, "bad.npy");
  } catch (const RunError& error) {
    return error.what();
  }
  return "no error";
}

// Files numpy 2.2.6 wrote (np.save, or np.lib.format.write_array for versions 2.0 and 3.0).
const std::string kNumpyF4 = literal_bytes(
    "\x93NUMPY\x01\x00v\x00{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }        "
    "                                                  \x0a\x00\x00\x80?\x00\x00\x00@\x00\x00@@"
    "\x00\x00\x80@\x00\x00\xa0@\x00\x00\xc0@");
const std::string kNumpyBool = literal_bytes(
    "\x93NUMPY\x01\x00v\x00{'descr': '|b1', 'fortran_order': False, 'shape': (3,), }          "
    "                                                  \x0a\x01\x00\x01");
const std::string kNumpyI8Scalar = literal_bytes(
    "\x93NUMPY\x01\x00v\x00{'descr': '<i8', 'fortran_order': False, 'shape': (), }            "
    "                                                  \x0a\xf9\xff\xff\xff\xff\xff\xff\xff");
const std::string kNumpyU2V2 = literal_bytes(
    "\x93NUMPY\x02\x00t\x00\x00\x00{'descr': '<u2', 'fortran_order': False, 'shape': (2,), }  "
    "                                                        \x0a\x01\x00\x02\x00");
const std::string kNumpyU2V3 = literal_bytes(
    "\x93NUMPY\x03\x00t\x00\x00\x00{'descr': '<u2', 'fortran_order': False, 'shape': (2,), }  "
    "                                                        \x0a\x01\x00\x02\x00");
const std::string kNumpyF2 = literal_bytes(
    "\x93NUMPY\x01\x00v\x00{'descr': '<f2', 'fortran_order': False, 'shape': (2,), }          "
    "                                                  \x0a\x00\x38\x00\xc0");
// numpy.save of ml_dtypes 0.6.0 bfloat16 [[1, -2.5, 3], [2^-7, -0, 65280]].
const std::string kMlDtypesBf16 = literal_bytes(
    "\x93NUMPY\x01\x00v\x00{'descr': '<V2', 'fortran_order': False, 'shape': (2, 3), }        "
    "                                                  \x0a\x80\x3f \xc0@@\x00<\x00\x80\x7fG");
const std::string kNumpyFortran = literal_bytes(
    "\x93NUMPY\x01\x00v\x00{'descr': '<f4', 'fortran_order': True, 'shape': (2, 3), }         "
    "                                                  \x0a\x00\x00\x00\x00\x00\x00@@\x00\x00"
    "\x80?\x00\x00\x80@\x00\x00\x00@\x00\x00\xa0@");
const std::string kNumpyBigEndian = literal_bytes(
    "\x93NUMPY\x01\x00v\x00{'descr': '>f4', 'fortran_order': False, 'shape': (2,), }          "
    "                                                  \x0a?\x80\x00\x00@\x00\x00\x00");

} // namespace

TEST_CASE("npy round trips every dtype through every format version", "[run][npy]") {
  // Proves: encode then parse gives back dtype, dims and bytes for all 13 dtypes, several
  // shapes (scalar and empty included) and versions 1.0, 2.0, 3.0.
  const std::vector<std::vector<int64_t>> shapes = {{2, 3}, {}, {0}, {5}, {1, 2, 1, 3}};
  for (stitch_dtype dtype : kNpyDtypes) {
    for (const auto& dims : shapes) {
      for (int version : {1, 2, 3}) {
        HostTensor tensor = patterned_tensor(dtype, dims);
        std::string bytes = encode_npy(tensor, version);
        INFO(describe_tensor(tensor) << " version " << version);
        CHECK(static_cast<int>(bytes[6]) == version);
        CHECK((bytes.size() - tensor.bytes.size()) % 64 == 0);
        HostTensor back = parse_npy(bytes, "round.npy");
        CHECK(back.dtype == tensor.dtype);
        CHECK(back.dims == tensor.dims);
        CHECK(back.bytes == tensor.bytes);
      }
    }
  }
}

TEST_CASE("npy files written by numpy parse to their values", "[run][npy]") {
  // Proves: the reader understands real numpy output of each header version.
  HostTensor f4 = parse_npy(kNumpyF4, "f4.npy");
  CHECK(describe_tensor(f4) == "float32[2,3]");
  CHECK(values_of<float>(f4) == std::vector<float>{1, 2, 3, 4, 5, 6});
  CHECK(values_of<uint8_t>(parse_npy(kNumpyBool, "b.npy")) == std::vector<uint8_t>{1, 0, 1});
  HostTensor scalar = parse_npy(kNumpyI8Scalar, "s.npy");
  CHECK(scalar.dims.empty());
  CHECK(values_of<int64_t>(scalar) == std::vector<int64_t>{-7});
  CHECK(values_of<uint16_t>(parse_npy(kNumpyU2V2, "v2.npy")) == std::vector<uint16_t>{1, 2});
  CHECK(values_of<uint16_t>(parse_npy(kNumpyU2V3, "v3.npy")) == std::vector<uint16_t>{1, 2});
  HostTensor f2 = parse_npy(kNumpyF2, "f2.npy");
  CHECK(f2.dtype == STITCH_FLOAT16);
  CHECK(half_to_float(values_of<uint16_t>(f2)[0]) == 0.5f);
  CHECK(half_to_float(values_of<uint16_t>(f2)[1]) == -2.0f);
}

TEST_CASE("npy files written here are byte-identical to numpy's", "[run][npy]") {
  // Proves: the writer's header (padding for growth and alignment included) is numpy's.
  CHECK(encode_npy(make_tensor<float>(STITCH_FLOAT32, {2, 3}, {1, 2, 3, 4, 5, 6})) == kNumpyF4);
  CHECK(encode_npy(make_tensor<uint8_t>(STITCH_BOOL, {3}, {1, 0, 1})) == kNumpyBool);
  CHECK(encode_npy(make_tensor<int64_t>(STITCH_INT64, {}, {-7})) == kNumpyI8Scalar);
  HostTensor u2 = make_tensor<uint16_t>(STITCH_UINT16, {2}, {1, 2});
  CHECK(encode_npy(u2, 2) == kNumpyU2V2);
  CHECK(encode_npy(u2, 3) == kNumpyU2V3);
  CHECK(encode_npy(make_tensor<uint16_t>(STITCH_FLOAT16, {2}, {0x3800, 0xc000})) == kNumpyF2);
}

TEST_CASE("npy headers written by hand in other valid forms are accepted", "[run][npy]") {
  // Proves: key order, double quotes, missing trailing comma, whitespace, Python 2 longs,
  // '=' and '|' byte orders and an empty array all parse.
  std::string six_floats(24, '\0');
  HostTensor t = parse_npy(
      npy_with_header("{\"shape\": (2,3), \"fortran_order\": False, \"descr\": \"<f4\"}\n",
                      six_floats),
      "a.npy");
  CHECK(describe_tensor(t) == "float32[2,3]");
  t = parse_npy(
      npy_with_header(" {  'descr' : '=f4' ,\n'fortran_order':False,'shape':( 2L , 3L ) , }  \n",
                      six_floats),
      "b.npy");
  CHECK(describe_tensor(t) == "float32[2,3]");
  t = parse_npy(npy_with_header("{'descr': '<u1', 'fortran_order': False, 'shape': (3,)}", "abc"),
                "c.npy");
  CHECK(describe_tensor(t) == "uint8[3]");
  t = parse_npy(npy_with_header("{'descr': '|i1', 'fortran_order': False, 'shape': (0, 4)}", ""),
                "d.npy");
  CHECK(describe_tensor(t) == "int8[0,4]");
  CHECK(t.bytes.empty());
}

TEST_CASE("malformed npy files are refused with a reason", "[run][npy]") {
  // Proves: each defect of an untrusted file is caught before any out-of-bounds read, and
  // the message names the file and the defect.
  const std::string f4_header = "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }";
  const std::string eight(8, '\0');
  struct Case {
    std::string bytes;
    std::string message;
  };
  const std::vector<Case> cases = {
      {"", "not a .npy file"},
      {literal_bytes("\x93NUMPX\x01\x00\x00\x00"), "not a .npy file"},
      {npy_with_header(f4_header, eight, 4), "version 4.0 is not supported"},
      {literal_bytes("\x93NUMPY\x01\x01\x00\x00"), "version 1.1 is not supported"},
      {literal_bytes("\x93NUMPY\x02\x00\x10"), "ends inside its preamble"},
      {literal_bytes("\x93NUMPY\x01\x00\xff\x00{}"), "claims 255 bytes, but only 2 follow"},
      {literal_bytes("\x93NUMPY\x02\x00\xff\xff\xff\xff{}"), "claims 4294967295 bytes"},
      {npy_with_header("{'descr': '<f4', 'shape': (2,), }", eight), "has no 'fortran_order'"},
      {npy_with_header("{'descr': '<f4', 'fortran_order': False, 'shape': (2,), 'x': 'y'}", eight),
       "unexpected key 'x'"},
      {npy_with_header("{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (2,)}",
                       eight),
       "gives the key 'descr' twice"},
      {kNumpyFortran, "Fortran order"},
      {kNumpyBigEndian, "big-endian"},
      {npy_with_header("{'descr': '<c8', 'fortran_order': False, 'shape': (1,), }", eight),
       "dtype '<c8' is not supported"},
      {npy_with_header("{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (1,), }", eight),
       "structured dtypes"},
      {kNumpyF4.substr(0, kNumpyF4.size() - 1), "needs 24 data bytes, but the file holds 23"},
      {kNumpyF4 + "x", "needs 24 data bytes, but the file holds 25"},
      {npy_with_header("{'descr': '<f4', 'fortran_order': False, 'shape': (2), }", eight),
       "not a tuple"},
      {npy_with_header("{'descr': '<f4', 'fortran_order': False, 'shape': (-2,), }", eight),
       "expected a non-negative integer"},
      {npy_with_header(
           "{'descr': '<f4', 'fortran_order': False, 'shape': (4611686018427387904, 4)}", eight),
       "is too large"},
      {npy_with_header("{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999,)}",
                       eight),
       "a dimension is too large"},
      {npy_with_header("{'descr': '|b1', 'fortran_order': False, 'shape': (2,), }",
                       literal_bytes("\x01\x02")),
       "bool element 1 holds the byte 2"},
      {npy_with_header("{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }\xc3\xa9", eight),
       "non-ASCII"},
      {npy_with_header("{'descr': '<f4, 'fortran_order': False, 'shape': (2,), }", eight),
       "expected ',' or '}' after the value of 'descr'"},
      {npy_with_header("{'descr': '<f4", eight), "unterminated string"},
      {npy_with_header(f4_header + " x", eight), "unexpected text after the header"},
      {npy_with_header("{'descr': '<f4', 'fortran_order': False, 'shape': '2', }", eight),
       "'shape' is not a tuple"},
      {npy_with_header("{'descr': '<f4', 'fortran_order': 'False', 'shape': (2,), }", eight),
       "'fortran_order' is not True or False"},
      {npy_with_header("{'descr': '<\\f4', 'fortran_order': False, 'shape': (2,), }", eight),
       "escapes"},
      {npy_with_header("[1]", eight), "expected '{'"},
      {npy_with_header("{'descr': '<f4', 'fortran_order': False, 'shape': (2,)", eight),
       "expected ',' or '}'"},
  };
  for (const Case& c : cases) {
    INFO("expected: " << c.message);
    std::string message = npy_error(c.bytes);
    CHECK_THAT(message, Catch::Contains(c.message));
    CHECK_THAT(message, Catch::StartsWith("bad.npy"));
  }
  std::string many_dims;
  for (int i = 0; i < 65; ++i)
    many_dims += "1,";
  CHECK_THAT(npy_error(npy_with_header(
                 "{'descr': '<f4', 'fortran_order': False, 'shape': (" + many_dims + ")}", "")),
             Catch::Contains("more than 64 dims"));
}

TEST_CASE("npy files are written to and read from disk", "[run][npy]") {
  // Proves: write_npy / read_npy work on real files, and unreadable paths are refused.
  TempDir dir;
  HostTensor tensor = make_tensor<double>(STITCH_FLOAT64, {3}, {1.5, -2.25, 1e300});
  write_npy(dir.file("t.npy"), tensor);
  HostTensor back = read_npy(dir.file("t.npy"));
  CHECK(back.bytes == tensor.bytes);
  CHECK_THROWS_WITH(read_npy(dir.file("missing.npy")), Catch::Contains("cannot open"));
  CHECK_THROWS_WITH(read_npy(dir.path().string()), Catch::Contains("not a regular file"));
}

TEST_CASE("bfloat16 npy files are read and written as ml_dtypes saves them", "[run][npy]") {
  // Proves: the '<V2' file numpy.save wrote for an ml_dtypes.bfloat16 array parses to its
  // bit patterns and values, and the writer reproduces that file byte for byte.
  HostTensor bf = parse_npy(kMlDtypesBf16, "bf16.npy");
  CHECK(describe_tensor(bf) == "bfloat16[2,3]");
  CHECK(values_of<uint16_t>(bf) ==
        std::vector<uint16_t>{0x3f80, 0xc020, 0x4040, 0x3c00, 0x8000, 0x477f});
  std::vector<float> values;
  for (uint16_t bits : values_of<uint16_t>(bf))
    values.push_back(bfloat16_to_float(bits));
  CHECK(values == std::vector<float>{1.0f, -2.5f, 3.0f, 0.0078125f, -0.0f, 65280.0f});
  CHECK(npy_descr(STITCH_BFLOAT16) == "<V2");
  CHECK(encode_npy(bf) == kMlDtypesBf16);
}

TEST_CASE("a 2-byte void npy that is not ml_dtypes' bfloat16 is refused", "[run][npy]") {
  // Proves: numpy's own opaque '|V2' (what numpy.load hands back for a bfloat16 file, saved
  // again without ml_dtypes) is not guessed to be bfloat16, and the message says what is.
  std::string data = literal_bytes("\x80\x3f");
  CHECK_THAT(
      npy_error(npy_with_header("{'descr': '|V2', 'fortran_order': False, 'shape': (1,)}", data)),
      Catch::Contains("'|V2' is numpy's opaque 2-byte type, not a number; a bfloat16 "
                      "array saved with ml_dtypes has the descr '<V2'"));
  CHECK_THAT(npy_error(npy_with_header("{'descr': '<V4', 'fortran_order': False, 'shape': (1,)}",
                                       data + data)),
             Catch::Contains("dtype '<V4' is not supported"));
}
