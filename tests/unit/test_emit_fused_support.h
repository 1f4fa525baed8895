// Helpers of the fused-kernel tests: plans holding one group legality made of chosen nodes (with
// a thread mapping imposed where a test wants one), and compiling a plan through stitchc's
// library path for the host target and running it.
#pragma once

#include <dlfcn.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "../../include/stitch/stitch.h"
#include "driver/build_library.h"
#include "emitter/emit_model.h"
#include "frontend/onnx_loader.h"
#include "graph/error.h"
#include "graph/pipeline.h"
#include "model_builder.h"
#include "planner/launch_config.h"
#include "planner/memory_plan.h"
#include "planner/plan_common.h"
#include "planner/planner.h"

namespace stitch::test {

inline Graph load_graph(const ModelBuilder& m) {
  Graph g = load_onnx(m.write());
  run_pipeline(g, {});
  return g;
}

// The index of the node writing tensor `name`.
inline int32_t node_writing(const Graph& g, const std::string& name) {
  for (size_t n = 0; n < g.nodes.size(); ++n)
    for (TensorId t : g.nodes[n].outputs)
      if (t != kNoTensor && g.tensor(t).name == name) return static_cast<int32_t>(n);
  internal_fail("no node writes '{}'", name);
}

inline std::vector<int32_t> nodes_writing(const Graph& g, const std::vector<std::string>& names) {
  std::vector<int32_t> nodes;
  for (const std::string& name : names)
    nodes.push_back(node_writing(g, name));
  std::sort(nodes.begin(), nodes.end());
  return nodes;
}

// The group legality makes of `nodes` (it must accept them), with `overrides` (a thread mapping
// for its rows) imposed, planned for `device`: the group with its spec, as a planner gets it.
inline FusionGroup legal_group(const Graph& g, std::vector<int32_t> nodes,
                               const AnalysisOverrides& overrides = {},
                               const DeviceParams& device = DeviceParams{}) {
  std::sort(nodes.begin(), nodes.end());
  FusionContext ctx(g, device);
  GroupAnalysis analysis;
  FusionDecision decision = analyze_group(ctx, nodes, analysis, overrides);
  INFO(decision.reason);
  REQUIRE(decision.legal);
  return make_group(ctx, analysis);
}

inline AnalysisOverrides with_row_mapping(ThreadMapping mapping) {
  AnalysisOverrides overrides;
  overrides.row_mapping = mapping;
  return overrides;
}

// The one-kernel-per-op plan with the nodes of `fused` replaced by that group, groups in an
// order that respects the dependences.
// Two unrelated parts for the Independent scheme: y = exp(-a) over a[10,10], and the row sums
// s of x[7,45] (ReduceSum over axis 1).
inline Graph independent_parts_graph() {
  ModelBuilder m(11);
  m.input("a", onnx::TensorProto::FLOAT, {10, 10}).input("x", onnx::TensorProto::FLOAT, {7, 45});
  m.output("y").output("s");
  m.node("Neg", {"a"}, {"na"});
  m.node("Exp", {"na"}, {"y"});
  test::set_attr_ints(m.node("ReduceSum", {"x"}, {"s"}), "axes", {1});
  return load_graph(m);
}

inline FusionPlan plan_with(const Graph& g, FusionGroup fused) {
  FusionPlan per_op = plan_one_kernel_per_op(g, DeviceParams{});
  std::set<int32_t> inside(fused.nodes.begin(), fused.nodes.end());
  std::vector<FusionGroup> pending;
  for (FusionGroup& group : per_op.groups)
    if (!inside.count(group.nodes[0])) pending.push_back(group);
  pending.push_back(std::move(fused));
  const auto producers = g.producers();
  std::set<int32_t> done;
  FusionPlan plan;
  plan.planner = "test";
  while (!pending.empty()) {
    auto ready = std::find_if(pending.begin(), pending.end(), [&](const FusionGroup& group) {
      std::set<int32_t> own(group.nodes.begin(), group.nodes.end());
      for (int32_t n : group.nodes)
        for (TensorId t : g.nodes[n].inputs)
          if (t != kNoTensor && producers[t] >= 0 && !own.count(producers[t]) &&
              !done.count(producers[t]))
            return false;
      return true;
    });
    REQUIRE(ready != pending.end());
    FusionGroup group = std::move(*ready);
    pending.erase(ready);
    group.id = static_cast<int>(plan.groups.size());
    done.insert(group.nodes.begin(), group.nodes.end());
    plan.groups.push_back(std::move(group));
  }
  return plan;
}

inline const FusionGroup& group_holding(const FusionPlan& plan, int32_t node) {
  for (const FusionGroup& group : plan.groups)
    if (std::find(group.nodes.begin(), group.nodes.end(), node) != group.nodes.end()) return group;
  internal_fail("no group holds node {}", node);
}

inline std::string emit_sources(const Graph& g, const FusionPlan& plan) {
  MemoryPlan memory = plan_memory(g, plan);
  GeneratedModel model = emit_model(g, plan, memory, "host");
  std::string all;
  for (const GeneratedFile& f : model.groups)
    all += f.text;
  return all;
}

// Random floats away from zero: uniform in [low, high], with a random sign when `signs`.
inline std::vector<float> random_values(size_t count, unsigned seed, float low = 0.25f,
                                        float high = 2.0f, bool signs = true) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> magnitude(low, high);
  std::bernoulli_distribution negative(0.5);
  std::vector<float> v(count);
  for (float& x : v)
    x = signs && negative(rng) ? -magnitude(rng) : magnitude(rng);
  return v;
}

