// The smaller pieces of stitch-run: random inputs (reproducible, in range, never all
// zeros), safe output file names, latency statistics, 16-bit float conversions, NAME=FILE
// splitting and test-data folder listing.
#include <catch2/catch.hpp>

#include <cmath>
#include <fstream>
#include <set>

#include "driver/run/output_files.h"
#include "driver/run/random_tensor.h"
#include "driver/run/run_error.h"
#include "driver/run/run_tool.h"
#include "driver/run/tensor_sources.h"
#include "run_test_support.h"

using namespace stitch::run;
using namespace stitch::run::testing;

TEST_CASE("random floats are uniform from -1 up to 1 and reproducible from the seed",
          "[run][random]") {
  // Proves: same (seed, index) gives the same bytes; another seed or index gives others;
  // every value lies in [-1, 1) for each float type; values are spread, not zeros.
  for (stitch_dtype dtype : {STITCH_FLOAT32, STITCH_FLOAT64, STITCH_FLOAT16, STITCH_BFLOAT16}) {
    INFO(dtype_name(dtype));
    HostTensor a = random_tensor(dtype, {64, 64}, RandomSpec{7, 4}, 0);
    CHECK(a.bytes == random_tensor(dtype, {64, 64}, RandomSpec{7, 4}, 0).bytes);
    CHECK(a.bytes != random_tensor(dtype, {64, 64}, RandomSpec{8, 4}, 0).bytes);
    CHECK(a.bytes != random_tensor(dtype, {64, 64}, RandomSpec{7, 4}, 1).bytes);
    double low = 1, high = -1, sum = 0;
    for (uint64_t i = 0; i < a.element_count(); ++i) {
      double v = element_as_double(a, i);
      low = std::min(low, v);
      high = std::max(high, v);
      sum += v;
    }
    CHECK(low >= -1.0);
    CHECK(high < 1.0);
    CHECK(low < -0.9);
    CHECK(high > 0.9);
    CHECK(std::fabs(sum / static_cast<double>(a.element_count())) < 0.1);
  }
}

TEST_CASE("random integers and bools stay in their small ranges", "[run][random]") {
  // Proves: integers are drawn from [0, int_max] and take several values; bools are 0/1
  // with both present.
  for (stitch_dtype dtype : {STITCH_INT8, STITCH_UINT8, STITCH_INT16, STITCH_UINT16, STITCH_INT32,
                             STITCH_UINT32, STITCH_INT64, STITCH_UINT64}) {
    INFO(dtype_name(dtype));
    HostTensor t = random_tensor(dtype, {1000}, RandomSpec{0, 4}, 3);
    std::set<double> seen;
    for (uint64_t i = 0; i < t.element_count(); ++i)
      seen.insert(element_as_double(t, i));
    CHECK(*seen.begin() == 0.0);
    CHECK(*seen.rbegin() == 4.0);
    CHECK(seen.size() == 5);
  }
  HostTensor wide = random_tensor(STITCH_INT8, {1000}, RandomSpec{0, 100000}, 0);
  for (uint64_t i = 0; i < wide.element_count(); ++i)
    CHECK(element_as_double(wide, i) >= 0.0);
  HostTensor bools = random_tensor(STITCH_BOOL, {1000}, RandomSpec{}, 0);
  std::set<uint8_t> bool_values(bools.bytes.begin(), bools.bytes.end());
  CHECK(bool_values == std::set<uint8_t>{0, 1});
}

TEST_CASE("output names become safe and distinct file names", "[run][names]") {
  // Proves: separators, dots, control bytes and overlong names cannot leave the output
  // folder or hide the file, and names that collide after sanitizing stay distinct.
  CHECK(safe_file_stem("y") == "y");
  CHECK(safe_file_stem("positive/mask:0") == "positive_mask_0");
  CHECK(safe_file_stem("../../etc/passwd") == "_._.._etc_passwd");
  CHECK(safe_file_stem("..") == "_.");
  CHECK(safe_file_stem("") == "output");
  CHECK(safe_file_stem(std::string("a\0b\n", 4)) == "a_b_");
  CHECK(safe_file_stem(std::string(1000, 'x')).size() == 200);
  std::vector<std::string> files = output_file_names({"a/b", "a_b", "a:b", "y"});
  CHECK(files == std::vector<std::string>{"a_b.npy", "a_b_1.npy", "a_b_2.npy", "y.npy"});
  CHECK(display_name(std::string("x\ty\\", 4)) == "x\\x09y\\x5c");
}

