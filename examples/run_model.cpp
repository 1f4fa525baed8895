// run_model: a small inference app that links one library compiled by stitchc and runs it
// through the public C API (here through its C++ wrapper, stitch/stitch.hpp).
//
//   stitchc examples/transformer_block.onnx -o out/libmodel.so --input-shape tokens=2x16x64
//   c++ -std=c++17 examples/run_model.cpp -Iinclude -I/usr/local/cuda/include \
//       -Lout -lmodel -L/usr/local/cuda/lib64 -lcudart -Wl,-rpath,$PWD/out -o out/run_model
//   out/run_model
//
// It works with both targets: for a CUDA-target library the tensors live in device memory
// (cudaMalloc, cudaMemcpy); for a host-target library (`--target host`) in host memory.
#include <cuda_runtime.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <vector>

#include "stitch/stitch.hpp"

namespace {

size_t element_size(stitch_dtype t) {
  switch (t) {
  case STITCH_FLOAT64:
  case STITCH_INT64:
  case STITCH_UINT64:
    return 8;
  case STITCH_FLOAT32:
  case STITCH_INT32:
  case STITCH_UINT32:
    return 4;
  case STITCH_FLOAT16:
  case STITCH_BFLOAT16:
  case STITCH_INT16:
  case STITCH_UINT16:
    return 2;
  default:
    return 1;
  }
}

// Memory for one tensor on the library's target.
struct Buffer {
  bool on_device;
  void* data = nullptr;
  size_t bytes;
  Buffer(bool device, size_t n) : on_device(device), bytes(n) {
    if (on_device) {
      if (cudaMalloc(&data, bytes) != cudaSuccess) throw std::runtime_error("cudaMalloc failed");
    } else {
      data = std::aligned_alloc(256, (bytes + 255) / 256 * 256);
    }
  }
  ~Buffer() { on_device ? (void)cudaFree(data) : std::free(data); }
  void upload(const void* host) {
    if (on_device)
      cudaMemcpy(data, host, bytes, cudaMemcpyHostToDevice);
    else
      std::memcpy(data, host, bytes);
  }
  void download(void* host) const {
    if (on_device)
      cudaMemcpy(host, data, bytes, cudaMemcpyDeviceToHost);
    else
      std::memcpy(host, data, bytes);
  }
};

stitch_tensor view(const stitch::TensorInfo& info, Buffer& buffer) {
  return {buffer.data, info.dtype, static_cast<int32_t>(info.dims.size()), info.dims.data(),
          buffer.bytes};
}

} // namespace

int main() {
  try {
    const bool on_device = std::strcmp(stitch_target(), "cuda") == 0;
    stitch::Model model;
    stitch::Context context(model);
    std::vector<stitch::TensorInfo> inputs = model.inputs(), outputs = model.outputs();
    std::printf("target %s: %zu input(s), %zu output(s)\n", stitch_target(), inputs.size(),
                outputs.size());

    // Random float inputs (other dtypes: small integers).
    std::mt19937 rng(42);
    std::vector<Buffer> in_buffers, out_buffers;
    std::vector<stitch_tensor> in_views, out_views;
    for (const stitch::TensorInfo& info : inputs) {
      std::vector<unsigned char> host(info.bytes);
      if (info.dtype == STITCH_FLOAT32) {
        std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
        for (size_t i = 0; i < info.bytes / 4; ++i) {
          float v = dist(rng);
          std::memcpy(host.data() + 4 * i, &v, 4);
        }
      } else {
        for (unsigned char& b : host)
          b = static_cast<unsigned char>(rng() % 4);
      }
      in_buffers.emplace_back(on_device, info.bytes);
      in_buffers.back().upload(host.data());
    }
    for (const stitch::TensorInfo& info : outputs)
      out_buffers.emplace_back(on_device, info.bytes);
    for (size_t i = 0; i < inputs.size(); ++i)
      in_views.push_back(view(inputs[i], in_buffers[i]));
    for (size_t i = 0; i < outputs.size(); ++i)
      out_views.push_back(view(outputs[i], out_buffers[i]));

    cudaStream_t stream = nullptr;
    if (on_device) cudaStreamCreate(&stream);
    context.run(in_views, out_views, stream);
    if (on_device) cudaStreamSynchronize(stream);

    for (size_t i = 0; i < outputs.size(); ++i) {
      const stitch::TensorInfo& info = outputs[i];
      std::vector<unsigned char> host(info.bytes);
      out_buffers[i].download(host.data());
      std::printf("output %s: %zu elements", info.name.c_str(),
                  info.bytes / element_size(info.dtype));
      if (info.dtype == STITCH_FLOAT32) {
        double sum = 0, sum_abs = 0;
        for (size_t k = 0; k < info.bytes / 4; ++k) {
          float v;
          std::memcpy(&v, host.data() + 4 * k, 4);
          sum += v;
          sum_abs += std::fabs(v);
        }
        std::printf(", sum %.6f, mean |x| %.6f", sum, sum_abs / (info.bytes / 4));
      }
      std::printf("\n");
    }
    if (on_device) cudaStreamDestroy(stream);
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "run_model: %s\n", e.what());
    return 1;
  }
}