// One tensor's elements as raw bytes of the graph tensor's dtype (host order).
struct HostBytes {
  std::vector<unsigned char> bytes;
};

// `values` as a tensor's bytes (host order).
template <typename T> HostBytes as_bytes(const std::vector<T>& values) {
  HostBytes b;
  b.bytes.resize(values.size() * sizeof(T));
  if (!values.empty()) std::memcpy(b.bytes.data(), values.data(), b.bytes.size());
  return b;
}

// An environment variable set while the object lives (the host target's knobs, read by each
// library when it first asks about the device), and removed afterwards.
class ScopedEnv {
public:
  ScopedEnv(const char* name, const char* value) : name_(name) { setenv(name, value, 1); }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;
  ~ScopedEnv() { unsetenv(name_); }

private:
  const char* name_;
};

// Compiles `plan` for the host target through build_library into `dir`; the library's path.
inline std::string build_host_library(const Graph& g, const FusionPlan& plan,
                                      const std::filesystem::path& dir) {
  setenv("STITCH_RUNTIME_DIR", STITCH_BINARY_DIR "/runtime", 0);
  MemoryPlan memory = plan_memory(g, plan);
  GeneratedModel model = emit_model(g, plan, memory, "host");
  BuildOptions options;
  options.target = "host";
  options.output = (dir / "model.so").string();
  options.emit_dir = (dir / "src").string();
  options.jobs = 1;
  build_library(model, options);
  return options.output;
}

// Compiles `plan` for the host target through build_library, runs it on `inputs` (one byte
// buffer per graph input, in order, each of its tensor's dtype and size) and returns every
// graph output's bytes. The build folder is removed after a successful run. With
// `context_bytes`, stores there what stitch_model_context_memory says a context needs.
inline std::vector<HostBytes> run_bytes_on_host(const Graph& g, const FusionPlan& plan,
                                                const std::vector<HostBytes>& inputs,
                                                const std::string& tag,
                                                uint64_t* context_bytes = nullptr) {
  const std::filesystem::path dir = fresh_temp_dir("fused-" + tag);
  const std::string output = build_host_library(g, plan, dir);
  void* library = dlopen(output.c_str(), RTLD_NOW | RTLD_LOCAL);
  INFO("dlopen " << output << ": " << (library ? "" : dlerror()));
  REQUIRE(library != nullptr);
  auto symbol = [&](const char* name) {
    void* s = dlsym(library, name);
    INFO("dlsym " << name);
    REQUIRE(s != nullptr);
    return s;
  };
  auto model_create =
      reinterpret_cast<decltype(&stitch_model_create)>(symbol("stitch_model_create"));
  auto model_destroy =
      reinterpret_cast<decltype(&stitch_model_destroy)>(symbol("stitch_model_destroy"));
  auto context_create =
      reinterpret_cast<decltype(&stitch_context_create)>(symbol("stitch_context_create"));
  auto context_destroy =
      reinterpret_cast<decltype(&stitch_context_destroy)>(symbol("stitch_context_destroy"));
  auto run = reinterpret_cast<decltype(&stitch_run)>(symbol("stitch_run"));
  auto last_error = reinterpret_cast<decltype(&stitch_last_error)>(symbol("stitch_last_error"));

  stitch_model* m = nullptr;
  stitch_context* context = nullptr;
  REQUIRE(model_create(&m) == STITCH_OK);
  if (context_bytes != nullptr) {
    auto context_memory = reinterpret_cast<decltype(&stitch_model_context_memory)>(
        symbol("stitch_model_context_memory"));
    REQUIRE(context_memory(m, context_bytes) == STITCH_OK);
  }
  REQUIRE(context_create(m, &context) == STITCH_OK);
  std::vector<HostBytes> in_copies = inputs, outputs;
  std::vector<stitch_tensor> in_tensors, out_tensors;
  REQUIRE(inputs.size() == g.inputs.size());
  auto described = [](const Tensor& t, void* data) {
    return stitch_tensor{data, static_cast<stitch_dtype>(dtype_onnx_code(t.dtype)),
                         static_cast<int32_t>(t.shape.size()), t.shape.data(),
                         static_cast<uint64_t>(t.bytes())};
  };
  for (size_t i = 0; i < g.inputs.size(); ++i) {
    const Tensor& t = g.tensor(g.inputs[i]);
    REQUIRE(static_cast<int64_t>(inputs[i].bytes.size()) == t.bytes());
    in_tensors.push_back(described(t, in_copies[i].bytes.data()));
  }
  // Outputs start as 0xFF bytes (NaN for floats), so that an element nobody wrote never
  // compares equal.
  for (TensorId id : g.outputs)
    outputs.push_back({std::vector<unsigned char>(g.tensor(id).bytes(), 0xFF)});
  for (size_t i = 0; i < g.outputs.size(); ++i)
    out_tensors.push_back(described(g.tensor(g.outputs[i]), outputs[i].bytes.data()));
  stitch_status status = run(context, in_tensors.data(), in_tensors.size(), out_tensors.data(),
                             out_tensors.size(), nullptr);
  INFO("stitch_run: " << last_error());
  CHECK(status == STITCH_OK);
  context_destroy(context);
  model_destroy(m);
  dlclose(library);
  // The build folder (sources, objects, the library: a few MB) is kept only when the run
  // failed, for inspection.
  if (status == STITCH_OK) std::filesystem::remove_all(dir);
  return outputs;
}

