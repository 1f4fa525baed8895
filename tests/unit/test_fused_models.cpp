// Fused plans equal the unfused plan on the real-model fixtures (tests/models), on the host
// target: each fixture is compiled one kernel per op and with the greedy and ilp planners, all
// three run on the same random inputs (the fixture's inputs.json recipe: normal floats, token
// ids in their range, a 0/1 mask with a random padded tail per row), and every output of each
// fused plan must match the unfused one within fp32 tolerance. The fused plans must hold fused
// groups of the schemes the fixture exercises, so that a planner that stopped fusing fails.
//
// Compiling and running a fixture's three plans takes about 8 s of CPU, so five of the fourteen
// fixtures run here (about 45 s): the transformers BERT (attention mask: per-row pointwise
// nodes in a Regional group), GPT-2 (causal mask, expanded LayerNorm) and ViT, and the CNNs
// ResNet-18 and EfficientNet-B0 (GlobalAveragePool as a Regional row op). The other nine, one
// per exporter of the same models, run against ONNX Runtime in scripts/models/compare_with_ort.py.
#include <catch2/catch.hpp>

#include <algorithm>
#include <fstream>

#include <nlohmann/json.hpp>

#include "fixture_models.h"
#include "test_emit_fused_support.h"

using namespace stitch;
using namespace stitch::test;

namespace {

// fp32 tolerance: fused row ops and their unfused kernels sum in the same order, but fused
// chains round in another order (a LayerNorm's expanded form, a mask folded into a softmax).
constexpr double kRtol = 1e-4, kAtol = 1e-5;

struct Fixture {
  Graph graph;
  std::vector<HostBytes> inputs;
};

// Loads a fixture the way the driver does (symbolic dims bound from its inputs.json) and draws
// its inputs by the fixture's recipe.
Fixture load_fixture(const std::string& name, unsigned seed) {
  nlohmann::json spec;
  Fixture fixture{load_fixture_graph(name, &spec), {}};
  const Graph& g = fixture.graph;

  std::mt19937 rng(seed);
  for (TensorId id : g.inputs) {
    const Tensor& t = g.tensor(id);
    const nlohmann::json* recipe = nullptr;
    for (const auto& input : spec["inputs"])
      if (input["name"] == t.name) recipe = &input;
    REQUIRE(recipe != nullptr);
    const std::string fill = (*recipe)["fill"];
    const size_t n = static_cast<size_t>(t.elements());
    if (t.dtype == DType::Float32) {
      REQUIRE(fill == "normal");
      std::normal_distribution<float> normal(0.0f, 1.0f);
      std::vector<float> v(n);
      for (float& x : v)
        x = normal(rng);
      fixture.inputs.push_back(as_bytes(v));
      continue;
    }
    REQUIRE(t.dtype == DType::Int64);
    std::vector<int64_t> v(n, 1);
    if (fill == "randint") {
      std::uniform_int_distribution<int64_t> ids((*recipe)["low"].get<int64_t>(),
                                                 (*recipe)["high"].get<int64_t>() - 1);
      for (int64_t& x : v)
        x = ids(rng);
    } else {
      // A 0/1 mask: ones, then a random padded tail on each row (at least one position kept).
      REQUIRE(fill == "ones");
      const int64_t row = t.shape.back();
      std::uniform_int_distribution<int64_t> kept(1, row);
      for (size_t r = 0; r < n / static_cast<size_t>(row); ++r)
        for (int64_t k = kept(rng); k < row; ++k)
          v[r * row + k] = 0;
    }
    fixture.inputs.push_back(as_bytes(v));
  }
  return fixture;
}

std::vector<std::vector<float>> as_floats(const Graph& g, const std::vector<HostBytes>& outputs) {
  std::vector<std::vector<float>> floats;
  for (size_t i = 0; i < outputs.size(); ++i) {
    REQUIRE(g.tensor(g.outputs[i]).dtype == DType::Float32);
    floats.emplace_back(outputs[i].bytes.size() / sizeof(float));
    std::memcpy(floats.back().data(), outputs[i].bytes.data(), outputs[i].bytes.size());
  }
  return floats;
}

// The schemes of the plan's fused groups; an Independent group's parts count as what they are
// (several pointwise nodes: Local; row ops: Regional).
std::set<StitchScheme> fused_schemes(const FusionPlan& plan) {
  std::set<StitchScheme> schemes;
  for (const FusionGroup& group : plan.groups) {
    if (group.kind != GroupKind::Kernel || group.nodes.size() < 2) continue;
    schemes.insert(group.scheme);
    if (const auto* independent = std::get_if<IndependentSpec>(&group.spec))
      for (const IndependentSpec::Part& part : independent->parts) {
        if (std::holds_alternative<RegionalSpec>(part.body)) schemes.insert(StitchScheme::Regional);
        const auto* local = std::get_if<LocalSpec>(&part.body);
        if (local != nullptr && local->nodes.size() > 1) schemes.insert(StitchScheme::Local);
      }
  }
  return schemes;
}

// Runs the fixture unfused, then with each planner; every fused plan must contain `schemes`
// (greedy's `greedy_schemes` too, the ILP's `ilp_schemes`) and match the unfused outputs.
void check_fixture(const std::string& name, const std::set<StitchScheme>& schemes,
                   const std::set<StitchScheme>& ilp_schemes = {}, bool conv_epilogues = false,
                   const std::set<StitchScheme>& greedy_schemes = {}) {
  INFO(name);
  Fixture fixture = load_fixture(name, 29);
  const Graph& g = fixture.graph;
  const auto unfused = as_floats(g, run_bytes_on_host(g, plan_one_kernel_per_op(g, DeviceParams{}),
                                                      fixture.inputs, name + "-none"));
  for (const char* planner : {"greedy", "ilp"}) {
    INFO("planner " << planner);
    PlannerOptions options;
    options.planner = planner;
    // As stitchc plans for --target host: a cooperative grid fits the emulated device.
    options.device.cooperative_sm_count = kHostTargetMultiprocessors;
    const FusionPlan plan = plan_fusion(g, options);
    const std::set<StitchScheme> made = fused_schemes(plan);
    std::set<StitchScheme> wanted = schemes;
    if (std::string(planner) == "ilp") wanted.insert(ilp_schemes.begin(), ilp_schemes.end());
    if (std::string(planner) == "greedy")
      wanted.insert(greedy_schemes.begin(), greedy_schemes.end());
    for (StitchScheme scheme : wanted) {
      INFO("a fused " << scheme_name(scheme) << " group");
      CHECK(made.count(scheme) == 1);
    }
    if (conv_epilogues) {
      INFO("a cuDNN call with epilogue nodes");
      CHECK(std::any_of(plan.groups.begin(), plan.groups.end(), [](const FusionGroup& group) {
        return group.kind == GroupKind::ConvLibrary && group.nodes.size() > 1;
      }));
    }
    const auto fused =
        as_floats(g, run_bytes_on_host(g, plan, fixture.inputs, name + "-" + planner));
    require_close(unfused, fused, kRtol, kAtol);
  }
}

} // namespace

