// bench_model: times one library compiled by stitchc through its C API (include/stitch/stitch.h),
// with no Python anywhere. The library is loaded with dlopen, so one build of this program
// serves every model and both targets.
//
//   bench_model LIB.so --inputs DIR [--warmup N] [--iters N] [--rotate K] [--copy-mib M]
//               [--json FILE]
//
// Inputs: DIR/input_<k>.npy, by input position (what export_bench_models.py writes, or for a
// library compiled with --io-precision reduced what `precisions.py inputs` writes: '<f2', and
// bfloat16 as ml_dtypes saves it, '<V2'); a missing file gets random values (floats, float16 and
// bfloat16 in [-1, 1), integers in [0, 2)).
//
// CUDA target: each timed run is bracketed by two CUDA events on the run's stream and the
// stream is synchronized after it, so the time includes the launch cost as a caller sees it
// (the same protocol as bench_peers.py uses for every other system). When one input-and-output
// set is smaller than twice the L2 cache, K sets (each with its own stitch_context, which keeps
// its own captured CUDA Graph) are used in turn, so that a run never finds its inputs in L2
// from the previous run; --rotate overrides K. --copy-mib M times a device-to-device copy of
// M MiB (cudaMemcpyAsync) in the same process and reports bytes read plus written per second.
//
// Host target: std::chrono::steady_clock around each run, host memory, no rotation.
//
// Prints one JSON object (also to --json FILE): median, p90, min, mean in milliseconds.
//
// Build (g++, no nvcc needed):
//   g++ -O2 -std=c++17 bench_model.cpp -I<repo>/include -I/usr/local/cuda/include \
//       -L/usr/local/cuda/lib64 -Wl,-rpath,/usr/local/cuda/lib64 -lcudart -ldl -o bench_model
#include <cuda_runtime.h>
#include <dlfcn.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <random>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "stitch/stitch.h"

namespace {

[[noreturn]] void fail(const std::string& what) { throw std::runtime_error(what); }

void cuda_check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) fail(std::string(what) + ": " + cudaGetErrorString(e));
}

// The C API, resolved from the library.
struct Api {
  const char* (*target)() = nullptr;
  stitch_status (*model_create)(stitch_model**) = nullptr;
  stitch_status (*model_destroy)(stitch_model*) = nullptr;
  stitch_status (*num_inputs)(const stitch_model*, size_t*) = nullptr;
  stitch_status (*num_outputs)(const stitch_model*, size_t*) = nullptr;
  stitch_status (*input)(const stitch_model*, size_t, stitch_tensor_info*) = nullptr;
  stitch_status (*output)(const stitch_model*, size_t, stitch_tensor_info*) = nullptr;
  stitch_status (*context_create)(stitch_model*, stitch_context**) = nullptr;
  stitch_status (*context_destroy)(stitch_context*) = nullptr;
  stitch_status (*run)(stitch_context*, const stitch_tensor*, size_t, const stitch_tensor*, size_t,
                       void*) = nullptr;
  const char* (*last_error)() = nullptr;

  explicit Api(const std::string& path) {
    std::string p = path.find('/') == std::string::npos ? "./" + path : path;
    void* h = dlopen(p.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!h) fail("cannot load " + path + ": " + dlerror());
    auto get = [&](auto& fn, const char* name) {
      fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(dlsym(h, name));
      if (!fn) fail(std::string(path) + " has no " + name);
    };
    get(target, "stitch_target");
    get(model_create, "stitch_model_create");
    get(model_destroy, "stitch_model_destroy");
    get(num_inputs, "stitch_model_num_inputs");
    get(num_outputs, "stitch_model_num_outputs");
    get(input, "stitch_model_input");
    get(output, "stitch_model_output");
    get(context_create, "stitch_context_create");
    get(context_destroy, "stitch_context_destroy");
    get(run, "stitch_run");
    get(last_error, "stitch_last_error");
  }
  void check(stitch_status s, const char* what) const {
    if (s != STITCH_OK) fail(std::string(what) + ": " + last_error());
  }
};

// A .npy file's raw little-endian data and its descr ('<f4', '<i8', ...).
struct Npy {
  std::string descr;
  std::vector<int64_t> shape;
  std::vector<char> data;
};

