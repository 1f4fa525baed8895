// test_model_runtime_symbols.cpp: API versions 4 and 5, symbolic dims, on the affine model's
// symbolic variant (affine::kSymbolicRows: x float32[rows,8] with rows in 1..4; y [rows,8], z
// [rows]): the symbols and which input dims they are, outputs' shapes for given inputs, runs at
// every shape in range against the reference, the errors for a dim out of range, and contexts
// laid out for part of the range.
#include "model_runtime_test_support.h"

#include <atomic>
#include <cmath>
#include <thread>

using namespace model_runtime_test;

namespace {

// Switches the affine library to its symbolic variant for the test's duration.
struct SymbolicVariant {
  SymbolicVariant() { affine_model_set_fault(affine::kSymbolicRows); }
  ~SymbolicVariant() { affine_model_set_fault(affine::kNoFault); }
};

// One run at `rows` rows of x (its first rows * 8 values); y and z as the run left them.
stitch_status run_rows(stitch_context* context, const std::vector<float>& x, int rows,
                       std::vector<float>& y, std::vector<float>& z) {
  const auto elements = static_cast<std::size_t>(rows) * affine::kCols;
  AlignedBuffer input(affine::kInputBytes), y_buffer(affine::kInputBytes),
      z_buffer(affine::kSumBytes);
  std::memcpy(input.floats(), x.data(), elements * sizeof(float));
  const int64_t x_dims[] = {rows, affine::kCols};
  const int64_t z_dims[] = {rows};
  const stitch_tensor inputs[] = {
      {input.floats(), STITCH_FLOAT32, 2, x_dims, elements * sizeof(float)}};
  const stitch_tensor outputs[] = {
      {y_buffer.floats(), STITCH_FLOAT32, 2, x_dims, elements * sizeof(float)},
      {z_buffer.floats(), STITCH_FLOAT32, 1, z_dims, static_cast<uint64_t>(rows) * sizeof(float)}};
  const stitch_status status = stitch_run(context, inputs, 1, outputs, 2, nullptr);
  y.assign(y_buffer.floats(), y_buffer.floats() + elements);
  z.assign(z_buffer.floats(), z_buffer.floats() + rows);
  return status;
}

} // namespace

// Proves: the model lists its symbol with its range; the input's symbolic dim is -1 in its
// info, the symbol's index in stitch_model_input_symbols; the info's bytes are the maxima's;
// a library of fixed shapes has no symbols and each input dim is -1 there.
TEST_CASE("model runtime: symbols and the dims they stand for", "[model_runtime]") {
  {
    OwnedModel fixed;
    size_t count = 99;
    require_ok(stitch_model_num_symbols(fixed.get(), &count));
    REQUIRE(count == 0);
    int32_t symbols[STITCH_MAX_RANK] = {7, 7};
    require_ok(stitch_model_input_symbols(fixed.get(), 0, symbols));
    REQUIRE(symbols[0] == -1);
    REQUIRE(symbols[1] == -1);
  }
  SymbolicVariant variant;
  OwnedModel model;
  size_t count = 0;
  require_ok(stitch_model_num_symbols(model.get(), &count));
  REQUIRE(count == 1);
  stitch_symbol_info symbol{};
  require_ok(stitch_model_symbol(model.get(), 0, &symbol));
  REQUIRE(std::string(symbol.name) == "rows");
  REQUIRE(symbol.min == 1);
  REQUIRE(symbol.max == affine::kRows);
  require_failure(stitch_model_symbol(model.get(), 1, &symbol), STITCH_ERROR_INVALID_ARGUMENT,
                  "stitch_model_symbol", "symbol index 1 is out of range");
  stitch_tensor_info info{};
  require_ok(stitch_model_input(model.get(), 0, &info));
  REQUIRE(info.dims[0] == -1);
  REQUIRE(info.dims[1] == affine::kCols);
  REQUIRE(info.bytes == affine::kInputBytes);
  int32_t symbols[STITCH_MAX_RANK] = {7, 7};
  require_ok(stitch_model_input_symbols(model.get(), 0, symbols));
  REQUIRE(symbols[0] == 0);
  REQUIRE(symbols[1] == -1);
  require_ok(stitch_model_output(model.get(), 1, &info));
  REQUIRE(info.rank == 1);
  REQUIRE(info.dims[0] == -1);
  int32_t output_symbols[STITCH_MAX_RANK] = {7, 7};
  require_ok(stitch_model_output_symbols(model.get(), 0, output_symbols));
  REQUIRE(output_symbols[0] == 0);
  REQUIRE(output_symbols[1] == -1);
  require_failure(stitch_model_output_symbols(model.get(), 2, output_symbols),
                  STITCH_ERROR_INVALID_ARGUMENT, "stitch_model_output_symbols", "out of range");
}

