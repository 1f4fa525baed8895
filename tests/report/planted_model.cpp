// The planted model (x -> Relu -> Exp -> ReduceSum over the last axis, names full of markup)
// and plan_model.
#include "planted_model.h"

#include "frontend/onnx_loader.h"
#include "graph/pipeline.h"
#include "model_builder.h"
#include "planned_model.h"
#include "planner/planner.h"

namespace stitch::test {

std::string write_planted_model(const std::string& dir) {
  ModelBuilder m(17);
  const std::string x =
      "x\"><img src=x onerror=\"document.body.setAttribute('data-pwned','input')\">";
  const std::string y = "<img src=x onerror=document.body.setAttribute('data-pwned','output')>";
  m.input(x, onnx::TensorProto::FLOAT, {4, 32});
  m.node("Relu", {x}, {"r</script>"}, kPlantedNodeNames[0]);
  m.node("Exp", {"r</script>"}, {"e&amp;"}, kPlantedNodeNames[1]);
  m.initializer_i64("axes", {1}, {1});
  m.node("ReduceSum", {"e&amp;", "axes"}, {y}, kPlantedNodeNames[2]);
  m.output(y);
  return m.write_to(dir, "planted.onnx");
}

} // namespace stitch::test

namespace stitch::test {

PlannedModel plan_model(const std::string& path, const std::string& planner) {
  PlannedModel m{load_onnx(path), {}, {}};
  run_pipeline(m.graph, {});
  PlannerOptions options;
  options.planner = planner;
  m.plan = plan_fusion(m.graph, options);
  m.memory = plan_memory(m.graph, m.plan);
  return m;
}

} // namespace stitch::test
