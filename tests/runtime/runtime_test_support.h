// Helpers shared by the host-target runtime tests: device buffers that go through the emulated
// cudaMalloc / cudaMemcpy, a scoped override of the emulation's configuration, and seeded
// random inputs (Catch's --rng-seed changes them; never all zeros).
#pragma once

#include "stitch_cuda.h"

#include <catch2/catch.hpp>

#include <cstddef>
#include <random>
#include <string>
#include <vector>

namespace stitch::test {

template <typename T> class DeviceBuffer {
public:
  explicit DeviceBuffer(std::size_t count) : count_(count) {
    REQUIRE(cudaMalloc(&data_, count * sizeof(T)) == cudaSuccess);
  }
  explicit DeviceBuffer(const std::vector<T>& host) : DeviceBuffer(host.size()) { upload(host); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  ~DeviceBuffer() { cudaFree(data_); }

  T* get() const { return data_; }
  std::size_t size() const { return count_; }

  void upload(const std::vector<T>& host) {
    REQUIRE(host.size() == count_);
    REQUIRE(cudaMemcpy(data_, host.data(), count_ * sizeof(T), cudaMemcpyHostToDevice) ==
            cudaSuccess);
  }
  std::vector<T> download() const {
    std::vector<T> host(count_);
    REQUIRE(cudaMemcpy(host.data(), data_, count_ * sizeof(T), cudaMemcpyDeviceToHost) ==
            cudaSuccess);
    return host;
  }

private:
  T* data_ = nullptr;
  std::size_t count_;
};

// Changes host_config() for one test and restores it afterwards.
class ScopedHostConfig {
public:
  ScopedHostConfig() : saved_(stitch::host::host_config()) {}
  ScopedHostConfig(const ScopedHostConfig&) = delete;
  ScopedHostConfig& operator=(const ScopedHostConfig&) = delete;
  ~ScopedHostConfig() { stitch::host::host_config() = saved_; }
  stitch::host::HostDeviceConfig* operator->() { return &stitch::host::host_config(); }

private:
  stitch::host::HostDeviceConfig saved_;
};

inline std::mt19937 seeded_generator(unsigned salt) {
  return std::mt19937(Catch::rngSeed() * 7919u + salt);
}

inline std::vector<float> random_floats(std::size_t count, float low, float high, unsigned salt) {
  std::mt19937 generator = seeded_generator(salt);
  std::uniform_real_distribution<float> distribution(low, high);
  std::vector<float> values(count);
  for (float& value : values)
    value = distribution(generator);
  return values;
}

// Integer-valued floats: sums of a few thousand of them are exact in fp32 in any order.
inline std::vector<float> random_integer_floats(std::size_t count, int low, int high,
                                                unsigned salt) {
  std::mt19937 generator = seeded_generator(salt);
  std::uniform_int_distribution<int> distribution(low, high);
  std::vector<float> values(count);
  for (float& value : values)
    value = static_cast<float>(distribution(generator));
  return values;
}

inline std::string last_error_text(cudaError_t error) { return cudaGetErrorString(error); }

} // namespace stitch::test
