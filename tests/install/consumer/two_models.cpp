// two_models: runs two stitchc libraries linked into one program, each through its own
// prefixed C API, on random inputs, and checks each result against the model's math computed
// here in double precision:
//   softmax (regional_softmax.onnx): y = Softmax(0.125 * x) along the last axis
//   vec4    (local_vec4.onnx):       z = Tanh(0.5 * (x + y)) * x
// Also checks what each library says about its build. Exit 0 when all holds.
#define STITCH_SYMBOL_PREFIX softmax
#include <stitch/stitch_prefixed.h>
#undef STITCH_SYMBOL_PREFIX
#define STITCH_SYMBOL_PREFIX vec4
#include <stitch/stitch_prefixed.h>
#undef STITCH_SYMBOL_PREFIX

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

namespace {

int failures = 0;

void expect(bool ok, const std::string& what) {
  if (!ok) {
    std::fprintf(stderr, "two_models: FAILED: %s\n", what.c_str());
    ++failures;
  }
}

std::vector<float> random_values(size_t count, unsigned seed) {
  std::mt19937 engine(seed);
  std::uniform_real_distribution<float> uniform(-4.0f, 4.0f);
  std::vector<float> values(count);
  for (float& v : values)
    v = uniform(engine);
  return values;
}

stitch_tensor tensor_for(const stitch_tensor_info& info, std::vector<float>& data) {
  return {data.data(), STITCH_FLOAT32, info.rank, info.dims, data.size() * sizeof(float)};
}

size_t elements(const stitch_tensor_info& info) {
  size_t count = 1;
  for (int32_t d = 0; d < info.rank; ++d)
    count *= static_cast<size_t>(info.dims[d]);
  return count;
}

void compare(const std::vector<float>& got, const std::vector<double>& want, const char* model) {
  double worst = 0;
  for (size_t i = 0; i < got.size(); ++i)
    worst = std::max(worst, std::fabs(got[i] - want[i]) / (1e-6 + std::fabs(want[i])));
  expect(worst < 1e-4, std::string(model) + ": largest relative error " + std::to_string(worst));
}

void run_softmax() {
  stitch_build_info build{};
  expect(softmax_library_build_info(&build) == STITCH_OK, "softmax_library_build_info");
  expect(std::string(build.model_file) == "regional_softmax.onnx", "softmax: model_file");
  expect(std::string(build.symbol_prefix) == "softmax", "softmax: symbol_prefix");
  expect(std::string(build.planner) == "greedy", "softmax: planner (ARGS --planner greedy)");
  expect(std::strlen(build.model_sha256) == 64, "softmax: model_sha256");
  expect(std::string(softmax_target()) == "host", "softmax: target");

  stitch_model* model = nullptr;
  stitch_context* context = nullptr;
  expect(softmax_model_create(&model) == STITCH_OK, "softmax_model_create");
  expect(softmax_context_create(model, &context) == STITCH_OK, "softmax_context_create");
  stitch_tensor_info in{}, out{};
  softmax_model_input(model, 0, &in);
  softmax_model_output(model, 0, &out);
  expect(in.rank == 2 && in.dims[1] == 256, "softmax: input x is [rows, 256]");
  std::vector<float> x = random_values(elements(in), 1), y(elements(out));
  stitch_tensor input = tensor_for(in, x), output = tensor_for(out, y);
  const stitch_status status = softmax_run(context, &input, 1, &output, 1, nullptr);
  expect(status == STITCH_OK, std::string("softmax_run: ") + softmax_last_error());

  const size_t rows = static_cast<size_t>(in.dims[0]), cols = static_cast<size_t>(in.dims[1]);
  std::vector<double> want(x.size());
  for (size_t r = 0; r < rows; ++r) {
    double peak = -INFINITY, sum = 0;
    for (size_t c = 0; c < cols; ++c)
      peak = std::max(peak, 0.125 * x[r * cols + c]);
    for (size_t c = 0; c < cols; ++c)
      sum += want[r * cols + c] = std::exp(0.125 * x[r * cols + c] - peak);
    for (size_t c = 0; c < cols; ++c)
      want[r * cols + c] /= sum;
  }
  compare(y, want, "softmax");
  softmax_context_destroy(context);
  softmax_model_destroy(model);
}

void run_vec4() {
  stitch_build_info build{};
  expect(vec4_library_build_info(&build) == STITCH_OK, "vec4_library_build_info");
  expect(std::string(build.model_file) == "local_vec4.onnx", "vec4: model_file");
  expect(std::string(build.symbol_prefix) == "vec4", "vec4: symbol_prefix");
  expect(std::string(build.planner) == "ilp", "vec4: planner (the default)");

  stitch_model* model = nullptr;
  stitch_context* context = nullptr;
  expect(vec4_model_create(&model) == STITCH_OK, "vec4_model_create");
  expect(vec4_context_create(model, &context) == STITCH_OK, "vec4_context_create");
  stitch_tensor_info x_info{}, y_info{}, z_info{};
  vec4_model_input(model, 0, &x_info);
  vec4_model_input(model, 1, &y_info);
  vec4_model_output(model, 0, &z_info);
  std::vector<float> x = random_values(elements(x_info), 2), y = random_values(elements(y_info), 3);
  std::vector<float> z(elements(z_info));
  stitch_tensor inputs[] = {tensor_for(x_info, x), tensor_for(y_info, y)};
  stitch_tensor output = tensor_for(z_info, z);
  const stitch_status status = vec4_run(context, inputs, 2, &output, 1, nullptr);
  expect(status == STITCH_OK, std::string("vec4_run: ") + vec4_last_error());
  std::vector<double> want(z.size());
  for (size_t i = 0; i < z.size(); ++i)
    want[i] = std::tanh(0.5 * (double(x[i]) + y[i])) * x[i];
  compare(z, want, "vec4");
  // A misuse is reported by this library alone: each library keeps its own last error.
  expect(vec4_run(context, inputs, 1, &output, 1, nullptr) != STITCH_OK,
         "vec4_run with 1 of 2 inputs fails");
  expect(std::string(vec4_last_error()).rfind("vec4_run: ", 0) == 0,
         std::string("vec4_last_error() names the failure as vec4_run: ") + vec4_last_error());
  expect(softmax_last_error()[0] == '\0', "softmax_last_error() stays empty");
  vec4_context_destroy(context);
  vec4_model_destroy(model);
}

} // namespace

int main() {
  run_softmax();
  run_vec4();
  if (failures == 0) std::printf("two_models: both models ran and matched\n");
  return failures == 0 ? 0 : 1;
}