TEST_CASE("fused models: BERT fused equals unfused on the host", "[fused][models][host]") {
  // Proves: LayerNorms, the attention softmax with its scale and padding mask, and the mask's
  // own per-row arithmetic, fused as the planners choose, compute what one kernel per op does.
  check_fixture("bert_ts16", {StitchScheme::Regional, StitchScheme::Local});
}

TEST_CASE("fused models: GPT-2 fused equals unfused on the host", "[fused][models][host]") {
  // Proves: the same for the dynamo export of GPT-2 (causal mask, expanded LayerNorm, GELU).
  check_fixture("gpt2_dynamo23", {StitchScheme::Regional, StitchScheme::Local});
}

TEST_CASE("fused models: ViT fused equals unfused on the host", "[fused][models][host]") {
  // Proves: the same for ViT (LayerNormalization ops, softmax without a mask, GELU).
  check_fixture("vit_ts18", {StitchScheme::Regional, StitchScheme::Local});
}

TEST_CASE("fused models: LLaMA fused equals unfused on the host", "[fused][models][host]") {
  // Proves: the same for a LLaMA-style decoder (RMSNorm, rotary embedding's slices and concat,
  // grouped-query attention's expanded key and value heads, a SiLU-gated MLP).
  check_fixture("llama_ts19", {StitchScheme::Regional, StitchScheme::Local});
}

TEST_CASE("fused models: ResNet-18 fused equals unfused on the host", "[fused][models][host]") {
  // Proves: a CNN's fused groups (each Conv's residual add and Relu as its cuDNN epilogue;
  // GlobalAveragePool as a row reduction, in greedy's Regional group, and in the ILP's Global
  // group with the classifier's matrix-vector product after a grid barrier) compute what one
  // kernel per op does.
  check_fixture("resnet18_ts13", {}, {StitchScheme::Global}, true);
}

TEST_CASE("fused models: EfficientNet-B0 fused equals unfused on the host",
          "[fused][models][host]") {
  // Proves: the same for EfficientNet's SiLU and squeeze-excitation (GlobalAveragePool, a
  // per-channel sigmoid scale broadcast back over the feature map): greedy's pools in Regional
  // groups, the ILP's in Global ones with each block's first 1 x 1 convolution (a Gemm at
  // batch 1) and its SiLU after a grid barrier.
  check_fixture("efficientnet_b0_ts15", {StitchScheme::Local}, {StitchScheme::Global}, false,
                {StitchScheme::Regional});
}