TEST_CASE("latency statistics give the median and nearest-rank p90", "[run][timing]") {
  // Proves: the median averages the middle pair for even counts; p90 is the smallest
  // latency at or above 90% of the runs.
  LatencyStats odd = latency_stats({5, 1, 3});
  CHECK(odd.median_ms == 3);
  CHECK(odd.p90_ms == 5);
  CHECK(odd.min_ms == 1);
  CHECK(odd.mean_ms == 3);
  std::vector<double> ten = {10, 9, 8, 7, 6, 5, 4, 3, 2, 1};
  LatencyStats stats = latency_stats(ten);
  CHECK(stats.median_ms == 5.5);
  CHECK(stats.p90_ms == 9);
  std::vector<double> hundred;
  for (int i = 1; i <= 100; ++i)
    hundred.push_back(i);
  CHECK(latency_stats(hundred).p90_ms == 90);
  CHECK(latency_stats({2.5}).p90_ms == 2.5);
}

TEST_CASE("16-bit float conversions round to nearest even and keep specials", "[run][half]") {
  // Proves: exact values survive, halfway cases round to even, overflow becomes inf,
  // subnormals are kept, and NaN stays NaN.
  for (float v : {0.0f, 1.0f, -2.0f, 0.5f, 65504.0f, 6.1035156e-05f, 5.9604645e-08f})
    CHECK(half_to_float(float_to_half(v)) == v);
  CHECK(float_to_half(1.0f + 1.0f / 2048) == 0x3c00); // halfway, rounds to even (down)
  CHECK(float_to_half(1.0f + 3.0f / 2048) == 0x3c02); // halfway, rounds to even (up)
  CHECK(float_to_half(65520.0f) == 0x7c00);
  CHECK(std::isnan(half_to_float(float_to_half(NAN))));
  CHECK(half_to_float(0xfc00) == -INFINITY);
  CHECK(bfloat16_to_float(float_to_bfloat16(1.0f)) == 1.0f);
  CHECK(float_to_bfloat16(1.0f + 1.0f / 256) == 0x3f80); // halfway, rounds to even
  CHECK(std::isnan(bfloat16_to_float(float_to_bfloat16(NAN))));
}

TEST_CASE("NAME=FILE arguments split at a '=' that ends a model name", "[run][args]") {
  // Proves: names holding '=' work, unknown names list the model's names, and a missing
  // file is refused.
  std::vector<TensorInfo> infos = {{"x", STITCH_FLOAT32, {2}, 8}, {"a=b", STITCH_FLOAT32, {2}, 8}};
  CHECK(split_name_and_file("x=in=1.npy", infos, "--input", "input") ==
        std::pair<size_t, std::string>{0, "in=1.npy"});
  CHECK(split_name_and_file("a=b=f.npy", infos, "--input", "input") ==
        std::pair<size_t, std::string>{1, "f.npy"});
  CHECK_THROWS_WITH(split_name_and_file("z=f.npy", infos, "--input", "input"),
                    Catch::Contains("names no input of the model; its inputs are: 'x', 'a=b'"));
  CHECK_THROWS_WITH(split_name_and_file("x", infos, "--input", "input"),
                    Catch::Contains("is not NAME=FILE"));
  CHECK_THROWS_WITH(split_name_and_file("x=", infos, "--input", "input"),
                    Catch::Contains("names no file"));
}

TEST_CASE("test-data folders list input_N.pb files in order without gaps", "[run][args]") {
  // Proves: files are ordered by N numerically (input_10 after input_9), and a gap is refused.
  TempDir dir;
  for (int i = 0; i <= 10; ++i)
    std::ofstream(dir.file("input_" + std::to_string(i) + ".pb"));
  std::ofstream(dir.file("output_0.pb"));
  std::ofstream(dir.file("input_x.pb"));
  std::vector<std::string> inputs = test_data_files(dir.path().string(), "input");
  REQUIRE(inputs.size() == 11);
  CHECK(inputs[10] == dir.file("input_10.pb"));
  CHECK(test_data_files(dir.path().string(), "output").size() == 1);
  std::filesystem::remove(dir.file("input_3.pb"));
  CHECK_THROWS_WITH(test_data_files(dir.path().string(), "input"),
                    Catch::Contains("has input_4.pb but no input_3.pb"));
  CHECK_THROWS_WITH(test_data_files(dir.file("nothing"), "input"),
                    Catch::Contains("is not a folder"));
}
