// RunTarget: where a model's tensors live and how its runs are synchronized and timed.
// The host target keeps tensors in host memory and times with std::chrono::steady_clock;
// the CUDA target keeps them in device memory, runs on its own stream and times with CUDA
// events. The CUDA target reaches the CUDA runtime through dlopen ("libcudart.so.13", then
// "libcudart.so"), so stitch-run itself links no CUDA library and runs host libraries on
// machines without CUDA.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

namespace stitch::run {

class RunTarget {
public:
  virtual ~RunTarget() = default;

  // "host", or "cuda (libcudart.so.13)".
  virtual std::string description() const = 0;
  // At least max(bytes, 1) bytes, so no tensor's data pointer is null.
  virtual void* allocate(uint64_t bytes) = 0;
  virtual void release(void* data) noexcept = 0;
  virtual void copy_to_target(void* target_data, const void* host_data, uint64_t bytes) = 0;
  virtual void copy_to_host(void* host_data, const void* target_data, uint64_t bytes) = 0;
  // The stream handed to stitch_run (nullptr on the host).
  virtual void* stream() = 0;
  // Waits until all work enqueued on the target is done.
  virtual void synchronize() = 0;
  // Calls `enqueue_run` once and returns the run's latency in milliseconds, waiting for it.
  virtual double timed_run_ms(const std::function<void()>& enqueue_run) = 0;
};

std::unique_ptr<RunTarget> make_host_target();
// Throws a RunError when no CUDA runtime can be loaded or a stream cannot be made.
std::unique_ptr<RunTarget> make_cuda_target();

// One allocation on a target, released when the buffer goes.
class TargetBuffer {
public:
  TargetBuffer(RunTarget& target, uint64_t bytes)
      : target_(&target), data_(target.allocate(bytes)), bytes_(bytes) {}
  ~TargetBuffer() {
    if (data_ != nullptr) target_->release(data_);
  }
  TargetBuffer(TargetBuffer&& other) noexcept
      : target_(other.target_), data_(other.data_), bytes_(other.bytes_) {
    other.data_ = nullptr;
  }
  TargetBuffer(const TargetBuffer&) = delete;
  TargetBuffer& operator=(const TargetBuffer&) = delete;
  TargetBuffer& operator=(TargetBuffer&&) = delete;

  void* data() const { return data_; }
  uint64_t bytes() const { return bytes_; }

private:
  RunTarget* target_;
  void* data_;
  uint64_t bytes_;
};

} // namespace stitch::run
