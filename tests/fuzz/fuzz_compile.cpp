// The fuzz target: bytes -> model file -> load -> passes -> plan (ILP and greedy) -> memory
// plan -> JSON reports -> emitted sources for both targets; everything stitchc does but
// running nvcc or the host compiler.
//
// A UserError is an expected outcome (the bytes are not a model stitchc accepts; what code
// generation cannot do is refused before planning). Anything else escaping the pipeline is a
// finding: an InternalError (stitchc says it has a bug: among them a group spec the emitter
// cannot print, i.e. a plan legality should not have made), any other exception, and
// everything the sanitizers report (memory errors, undefined behaviour, leaks). Findings are
// printed and abort, so that libFuzzer saves the input.
//
// Built two ways (tests/fuzz/CMakeLists.txt): with libFuzzer (clang, STITCH_FUZZ=ON,
// scripts/fuzz.sh), and, in the sanitizer build, with replay_main.cpp, which runs the target
// once over the seed corpus as a ctest so that the harness never rots.
#include <onnx/onnx_pb.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <fstream>
#include <new>
#include <string>

#include "emitter/emit_model.h"
#include "frontend/onnx_loader.h"
#include "graph/error.h"
#include "graph/graph_json.h"
#include "graph/pipeline.h"
#include "planner/memory_plan.h"
#include "planner/plan_json.h"
#include "planner/planner.h"

namespace {

// The frontend reads a file (external data resolves beside it), so each input is written to
// model.onnx in a private folder made once per process; the folder holds nothing else.
const std::string& model_path() {
  static const std::string path = [] {
    const char* tmp = std::getenv("TMPDIR");
    std::string pattern = std::string(tmp && *tmp ? tmp : "/tmp") + "/stitch-fuzz-XXXXXX";
    if (mkdtemp(pattern.data()) == nullptr) {
      std::perror("stitch fuzz: mkdtemp");
      std::abort();
    }
    return pattern + "/model.onnx";
  }();
  return path;
}

void write_model(const uint8_t* data, size_t size) {
  std::ofstream out(model_path(), std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  if (!out) {
    std::fprintf(stderr, "stitch fuzz: cannot write %s\n", model_path().c_str());
    std::abort();
  }
}

// stitchc refuses a model with unbound symbolic dims unless --input-shape binds them; the
// harness binds every one to 2 so that seeds like bert_ts16 get past the frontend. Inputs that
// do not parse get no shapes: the frontend reports them.
stitch::LoadOptions bind_symbolic_dims(const uint8_t* data, size_t size) {
  stitch::LoadOptions options;
  onnx::ModelProto model;
  if (size > static_cast<size_t>(INT32_MAX) || !model.ParseFromArray(data, static_cast<int>(size)))
    return options;
  for (const onnx::ValueInfoProto& input : model.graph().input()) {
    const onnx::TypeProto& type = input.type();
    if (!type.has_tensor_type() || !type.tensor_type().has_shape()) continue;
    stitch::Shape shape;
    bool symbolic = false;
    for (const auto& dim : type.tensor_type().shape().dim()) {
      symbolic |= !dim.has_dim_value();
      shape.push_back(dim.has_dim_value() ? dim.dim_value() : 2);
    }
    if (symbolic) options.input_shapes[input.name()] = stitch::sym_shape_of(shape);
  }
  return options;
}

[[noreturn]] void finding(const char* kind, const char* what) {
  std::fprintf(stderr, "stitch fuzz: FINDING: %s: %s\n", kind, what);
  std::abort();
}

void plan_and_emit(const stitch::Graph& graph, const std::string& planner,
                   const std::string& target) {
  stitch::PlannerOptions options;
  options.planner = planner;
  options.ilp_time_limit_s = 0.5; // the best plan found by then; the fuzzer wants many runs
  if (target == "host") options.device.cooperative_sm_count = stitch::kHostTargetMultiprocessors;
  stitch::FusionPlan plan = stitch::plan_fusion(graph, options);
  stitch::MemoryPlan memory = stitch::plan_memory(graph, plan);
  // As the driver writes --report: names that are not UTF-8 are replaced, not refused.
  (void)stitch::plan_to_json(graph, plan, memory)
      .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  (void)stitch::emit_model(graph, plan, memory, target);
}

void compile_without_compiler(const uint8_t* data, size_t size) {
  stitch::LoadOptions load = bind_symbolic_dims(data, size);
  write_model(data, size);
  stitch::Graph graph = stitch::load_onnx(model_path(), load);
  stitch::run_pipeline(graph, stitch::PipelineOptions{});
  (void)stitch::graph_to_json(graph).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  // Every planner: the ILP (the driver's default) for the CUDA target, greedy for the host
  // target with its resident-block limit, one kernel per op for the CUDA target.
  plan_and_emit(graph, "ilp", "cuda");
  plan_and_emit(graph, "greedy", "host");
  plan_and_emit(graph, "none", "cuda");
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    compile_without_compiler(data, size);
  } catch (const stitch::UserError&) {
    // A model stitchc refuses, with a message: the expected outcome for most inputs.
  } catch (const stitch::InternalError& e) {
    finding("internal error", e.what());
  } catch (const std::bad_alloc&) {
    finding("out of memory", "std::bad_alloc (a size taken from the model was not checked)");
  } catch (const std::exception& e) {
    finding("unexpected exception", e.what());
  } catch (...) {
    finding("unexpected exception", "not a std::exception");
  }
  return 0;
}