// Proves: stitch_model_output_shapes gives each output's dims and bytes for the inputs' dims
// (their data unread), and refuses what a run refuses: a dim outside its range, naming the
// symbol and the range, and a wrong fixed dim.
TEST_CASE("model runtime: outputs' shapes for given inputs", "[model_runtime]") {
  SymbolicVariant variant;
  OwnedModel model;
  const int64_t dims[] = {3, affine::kCols};
  const stitch_tensor inputs[] = {{nullptr, STITCH_FLOAT32, 2, dims, 0}};
  stitch_tensor_info outputs[2]{};
  require_ok(stitch_model_output_shapes(model.get(), inputs, 1, outputs, 2));
  REQUIRE(outputs[0].rank == 2);
  REQUIRE(outputs[0].dims[0] == 3);
  REQUIRE(outputs[0].dims[1] == affine::kCols);
  REQUIRE(outputs[0].bytes == 3 * affine::kCols * sizeof(float));
  REQUIRE(outputs[1].dims[0] == 3);
  REQUIRE(outputs[1].bytes == 3 * sizeof(float));
  REQUIRE(std::string(outputs[1].name) == "z");

  const int64_t too_many[] = {affine::kRows + 1, affine::kCols};
  const stitch_tensor big[] = {{nullptr, STITCH_FLOAT32, 2, too_many, 0}};
  require_failure(stitch_model_output_shapes(model.get(), big, 1, outputs, 2),
                  STITCH_ERROR_SHAPE_MISMATCH, "stitch_model_output_shapes",
                  "input 0 ('x'): shape is [5,8] but dim 0 ('rows') must be in 1..4");
  const int64_t none[] = {0, affine::kCols};
  const stitch_tensor empty[] = {{nullptr, STITCH_FLOAT32, 2, none, 0}};
  require_failure(stitch_model_output_shapes(model.get(), empty, 1, outputs, 2),
                  STITCH_ERROR_SHAPE_MISMATCH, "stitch_model_output_shapes",
                  "dim 0 ('rows') must be in 1..4");
  const int64_t wrong_cols[] = {2, affine::kCols + 1};
  const stitch_tensor wide[] = {{nullptr, STITCH_FLOAT32, 2, wrong_cols, 0}};
  require_failure(stitch_model_output_shapes(model.get(), wide, 1, outputs, 2),
                  STITCH_ERROR_SHAPE_MISMATCH, "stitch_model_output_shapes",
                  "input 0 ('x'): shape is [2,9] but the model expects float32[2,8]");
  require_failure(stitch_model_output_shapes(model.get(), inputs, 1, outputs, 1),
                  STITCH_ERROR_INVALID_ARGUMENT, "stitch_model_output_shapes",
                  "num_outputs is 1 but the model has 2 outputs");
}

