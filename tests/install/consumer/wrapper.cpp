// wrapper: the C++ wrapper (stitch.hpp) over a library with the plain stitch_ names, linked
// beside the two prefixed ones: inputs found by name, the build info, a context in memory the
// program provides, a run without the CUDA Graph; z = Tanh(0.5 * (x + y)) * x checked in double.
#include <stitch/stitch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

int main() {
  try {
    stitch::Model model;
    const stitch_build_info build = stitch::Model::build_info();
    if (std::string(build.symbol_prefix) != "stitch" ||
        std::string(build.model_file) != "local_vec4.onnx")
      throw std::runtime_error("unexpected build info");
    const std::vector<stitch::TensorInfo> inputs = model.inputs();
    const size_t x_index = model.input_index("x"), y_index = model.input_index("y");
    const stitch::TensorInfo& info = inputs.at(x_index);
    const auto rank = static_cast<int32_t>(info.dims.size());
    size_t count = 1;
    for (int64_t d : info.dims)
      count *= static_cast<size_t>(d);

    // On the host target, "device memory" is host memory.
    const uint64_t bytes = model.context_memory();
    std::unique_ptr<void, void (*)(void*)> memory(
        std::aligned_alloc(256, (bytes + 255) / 256 * 256), &std::free);
    stitch::Context context(model, memory.get(), bytes);

    std::mt19937 engine(5);
    std::uniform_real_distribution<float> uniform(-3.0f, 3.0f);
    std::vector<float> x(count), y(count), z(count);
    for (size_t i = 0; i < count; ++i) {
      x[i] = uniform(engine);
      y[i] = uniform(engine);
    }
    std::vector<stitch_tensor> in(2);
    in[x_index] = {x.data(), STITCH_FLOAT32, rank, info.dims.data(), count * sizeof(float)};
    in[y_index] = {y.data(), STITCH_FLOAT32, rank, info.dims.data(), count * sizeof(float)};
    const std::vector<stitch_tensor> out = {
        {z.data(), STITCH_FLOAT32, rank, info.dims.data(), count * sizeof(float)}};
    context.run(in, out, nullptr, stitch_run_options{STITCH_RUN_NO_GRAPH});
    double worst = 0;
    for (size_t i = 0; i < count; ++i) {
      const double want = std::tanh(0.5 * (double(x[i]) + y[i])) * x[i];
      worst = std::max(worst, std::fabs(z[i] - want) / (1e-6 + std::fabs(want)));
    }
    if (worst > 1e-4) throw std::runtime_error("largest relative error " + std::to_string(worst));
    std::printf("wrapper: stitch.hpp ran local_vec4 in caller memory\n");
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "wrapper: FAILED: %s\n", e.what());
    return 1;
  }
}