// Compiles `plan` for the host target and creates its model: "" when stitch_model_create
// succeeds, else its status and message.
inline std::string model_create_error_on_host(const Graph& g, const FusionPlan& plan,
                                              const std::string& tag) {
  const std::filesystem::path dir = fresh_temp_dir("create-" + tag);
  void* library = dlopen(build_host_library(g, plan, dir).c_str(), RTLD_NOW | RTLD_LOCAL);
  REQUIRE(library != nullptr);
  auto model_create =
      reinterpret_cast<decltype(&stitch_model_create)>(dlsym(library, "stitch_model_create"));
  auto model_destroy =
      reinterpret_cast<decltype(&stitch_model_destroy)>(dlsym(library, "stitch_model_destroy"));
  auto last_error =
      reinterpret_cast<decltype(&stitch_last_error)>(dlsym(library, "stitch_last_error"));
  REQUIRE((model_create != nullptr && model_destroy != nullptr && last_error != nullptr));
  stitch_model* m = nullptr;
  const stitch_status status = model_create(&m);
  const std::string error = status == STITCH_OK ? "" : std::string(last_error());
  if (m != nullptr) model_destroy(m);
  dlclose(library);
  std::filesystem::remove_all(dir);
  return error;
}

// run_bytes_on_host for graphs whose inputs and outputs are all float32.
inline std::vector<std::vector<float>> run_on_host(const Graph& g, const FusionPlan& plan,
                                                   const std::vector<std::vector<float>>& inputs,
                                                   const std::string& tag,
                                                   uint64_t* context_bytes = nullptr) {
  std::vector<HostBytes> in_bytes;
  for (const std::vector<float>& v : inputs)
    in_bytes.push_back(as_bytes(v));
  for (TensorId t : g.inputs)
    REQUIRE(g.tensor(t).dtype == DType::Float32);
  for (TensorId t : g.outputs)
    REQUIRE(g.tensor(t).dtype == DType::Float32);
  std::vector<std::vector<float>> outputs;
  for (const HostBytes& b : run_bytes_on_host(g, plan, in_bytes, tag, context_bytes)) {
    outputs.emplace_back(b.bytes.size() / sizeof(float));
    if (!b.bytes.empty()) std::memcpy(outputs.back().data(), b.bytes.data(), b.bytes.size());
  }
  return outputs;
}

// Every element of `actual` within rtol/atol of `expected` (bitwise when both are 0).
inline void require_close(const std::vector<std::vector<float>>& expected,
                          const std::vector<std::vector<float>>& actual, double rtol, double atol) {
  REQUIRE(expected.size() == actual.size());
  for (size_t o = 0; o < expected.size(); ++o) {
    REQUIRE(expected[o].size() == actual[o].size());
    size_t bad = 0, first_bad = 0;
    for (size_t i = 0; i < expected[o].size(); ++i) {
      double e = expected[o][i], a = actual[o][i];
      bool ok = rtol == 0 && atol == 0
                    ? std::memcmp(&expected[o][i], &actual[o][i], sizeof(float)) == 0
                    : std::abs(a - e) <= atol + rtol * std::abs(e);
      if (!ok && bad++ == 0) first_bad = i;
    }
    INFO("output " << o << ": " << bad << " of " << expected[o].size()
                   << " elements differ; first at " << first_bad << ": expected "
                   << expected[o][first_bad] << ", got " << actual[o][first_bad]);
    CHECK(bad == 0);
  }
}

} // namespace stitch::test
