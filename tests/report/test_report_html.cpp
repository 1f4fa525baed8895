// The --report-html page without a browser: model strings escaped everywhere (HTML text,
// attribute values, the JSON data block), every group of the plan a cluster of the SVG
// with its row in the group table, and the precision and dtypes in both reports.
#include <catch2/catch.hpp>

#include <fstream>
#include <regex>

#include "driver/report_html.h"
#include "driver/subprocess.h"
#include "frontend/onnx_loader.h"
#include "graph/pipeline.h"
#include "model_builder.h"
#include "planned_model.h"
#include "planner/memory_plan.h"
#include "planner/planner.h"
#include "planted_model.h"

using namespace stitch;

namespace {

size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1))
    ++n;
  return n;
}

} // namespace

// html_escape leaves no character that could open a tag, end an attribute or start an entity.
TEST_CASE("html_escape turns markup into text") {
  CHECK(html_escape("<script>alert(1)</script>") == "&lt;script&gt;alert(1)&lt;/script&gt;");
  CHECK(html_escape("a\"b'c&d") == "a&quot;b&#39;c&amp;d");
  CHECK(html_escape("&lt;") == "&amp;lt;");
  CHECK(html_escape("plain/name:0") == "plain/name:0");
}

// script_safe_json never lets a string close the script block it sits in, and stays valid JSON
// with the same value.
TEST_CASE("script_safe_json cannot close its script block") {
  nlohmann::json value = {{"name", "</script><script>alert(1)</script>"},
                          {"amp", "a&b"},
                          {"bad utf-8", std::string("\xff\xfe")}};
  std::string text = script_safe_json(value);
  CHECK(text.find('<') == std::string::npos);
  CHECK(text.find('>') == std::string::npos);
  CHECK(text.find('&') == std::string::npos);
  nlohmann::json back = nlohmann::json::parse(text);
  CHECK(back["name"] == value["name"]);
  CHECK(back["amp"] == "a&b");
  CHECK(back["bad utf-8"] == "\xEF\xBF\xBD\xEF\xBF\xBD");
}

// A model whose names are markup: none of it reaches the page as markup; it is there as text.
TEST_CASE("the page shows planted names only as escaped text") {
  std::string path = test::write_planted_model(test::fresh_temp_dir("planted").string());
  test::PlannedModel m = test::plan_model(path, "ilp");
  std::string html = plan_report_html(m.graph, m.plan, m.memory);
  // The only script elements are the page's own two (the data block and the script).
  CHECK(count(html, "<script") == 2);
  CHECK(count(html, "</script>") == 2);
  CHECK(html.find("<img") == std::string::npos);
  for (const std::string& name : test::kPlantedNodeNames)
    CHECK(html.find(html_escape(name)) != std::string::npos); // in the group table
  CHECK(html.find("onerror=\"") == std::string::npos);
}

// Every group of a real model's plan is one cluster of the SVG (id group_N) and one table row.
TEST_CASE("every group of a fixture's plan is drawn and listed") {
  test::PlannedModel m =
      test::plan_model(std::string(STITCH_SOURCE_DIR) + "/tests/models/resnet18_ts13.onnx", "ilp");
  std::string html = plan_report_html(m.graph, m.plan, m.memory);
  REQUIRE(m.plan.groups.size() > 10);
  CHECK(count(html, "class=\"cluster\"") == m.plan.groups.size());
  CHECK(count(html, "<tr id=\"row-group-") == m.plan.groups.size());
  for (const FusionGroup& g : m.plan.groups) {
    INFO("group " << g.id);
    CHECK(html.find("<g id=\"group_" + std::to_string(g.id) + "\" class=\"cluster\"") !=
          std::string::npos);
  }
  // Library calls are marked: ResNet's convolutions are cuDNN calls.
  CHECK(html.find("Conv [cuDNN]") != std::string::npos);
  // One SVG node per ONNX node, plus the graph's inputs and outputs.
  CHECK(count(html, "class=\"node op") == m.graph.nodes.size());
  CHECK(count(html, "class=\"node terminal\"") == m.graph.inputs.size() + m.graph.outputs.size());
}

// --precision is recorded in both reports, and both show each tensor's dtype: the JSON report
// in every tensor entry, the page in every node's and terminal's label.
TEST_CASE("the reports record the precision and show dtypes") {
  std::string dir = test::fresh_temp_dir("precision-report").string();
  std::vector<std::string> argv = {
      STITCHC_PATH,    std::string(STITCH_SOURCE_DIR) + "/tests/models/decoder_block_ts20.onnx",
      "--precision",   "fp16",
      "--planner",     "greedy",
      "--report",      dir + "/plan.json",
      "--report-html", dir + "/plan.html"};
  std::vector<CommandResult> r = run_commands({{argv, "stitchc"}}, dir, 1, 300);
  INFO(r[0].output);
  REQUIRE(r[0].exit_code == 0);
  auto read = [&](const std::string& name) {
    std::ifstream f(dir + "/" + name);
    return std::string(std::istreambuf_iterator<char>(f), {});
  };
  nlohmann::json report = nlohmann::json::parse(read("plan.json"));
  CHECK(report["precision"]["precision"] == "fp16");
  CHECK(report["precision"]["io_precision"] == "model");
  CHECK(!report["precision"]["kept_float32"].empty());
  CHECK(report["inputs"][0]["dtype"] == "float32"); // the model's own input type is kept
  bool any_half = false;
  for (const auto& node : report["nodes"])
    for (const auto& out : node["outputs"])
      any_half |= out.is_object() && out["dtype"] == "float16";
  CHECK(any_half);
  std::string html = read("plan.html");
  CHECK(html.find("precision <b>fp16</b>") != std::string::npos);
  CHECK(html.find("float16[2,16,64]") != std::string::npos);
  CHECK(html.find("float32[2,16,64]") != std::string::npos);
}
