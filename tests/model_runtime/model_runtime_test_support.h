// model_runtime_test_support.h: what the model runtime tests share: owning wrappers around the
// C API's handles, aligned host buffers, random inputs, the status checks, and one run of the
// affine model (affine_model.h) through stitch_run.
#pragma once

#include "affine_model.h"

#include "stitch/stitch.h"

#include <catch2/catch.hpp>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

namespace model_runtime_test {

// Requires `status` and that the calling thread's last error contains `fragment` and starts with
// the failing function's name.
inline void require_failure(stitch_status status, stitch_status expected, const char* function,
                            const std::string& fragment) {
  const std::string message = stitch_last_error();
  INFO("status " << stitch_status_name(status) << ", last error: " << message);
  REQUIRE(status == expected);
  REQUIRE(message.rfind(std::string(function) + ": ", 0) == 0);
  REQUIRE_THAT(message, Catch::Matchers::Contains(fragment));
}

inline void require_ok(stitch_status status) {
  INFO("status " << stitch_status_name(status) << ", last error: " << stitch_last_error());
  REQUIRE(status == STITCH_OK);
}

// A created model, destroyed at scope exit.
class OwnedModel {
public:
  OwnedModel() { require_ok(stitch_model_create(&model_)); }
  ~OwnedModel() {
    if (model_ != nullptr) stitch_model_destroy(model_);
  }
  OwnedModel(const OwnedModel&) = delete;
  OwnedModel& operator=(const OwnedModel&) = delete;
  stitch_model* get() const { return model_; }

private:
  stitch_model* model_ = nullptr;
};

// A context of a model, destroyed at scope exit.
class OwnedContext {
public:
  explicit OwnedContext(stitch_model* model) {
    require_ok(stitch_context_create(model, &context_));
  }
  ~OwnedContext() {
    if (context_ != nullptr) stitch_context_destroy(context_);
  }
  OwnedContext(const OwnedContext&) = delete;
  OwnedContext& operator=(const OwnedContext&) = delete;
  stitch_context* get() const { return context_; }

private:
  stitch_context* context_ = nullptr;
};

// Host memory aligned to 64 bytes, with slack so that a test can hand out a shifted pointer.
class AlignedBuffer {
public:
  explicit AlignedBuffer(std::size_t bytes)
      : memory_(std::aligned_alloc(64, (bytes + 64 + 63) / 64 * 64), &std::free) {
    std::memset(memory_.get(), 0, (bytes + 64 + 63) / 64 * 64);
  }
  float* floats(std::size_t offset_bytes = 0) const {
    return reinterpret_cast<float*>(static_cast<unsigned char*>(memory_.get()) + offset_bytes);
  }

private:
  std::unique_ptr<void, void (*)(void*)> memory_;
};

inline const int64_t kInputDims[] = {affine::kRows, affine::kCols};
inline const int64_t kSumDims[] = {affine::kRows};

inline stitch_tensor matrix_tensor(float* data) {
  return stitch_tensor{data, STITCH_FLOAT32, 2, kInputDims, affine::kInputBytes};
}
inline stitch_tensor sum_tensor(float* data) {
  return stitch_tensor{data, STITCH_FLOAT32, 1, kSumDims, affine::kSumBytes};
}

// Uniform in [-4, 4) without zeros, so that a forgotten write or a wrong operand shows.
inline std::vector<float> random_matrix(uint32_t seed) {
  std::mt19937 generator(seed);
  std::uniform_real_distribution<float> value(-4.0f, 4.0f);
  std::vector<float> x(affine::kRows * affine::kCols);
  for (float& element : x) {
    do
      element = value(generator);
    while (element == 0.0f);
  }
  return x;
}

// The outputs of one run.
struct AffineOutputs {
  std::vector<float> y = std::vector<float>(affine::kRows * affine::kCols);
  std::vector<float> z = std::vector<float>(affine::kRows);

  bool operator==(const AffineOutputs& other) const {
    return std::memcmp(y.data(), other.y.data(), affine::kInputBytes) == 0 &&
           std::memcmp(z.data(), other.z.data(), affine::kSumBytes) == 0;
  }
};

inline AffineOutputs reference_outputs(const std::vector<float>& x) {
  AffineOutputs out;
  affine::affine_reference(x.data(), out.y.data(), out.z.data());
  return out;
}

// Runs the model on `x` through `context` (host target: returns when done); the outputs start
// as NaN so that an unwritten element cannot pass.
inline stitch_status run_affine(stitch_context* context, const std::vector<float>& x,
                                AffineOutputs& out) {
  AlignedBuffer input(affine::kInputBytes), y(affine::kInputBytes), z(affine::kSumBytes);
  std::memcpy(input.floats(), x.data(), affine::kInputBytes);
  std::memset(y.floats(), 0xFF, affine::kInputBytes);
  std::memset(z.floats(), 0xFF, affine::kSumBytes);
  const stitch_tensor inputs[] = {matrix_tensor(input.floats())};
  const stitch_tensor outputs[] = {matrix_tensor(y.floats()), sum_tensor(z.floats())};
  const stitch_status status = stitch_run(context, inputs, 1, outputs, 2, nullptr);
  std::memcpy(out.y.data(), y.floats(), affine::kInputBytes);
  std::memcpy(out.z.data(), z.floats(), affine::kSumBytes);
  return status;
}

} // namespace model_runtime_test