// Proves: one context runs every shape in range, in any order and again, each matching the
// reference bitwise and writing nothing past its outputs' actual size; outputs sized for a
// smaller shape than the inputs' are refused.
TEST_CASE("model runtime: one context runs every shape in range", "[model_runtime]") {
  SymbolicVariant variant;
  OwnedModel model;
  OwnedContext context(model.get());
  const std::vector<float> x = random_matrix(11);
  for (int rows : {4, 1, 3, 2, 4, 1}) {
    INFO("rows " << rows);
    const auto elements = static_cast<std::size_t>(rows) * affine::kCols;
    AlignedBuffer input(affine::kInputBytes), y(affine::kInputBytes), z(affine::kSumBytes);
    std::memcpy(input.floats(), x.data(), elements * sizeof(float));
    std::memset(y.floats(), 0xFF, affine::kInputBytes); // NaN: an unwritten element shows
    std::memset(z.floats(), 0xFF, affine::kSumBytes);
    const int64_t x_dims[] = {rows, affine::kCols};
    const int64_t z_dims[] = {rows};
    const stitch_tensor inputs[] = {
        {input.floats(), STITCH_FLOAT32, 2, x_dims, elements * sizeof(float)}};
    const stitch_tensor outputs[] = {
        {y.floats(), STITCH_FLOAT32, 2, x_dims, elements * sizeof(float)},
        {z.floats(), STITCH_FLOAT32, 1, z_dims, static_cast<uint64_t>(rows) * sizeof(float)}};
    require_ok(stitch_run(context.get(), inputs, 1, outputs, 2, nullptr));
    const AffineOutputs reference = reference_outputs(x); // rows are independent
    REQUIRE(std::memcmp(y.floats(), reference.y.data(), elements * sizeof(float)) == 0);
    REQUIRE(std::memcmp(z.floats(), reference.z.data(), rows * sizeof(float)) == 0);
    for (std::size_t i = elements; i < affine::kRows * affine::kCols; ++i)
      REQUIRE(std::isnan(y.floats()[i]));
    for (int r = rows; r < affine::kRows; ++r)
      REQUIRE(std::isnan(z.floats()[r]));
  }
  // y given as [2,8] for an x of [3,8]: the output's shape follows the input's.
  AlignedBuffer input(affine::kInputBytes), y(affine::kInputBytes), z(affine::kSumBytes);
  const int64_t x_dims[] = {3, affine::kCols};
  const int64_t y_dims[] = {2, affine::kCols};
  const int64_t z_dims[] = {3};
  const stitch_tensor inputs[] = {{input.floats(), STITCH_FLOAT32, 2, x_dims, affine::kInputBytes}};
  const stitch_tensor outputs[] = {{y.floats(), STITCH_FLOAT32, 2, y_dims, affine::kInputBytes},
                                   {z.floats(), STITCH_FLOAT32, 1, z_dims, affine::kSumBytes}};
  require_failure(stitch_run(context.get(), inputs, 1, outputs, 2, nullptr),
                  STITCH_ERROR_SHAPE_MISMATCH, "stitch_run",
                  "output 0 ('y'): shape is [2,8] but the model expects float32[3,8]");
}

// Proves: contexts of one model running different shapes at the same time (each thread its own
// context, its shape changing every run) give bitwise what serial runs give.
TEST_CASE("model runtime: contexts run different shapes at once", "[model_runtime]") {
  SymbolicVariant variant;
  OwnedModel model;
  constexpr int kThreads = 4, kRuns = 24;
  auto rows_of = [](int t, int r) { return 1 + (t + r) % affine::kRows; };
  std::vector<std::vector<std::vector<float>>> serial_y(kThreads), serial_z(kThreads);
  {
    OwnedContext context(model.get());
    for (int t = 0; t < kThreads; ++t) {
      serial_y[t].resize(kRuns);
      serial_z[t].resize(kRuns);
      for (int r = 0; r < kRuns; ++r)
        require_ok(run_rows(context.get(), random_matrix(static_cast<uint32_t>(100 * t + r)),
                            rows_of(t, r), serial_y[t][r], serial_z[t][r]));
    }
  }
  std::vector<std::string> failures(kThreads);
  std::atomic<int> ready{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      stitch_context* context = nullptr;
      const stitch_status created = stitch_context_create(model.get(), &context);
      if (created != STITCH_OK) failures[t] = stitch_last_error();
      ready.fetch_add(1);
      while (ready.load() < kThreads)
        std::this_thread::yield();
      if (created != STITCH_OK) return;
      std::vector<float> y, z;
      for (int r = 0; r < kRuns && failures[t].empty(); ++r) {
        if (run_rows(context, random_matrix(static_cast<uint32_t>(100 * t + r)), rows_of(t, r), y,
                     z) != STITCH_OK)
          failures[t] = stitch_last_error();
        else if (y != serial_y[t][r] || z != serial_z[t][r])
          failures[t] = "run " + std::to_string(r) + " differs from the serial run";
      }
      stitch_context_destroy(context);
    });
  for (std::thread& thread : threads)
    thread.join();
  for (int t = 0; t < kThreads; ++t) {
    INFO("thread " << t);
    CHECK(failures[t] == "");
  }
}

