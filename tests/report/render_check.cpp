// report/render/*: the --report-html page of a model, rendered by headless Chromium, draws every
// group of the plan. Runs stitchc (planning only, --planner ilp) for the JSON and the HTML
// reports, lets Chromium run the page's script (--dump-dom), and checks that the page's own
// count of drawn group clusters equals the plan's group count and that each group's cluster
// id is in the rendered SVG.
//
//   stitch_report_render_check STITCHC CHROMIUM WORK_DIR MODEL.onnx [SELECT]
//
// MODEL "planted" is planted_model.h's model of names made of markup and script.
// The model's <name>.inputs.json, when there is one, binds its symbolic dims. SELECT, when
// given, is a fragment (#node_0) the page must open with: the check then also requires that
// the details panel shows that node's name as text (not markup), and that nothing the model
// planted in its names ran (an attribute data-pwned on any element).
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <regex>
#include <set>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "driver/report_html.h"
#include "driver/subprocess.h"
#include "planted_model.h"

namespace fs = std::filesystem;

namespace {

std::string read_text(const fs::path& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

int fail(const std::string& why) {
  std::cerr << "render check FAILED: " << why << "\n";
  return 1;
}

// --input-shape flags from the fixture's inputs.json (symbolic dims bound by its "dims").
std::vector<std::string> input_shape_flags(const fs::path& model) {
  fs::path spec_path = model;
  spec_path.replace_extension(".inputs.json");
  if (!fs::exists(spec_path)) return {};
  nlohmann::json spec = nlohmann::json::parse(read_text(spec_path));
  std::vector<std::string> flags;
  for (const nlohmann::json& input : spec["inputs"]) {
    bool symbolic = false;
    std::vector<std::string> dims;
    for (const nlohmann::json& d : input["shape"]) {
      symbolic |= d.is_string();
      dims.push_back(d.is_string()
                         ? std::to_string(spec["dims"][d.get<std::string>()].get<int64_t>())
                         : std::to_string(d.get<int64_t>()));
    }
    if (symbolic)
      flags.insert(flags.end(),
                   {"--input-shape",
                    fmt::format("{}={}", input["name"].get<std::string>(), fmt::join(dims, "x"))});
  }
  return flags;
}

} // namespace

int main(int argc, char** argv) {
  if (argc != 5 && argc != 6) {
    std::cerr
        << "usage: stitch_report_render_check STITCHC CHROMIUM WORK_DIR MODEL.onnx [#node_N]\n";
    return 2;
  }
  std::string stitchc = argv[1], chromium = argv[2];
  fs::path work = fs::absolute(argv[3]);
  std::string select = argc == 6 ? argv[5] : "";
  fs::remove_all(work);
  fs::create_directories(work);
  fs::path model = std::string(argv[4]) == "planted"
                       ? fs::path(stitch::test::write_planted_model(work))
                       : fs::absolute(argv[4]);

  std::vector<std::string> compile = {stitchc,         model.string(),
                                      "--planner",     "ilp",
                                      "--report",      (work / "plan.json").string(),
                                      "--report-html", (work / "plan.html").string()};
  for (const std::string& f : input_shape_flags(model))
    compile.push_back(f);
  // Chromium's logs go to their own file, so that the DOM file holds the DOM alone.
  std::string url = "file://" + (work / "plan.html").string() + select;
  std::vector<std::string> render = {
      "/bin/sh",
      "-c",
      "exec \"$0\" --headless --disable-gpu --no-sandbox --dump-dom \"$1\" >\"$2\" 2>\"$3\"",
      chromium,
      url,
      (work / "dom.html").string(),
      (work / "chromium.log").string()};
  for (const stitch::Command& c :
       {stitch::Command{compile, "stitchc"}, stitch::Command{render, "chromium"}}) {
    std::vector<stitch::CommandResult> r = stitch::run_commands({c}, work.string(), 1, 600);
    if (r[0].exit_code != 0)
      return fail(fmt::format("{} exited with {}: {}\n{}{}", c.what, r[0].exit_code,
                              stitch::command_line(c), r[0].output,
                              read_text(work / "chromium.log")));
  }

  nlohmann::json report = nlohmann::json::parse(read_text(work / "plan.json"));
  const nlohmann::json& groups = report["plan"]["groups"];
  std::string dom = read_text(work / "dom.html");
  if (dom.find("<svg") == std::string::npos) return fail("the rendered page has no SVG");
  // The page's script counts the clusters Graphviz drew, after Chromium laid the page out.
  std::smatch m;
  if (!std::regex_search(dom, m, std::regex("data-drawn-groups=\"([0-9]+)\"")))
    return fail("the page's script did not run (no data-drawn-groups on <body>)");
  if (std::stoul(m[1]) != groups.size())
    return fail(
        fmt::format("{} group clusters drawn, the plan has {} groups", m[1].str(), groups.size()));
  std::set<std::string> clusters;
  std::regex cluster_re("<g id=\"(group_[0-9]+)\" class=\"cluster\"");
  for (auto it = std::sregex_iterator(dom.begin(), dom.end(), cluster_re);
       it != std::sregex_iterator(); ++it)
    clusters.insert((*it)[1]);
  for (const nlohmann::json& g : groups)
    if (!clusters.count(fmt::format("group_{}", g["id"].get<int>())))
      return fail(fmt::format("group {} is not drawn", g["id"].get<int>()));
  size_t table_rows = 0;
  for (size_t at = dom.find("<tr id=\"row-group-"); at != std::string::npos;
       at = dom.find("<tr id=\"row-group-", at + 1))
    ++table_rows;
  if (table_rows != groups.size())
    return fail(
        fmt::format("the group table has {} rows for {} groups", table_rows, groups.size()));

  if (!select.empty()) {
    if (dom.find("data-pwned=") != std::string::npos) return fail("a model string ran as script");
    // The selected node's name, as Chromium serializes text: escaped.
    std::string name = report["nodes"][std::stoi(select.substr(6))]["name"];
    std::string shown = "<h3>" + stitch::html_escape(name) + "</h3>";
    for (auto [from, to] : {std::pair{"&quot;", "\""}, std::pair{"&#39;", "'"}})
      for (size_t at; (at = shown.find(from)) != std::string::npos;)
        shown.replace(at, std::strlen(from), to);
    if (dom.find(shown) == std::string::npos)
      return fail(fmt::format("the details panel does not show {} as text", shown));
  }
  std::cout << fmt::format("{}: {} groups drawn and listed\n", model.filename().string(),
                           groups.size());
  return 0;
}
