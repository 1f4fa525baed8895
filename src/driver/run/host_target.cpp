// The host target: tensors in aligned host memory, runs timed with steady_clock. A host
// library runs synchronously, so synchronize() has nothing to wait for.
#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>

#include "driver/run/run_error.h"
#include "driver/run/run_target.h"

namespace stitch::run {

namespace {

// Generous enough for any vectorized host kernel's aligned loads.
constexpr uint64_t kHostAlignment = 256;

class HostTarget : public RunTarget {
public:
  std::string description() const override { return "host"; }

  void* allocate(uint64_t bytes) override {
    uint64_t rounded =
        (std::max<uint64_t>(bytes, 1) + kHostAlignment - 1) / kHostAlignment * kHostAlignment;
    void* data = std::aligned_alloc(kHostAlignment, rounded);
    if (data == nullptr) run_fail("cannot allocate {} bytes of host memory", bytes);
    return data;
  }

  void release(void* data) noexcept override { std::free(data); }

  void copy_to_target(void* target_data, const void* host_data, uint64_t bytes) override {
    if (bytes != 0) std::memcpy(target_data, host_data, bytes);
  }

  void copy_to_host(void* host_data, const void* target_data, uint64_t bytes) override {
    if (bytes != 0) std::memcpy(host_data, target_data, bytes);
  }

  void* stream() override { return nullptr; }
  void synchronize() override {}

  double timed_run_ms(const std::function<void()>& enqueue_run) override {
    auto start = std::chrono::steady_clock::now();
    enqueue_run();
    auto stop = std::chrono::steady_clock::now();
    return std::chrono::duration<double, std::milli>(stop - start).count();
  }
};

} // namespace

std::unique_ptr<RunTarget> make_host_target() { return std::make_unique<HostTarget>(); }

} // namespace stitch::run