Npy read_npy(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) fail("cannot open " + path);
  char magic[8];
  f.read(magic, 8);
  if (!f || std::memcmp(magic, "\x93NUMPY", 6) != 0) fail(path + " is not a .npy file");
  uint32_t header_len = 0;
  if (magic[6] == 1) {
    unsigned char b[2];
    f.read(reinterpret_cast<char*>(b), 2);
    header_len = b[0] | (b[1] << 8);
  } else {
    unsigned char b[4];
    f.read(reinterpret_cast<char*>(b), 4);
    header_len = b[0] | (b[1] << 8) | (b[2] << 16) | (uint32_t(b[3]) << 24);
  }
  std::string header(header_len, '\0');
  f.read(header.data(), header_len);
  Npy n;
  auto field = [&](const char* key) {
    size_t k = header.find(key);
    if (k == std::string::npos) fail(path + ": no " + key + " in the header");
    return header.substr(k + std::strlen(key));
  };
  std::string d = field("'descr':");
  size_t q1 = d.find('\''), q2 = d.find('\'', q1 + 1);
  n.descr = d.substr(q1 + 1, q2 - q1 - 1);
  if (field("'fortran_order':").find("True") < field("'fortran_order':").find(','))
    fail(path + " is in Fortran order");
  std::string s = field("'shape':");
  s = s.substr(s.find('(') + 1, s.find(')') - s.find('(') - 1);
  std::stringstream ss(s);
  for (std::string item; std::getline(ss, item, ',');)
    if (item.find_first_of("0123456789") != std::string::npos) n.shape.push_back(std::stoll(item));
  n.data.assign(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
  return n;
}

const char* descr_of(stitch_dtype t) {
  switch (t) {
  case STITCH_FLOAT32:
    return "<f4";
  case STITCH_FLOAT64:
    return "<f8";
  case STITCH_INT64:
    return "<i8";
  case STITCH_INT32:
    return "<i4";
  case STITCH_BOOL:
    return "|b1";
  case STITCH_UINT8:
    return "|u1";
  case STITCH_INT8:
    return "|i1";
  case STITCH_FLOAT16:
    return "<f2";
  case STITCH_BFLOAT16:
    return "<V2";
  default:
    return "?";
  }
}

double percentile(std::vector<double> v, double p) {
  std::sort(v.begin(), v.end());
  double pos = p * (v.size() - 1);
  size_t lo = static_cast<size_t>(pos);
  size_t hi = std::min(lo + 1, v.size() - 1);
  return v[lo] + (v[hi] - v[lo]) * (pos - lo);
}

bool file_exists(const std::string& p) { return std::ifstream(p).good(); }

// A float in [-1, 1) as float16 or bfloat16 bits (truncated mantissa: random values only).
uint16_t half_bits(float v, stitch_dtype t) {
  uint32_t u = 0;
  std::memcpy(&u, &v, 4);
  if (t == STITCH_BFLOAT16) return static_cast<uint16_t>(u >> 16);
  uint32_t sign = (u >> 16) & 0x8000u;
  int exp = static_cast<int>((u >> 23) & 0xff) - 127 + 15;
  if (exp <= 0) return static_cast<uint16_t>(sign); // |v| < 2^-14: zero is fine here
  return static_cast<uint16_t>(sign | (uint32_t(exp) << 10) | ((u >> 13) & 0x3ffu));
}

} // namespace