// Proves (API version 5): a context for part of the range lays its arena out for its maxima,
// so that it needs less memory (the symbolic variant's arena: 1280 bytes at rows 4, 512 at rows
// 1, 768 at rows 2), runs every shape up to them bitwise as a context for the model's maxima does,
// on its own memory or the caller's, and refuses a run above them; the model's maxima give what
// stitch_model_context_memory gives; bad maxima are refused with their reason.
TEST_CASE("model runtime: contexts for part of the range", "[model_runtime]") {
  SymbolicVariant variant;
  OwnedModel model;
  uint64_t full = 0, at[5] = {};
  require_ok(stitch_model_context_memory(model.get(), &full));
  for (int64_t rows = 1; rows <= affine::kRows; ++rows)
    require_ok(stitch_model_context_memory_for(model.get(), &rows, 1, &at[rows]));
  REQUIRE(at[affine::kRows] == full);
  REQUIRE(full - at[1] == affine::kSymbolicArenaBytes - 512);
  REQUIRE(full - at[2] == affine::kSymbolicArenaBytes - 768);

  const std::vector<float> x = random_matrix(5);
  OwnedContext reference_context(model.get());
  const int64_t two = 2;
  stitch_context* own = nullptr;
  require_ok(stitch_context_create_for(model.get(), &two, 1, nullptr, 0, &own));
  std::unique_ptr<void, decltype(&std::free)> block(std::aligned_alloc(256, at[2]), &std::free);
  stitch_context* borrowed = nullptr;
  require_ok(stitch_context_create_for(model.get(), &two, 1, block.get(), at[2], &borrowed));
  for (int rows : {2, 1, 2}) {
    INFO("rows " << rows);
    std::vector<float> y, z, y_own, z_own, y_borrowed, z_borrowed;
    require_ok(run_rows(reference_context.get(), x, rows, y, z));
    require_ok(run_rows(own, x, rows, y_own, z_own));
    require_ok(run_rows(borrowed, x, rows, y_borrowed, z_borrowed));
    REQUIRE(y_own == y);
    REQUIRE(z_own == z);
    REQUIRE(y_borrowed == y);
    REQUIRE(z_borrowed == z);
  }
  std::vector<float> y, z;
  require_failure(run_rows(own, x, 3, y, z), STITCH_ERROR_SHAPE_MISMATCH, "stitch_run",
                  "input 0 ('x') gives 'rows' 3, above 2, the most this context serves");
  stitch_context_destroy(own);
  stitch_context_destroy(borrowed);

  stitch_context* context = nullptr;
  require_failure(
      stitch_context_create_for(model.get(), &two, 1, block.get(), at[2] - 256, &context),
      STITCH_ERROR_INVALID_ARGUMENT, "stitch_context_create_for",
      "(stitch_model_context_memory_for)");
  REQUIRE(context == nullptr);
  const int64_t five = 5, zero = 0;
  uint64_t bytes = 0;
  require_failure(stitch_model_context_memory_for(model.get(), &five, 1, &bytes),
                  STITCH_ERROR_INVALID_ARGUMENT, "stitch_model_context_memory_for",
                  "max_symbols[0] ('rows') is 5, outside its range 1..4");
  require_failure(stitch_context_create_for(model.get(), &zero, 1, nullptr, 0, &context),
                  STITCH_ERROR_INVALID_ARGUMENT, "stitch_context_create_for",
                  "max_symbols[0] ('rows') is 0, outside its range 1..4");
  require_failure(stitch_model_context_memory_for(model.get(), nullptr, 1, &bytes),
                  STITCH_ERROR_INVALID_ARGUMENT, "stitch_model_context_memory_for",
                  "max_symbols is null");
  require_failure(stitch_model_context_memory_for(model.get(), &two, 0, &bytes),
                  STITCH_ERROR_INVALID_ARGUMENT, "stitch_model_context_memory_for",
                  "num_symbols is 0 but the model has 1 symbolic dim");
}

// Proves: a model of fixed shapes takes no maxima, and then gives the context
// stitch_context_create gives; maxima it does not have are refused.
TEST_CASE("model runtime: contexts for part of the range of a fixed model", "[model_runtime]") {
  OwnedModel model;
  uint64_t full = 0, bytes = 0;
  require_ok(stitch_model_context_memory(model.get(), &full));
  require_ok(stitch_model_context_memory_for(model.get(), nullptr, 0, &bytes));
  REQUIRE(bytes == full);
  stitch_context* context = nullptr;
  require_ok(stitch_context_create_for(model.get(), nullptr, 0, nullptr, 0, &context));
  const std::vector<float> x = random_matrix(3);
  std::vector<float> y, z;
  require_ok(run_rows(context, x, affine::kRows, y, z));
  const AffineOutputs reference = reference_outputs(x);
  REQUIRE(y == reference.y);
  REQUIRE(z == reference.z);
  stitch_context_destroy(context);
  const int64_t two = 2;
  require_failure(stitch_model_context_memory_for(model.get(), &two, 1, &bytes),
                  STITCH_ERROR_INVALID_ARGUMENT, "stitch_model_context_memory_for",
                  "num_symbols is 1 but the model has 0 symbolic dims");
}