int main(int argc, char** argv) {
  try {
    std::string lib, inputs_dir, json_path;
    int warmup = 20, iters = 200, rotate = -1;
    long copy_mib = 0;
    for (int i = 1; i < argc; ++i) {
      std::string a = argv[i];
      auto next = [&]() -> std::string {
        if (i + 1 >= argc) fail(a + " needs a value");
        return argv[++i];
      };
      if (a == "--inputs")
        inputs_dir = next();
      else if (a == "--warmup")
        warmup = std::stoi(next());
      else if (a == "--iters")
        iters = std::stoi(next());
      else if (a == "--rotate")
        rotate = std::stoi(next());
      else if (a == "--copy-mib")
        copy_mib = std::stol(next());
      else if (a == "--json")
        json_path = next();
      else if (!a.empty() && a[0] == '-')
        fail("unknown option " + a);
      else
        lib = a;
    }
    if (lib.empty() || iters < 1) {
      std::fprintf(stderr, "usage: bench_model LIB.so [--inputs DIR] [--warmup N] [--iters N] "
                           "[--rotate K] [--copy-mib M] [--json FILE]\n");
      return 2;
    }
    Api api(lib);
    const bool cuda = std::strcmp(api.target(), "cuda") == 0;
    stitch_model* model = nullptr;
    api.check(api.model_create(&model), "stitch_model_create");
    size_t n_in = 0, n_out = 0;
    api.check(api.num_inputs(model, &n_in), "num_inputs");
    api.check(api.num_outputs(model, &n_out), "num_outputs");
    std::vector<stitch_tensor_info> in_info(n_in), out_info(n_out);
    uint64_t set_bytes = 0;
    for (size_t k = 0; k < n_in; ++k) {
      api.check(api.input(model, k, &in_info[k]), "input");
      set_bytes += in_info[k].bytes;
    }
    for (size_t k = 0; k < n_out; ++k) {
      api.check(api.output(model, k, &out_info[k]), "output");
      set_bytes += out_info[k].bytes;
    }

    // Host copies of the inputs: from DIR/input_k.npy, else random.
    std::mt19937 rng(1234);
    std::vector<std::vector<char>> host_in(n_in);
    for (size_t k = 0; k < n_in; ++k) {
      std::string p = inputs_dir + "/input_" + std::to_string(k) + ".npy";
      if (!inputs_dir.empty() && file_exists(p)) {
        Npy n = read_npy(p);
        if (n.descr != descr_of(in_info[k].dtype) || n.data.size() != in_info[k].bytes)
          fail(p + ": " + n.descr + " with " + std::to_string(n.data.size()) +
               " bytes, the model's input '" + in_info[k].name + "' wants " +
               descr_of(in_info[k].dtype) + " with " + std::to_string(in_info[k].bytes));
        host_in[k] = std::move(n.data);
      } else {
        host_in[k].resize(in_info[k].bytes);
        if (in_info[k].dtype == STITCH_FLOAT32) {
          std::uniform_real_distribution<float> d(-1.f, 1.f);
          for (size_t i = 0; i < in_info[k].bytes / 4; ++i) {
            float v = d(rng);
            std::memcpy(host_in[k].data() + 4 * i, &v, 4);
          }
        } else if (in_info[k].dtype == STITCH_FLOAT16 || in_info[k].dtype == STITCH_BFLOAT16) {
          std::uniform_real_distribution<float> d(-1.f, 1.f);
          for (size_t i = 0; i < in_info[k].bytes / 2; ++i) {
            uint16_t v = half_bits(d(rng), in_info[k].dtype);
            std::memcpy(host_in[k].data() + 2 * i, &v, 2);
          }
        } else if (in_info[k].dtype == STITCH_INT64) {
          for (size_t i = 0; i < in_info[k].bytes / 8; ++i) {
            int64_t v = rng() % 2;
            std::memcpy(host_in[k].data() + 8 * i, &v, 8);
          }
        } else {
          for (char& c : host_in[k])
            c = static_cast<char>(rng() % 2);
        }
      }
    }

    int l2_bytes = 0;
    if (cuda) cuda_check(cudaDeviceGetAttribute(&l2_bytes, cudaDevAttrL2CacheSize, 0), "L2 size");
    int sets = 1;
    if (rotate > 0)
      sets = rotate;
    else if (cuda && set_bytes < 2ull * uint64_t(l2_bytes))
      sets = static_cast<int>(std::min<uint64_t>(
          16, (2ull * uint64_t(l2_bytes)) / std::max<uint64_t>(set_bytes, 1) + 1));

    // Buffers and a context per set.
    struct Set {
      std::vector<void*> in, out;
      std::vector<stitch_tensor> in_t, out_t;
      stitch_context* ctx = nullptr;
    };
    std::vector<Set> all(sets);
    auto alloc = [&](size_t bytes) -> void* {
      void* p = nullptr;
      if (cuda)
        cuda_check(cudaMalloc(&p, std::max<size_t>(bytes, 1)), "cudaMalloc");
      else
        p = std::aligned_alloc(256, (std::max<size_t>(bytes, 1) + 255) / 256 * 256);
      return p;
    };
    for (Set& s : all) {
      for (size_t k = 0; k < n_in; ++k) {
        void* p = alloc(in_info[k].bytes);
        if (cuda)
          cuda_check(cudaMemcpy(p, host_in[k].data(), in_info[k].bytes, cudaMemcpyHostToDevice),
                     "upload");
        else
          std::memcpy(p, host_in[k].data(), in_info[k].bytes);
        s.in.push_back(p);
        s.in_t.push_back({p, in_info[k].dtype, in_info[k].rank, in_info[k].dims, in_info[k].bytes});
      }
      for (size_t k = 0; k < n_out; ++k) {
        void* p = alloc(out_info[k].bytes);
        s.out.push_back(p);
        s.out_t.push_back(
            {p, out_info[k].dtype, out_info[k].rank, out_info[k].dims, out_info[k].bytes});
      }
      api.check(api.context_create(model, &s.ctx), "stitch_context_create");
    }

    cudaStream_t stream = nullptr;
    cudaEvent_t start = nullptr, stop = nullptr;
    if (cuda) {
      cuda_check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "stream");
      cuda_check(cudaEventCreate(&start), "event");
      cuda_check(cudaEventCreate(&stop), "event");
      cuda_check(cudaDeviceSynchronize(), "sync");
    }
    auto run_once = [&](int i) {
      Set& s = all[i % sets];
      api.check(api.run(s.ctx, s.in_t.data(), n_in, s.out_t.data(), n_out, stream), "stitch_run");
    };
    // Warm-up: every set's first run captures its graph.
    for (int i = 0; i < std::max(warmup, sets); ++i)
      run_once(i);
    if (cuda) cuda_check(cudaStreamSynchronize(stream), "warm-up");

    std::vector<double> ms;
    ms.reserve(iters);
    for (int i = 0; i < iters; ++i) {
      if (cuda) {
        cuda_check(cudaEventRecord(start, stream), "record");
        run_once(i);
        cuda_check(cudaEventRecord(stop, stream), "record");
        cuda_check(cudaStreamSynchronize(stream), "run");
        float t = 0;
        cuda_check(cudaEventElapsedTime(&t, start, stop), "elapsed");
        ms.push_back(t);
      } else {
        auto t0 = std::chrono::steady_clock::now();
        run_once(i);
        ms.push_back(
            std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0)
                .count());
      }
    }
    if (cuda) cuda_check(cudaGetLastError(), "after the runs");

    double copy_gbps = 0, copy_ms = 0;
    if (cuda && copy_mib > 0) {
      size_t bytes = size_t(copy_mib) << 20;
      void *a = nullptr, *b = nullptr;
      cuda_check(cudaMalloc(&a, bytes), "cudaMalloc (copy)");
      cuda_check(cudaMalloc(&b, bytes), "cudaMalloc (copy)");
      cuda_check(cudaMemset(a, 1, bytes), "memset");
      std::vector<double> t;
      for (int i = 0; i < 25; ++i) {
        cuda_check(cudaEventRecord(start, stream), "record");
        cuda_check(cudaMemcpyAsync(b, a, bytes, cudaMemcpyDeviceToDevice, stream), "copy");
        cuda_check(cudaEventRecord(stop, stream), "record");
        cuda_check(cudaStreamSynchronize(stream), "copy");
        float x = 0;
        cuda_check(cudaEventElapsedTime(&x, start, stop), "elapsed");
        if (i >= 5) t.push_back(x);
      }
      copy_ms = percentile(t, 0.5);
      copy_gbps = 2.0 * double(bytes) / (copy_ms * 1e-3) / 1e9;
      cudaFree(a);
      cudaFree(b);
    }

    double mean = 0;
    for (double x : ms)
      mean += x;
    mean /= ms.size();
    char buf[1024];
    std::snprintf(buf, sizeof(buf),
                  "{\"library\": \"%s\", \"target\": \"%s\", \"timer\": \"%s\", \"warmup\": %d, "
                  "\"iters\": %d, \"rotate_sets\": %d, \"set_bytes\": %llu, \"l2_bytes\": %d, "
                  "\"median_ms\": %.6f, \"p90_ms\": %.6f, \"min_ms\": %.6f, \"mean_ms\": %.6f, "
                  "\"copy_mib\": %ld, \"copy_ms\": %.6f, \"copy_gbps\": %.3f}",
                  lib.c_str(), api.target(), cuda ? "cuda_events" : "steady_clock", warmup, iters,
                  sets, static_cast<unsigned long long>(set_bytes), l2_bytes, percentile(ms, 0.5),
                  percentile(ms, 0.9), *std::min_element(ms.begin(), ms.end()), mean, copy_mib,
                  copy_ms, copy_gbps);
    std::printf("%s\n", buf);
    if (!json_path.empty()) {
      std::ofstream f(json_path);
      f << buf << "\n";
    }
    for (Set& s : all) {
      api.context_destroy(s.ctx);
      for (void* p : s.in)
        cuda ? (void)cudaFree(p) : std::free(p);
      for (void* p : s.out)
        cuda ? (void)cudaFree(p) : std::free(p);
    }
    api.model_destroy(model);
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_model: %s\n", e.what());
    return 1;
  }
}
