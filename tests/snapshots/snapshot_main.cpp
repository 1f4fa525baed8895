// stitch_snapshots: whole-kernel snapshots of the generated code. For each case of
// tests/snapshots/cases.txt it loads the model, runs the passes, plans it with the case's
// planner for the CUDA target (default DeviceParams: an H100), plans memory and emits — what
// stitchc does before it runs nvcc — and compares every generated source (each group_NNN.cu,
// launcher.cu) and a summary of the plan (plan.txt) with the checked-in copies under
// tests/snapshots/expected/<case>/. The weights blob is not compared.
//
//   stitch_snapshots [CASE...]            compare (every case when none is named); on a
//                                         difference print a diff excerpt and exit 1
//   stitch_snapshots --update [CASE...]   rewrite the checked-in files, remove stale ones
//   stitch_snapshots --check-tree         expected/ holds a folder for each case and no other
//   --source-dir DIR                      the repository (default: the one this was built from)
//
// The output is machine-independent: models are named by their path relative to the
// repository (the emitter's banners print it), and the ILP planner must prove its plan optimal
// (small graphs do, well within the time limit), so that the plan never depends on the
// machine's speed. scripts/refresh-snapshots.sh runs --update.
#include <algorithm>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "emitter/emit_model.h"
#include "frontend/onnx_loader.h"
#include "graph/error.h"
#include "graph/pipeline.h"
#include "planner/memory_plan.h"
#include "planner/plan_json.h"
#include "planner/planner.h"
#include "text_diff.h"

namespace fs = std::filesystem;

namespace stitch::snapshots {

namespace {

// The ILP's search limit. The cases solve to proven optimality in well under a second; the
// margin keeps a slow or loaded machine from stopping at a different plan (which would fail
// the case rather than snapshot it).
constexpr double kIlpTimeLimitSeconds = 120.0;
constexpr size_t kDiffLinesPerFile = 40;

// One case of cases.txt: NAME MODEL [planner=P] [shape=INPUT=DIMS]... [dim=NAME=MIN..MAX@T]...
// [disable=PASS]... [expect=A+B]..., on one line and the indented lines after it.
struct Case {
  std::string name;
  std::string model; // relative to the repository
  std::string planner = "ilp";
  std::map<std::string, Shape> shapes;
  std::vector<SymbolicDim> dims;  // --dim
  std::set<std::string> disabled; // passes skipped (--disable-pass)
  // Each entry: tokens that must all describe one group of the plan (see group_tokens).
  std::vector<std::vector<std::string>> expect;
};

[[noreturn]] void manifest_error(const std::string& where, const std::string& what) {
  throw std::runtime_error(fmt::format("{}: {}", where, what));
}

std::vector<std::string> split(const std::string& text, char separator) {
  std::vector<std::string> parts;
  std::string part;
  std::istringstream in(text);
  while (std::getline(in, part, separator))
    parts.push_back(part);
  return parts;
}

std::vector<Case> read_cases(const fs::path& file) {
  std::ifstream in(file);
  if (!in) manifest_error(file.string(), "cannot read the list of cases");
  std::vector<Case> cases;
  std::set<std::string> names;
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    const std::string where = fmt::format("{}:{}", file.string(), number);
    line = line.substr(0, line.find('#'));
    std::istringstream words(line);
    std::string first;
    if (!(words >> first)) continue;
    // An indented line goes on with the case above it.
    const bool continued = line[0] == ' ' || line[0] == '\t';
    if (continued && cases.empty()) manifest_error(where, "an indented line before any case");
    if (!continued) {
      Case c;
      c.name = first;
      if (!(words >> c.model)) manifest_error(where, "a case needs a name and a model");
      if (!names.insert(c.name).second) manifest_error(where, "case '" + c.name + "' twice");
      cases.push_back(std::move(c));
    } else {
      words.clear();
      words.str(line);
    }
    Case& c = cases.back();
    for (std::string word; words >> word;) {
      const size_t eq = word.find('=');
      const std::string key = word.substr(0, eq),
                        value = eq == word.npos ? "" : word.substr(eq + 1);
      if (key == "planner" && !value.empty()) {
        c.planner = value;
      } else if (key == "shape" && value.find('=') != value.npos) {
        const size_t at = value.find('=');
        std::optional<Shape> shape = parse_shape_spec(value.substr(at + 1));
        if (!shape) manifest_error(where, "shape '" + value + "' is not INPUT=DIMS");
        c.shapes[value.substr(0, at)] = *shape;
      } else if (key == "dim" && !value.empty()) {
        std::optional<SymbolicDim> dim = parse_dim_spec(value);
        if (!dim) manifest_error(where, "dim '" + value + "' is not NAME=MIN..MAX[@TYPICAL]");
        c.dims.push_back(*dim);
      } else if (key == "expect" && !value.empty()) {
        c.expect.push_back(split(value, '+'));
      } else if (key == "disable" && !value.empty()) {
        c.disabled.insert(value);
      } else {
        manifest_error(
            where, "'" + word +
                       "' is not planner=P, shape=INPUT=DIMS, dim=NAME=MIN..MAX, disable=PASS or "
                       "expect=A+B");
      }
    }
  }
  return cases;
}

// Symbolic dims: a model fixture X.onnx with X.inputs.json beside it (tests/models) gets every
// input's shape from it, its named dims resolved through "dims", as the model tests bind them.
// A fixture whose dims are ranges (tests/models/dynamic) keeps its symbols: the case's dim=
// ranges them.
void bind_fixture_shapes(const fs::path& model, LoadOptions& load) {
  fs::path spec_path = model;
  spec_path.replace_extension(".inputs.json");
  std::ifstream f(spec_path);
  if (!f) return;
  const nlohmann::json spec = nlohmann::json::parse(f);
  if (spec.contains("dims"))
    for (const auto& [name, value] : spec.at("dims").items())
      if (value.is_object()) return;
  for (const auto& input : spec.at("inputs")) {
    Shape shape;
    for (const auto& d : input.at("shape"))
      shape.push_back(d.is_string() ? spec.at("dims").at(d.get<std::string>()).get<int64_t>()
                                    : d.get<int64_t>());
    load.input_shapes.emplace(input.at("name").get<std::string>(), sym_shape_of(shape));
  }
}

// ---- plan.txt: the plan, as the report (plan_to_json) gives it, one block per group ----

std::string json_value(const nlohmann::json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_array()) {
    std::vector<std::string> items;
    for (const auto& item : v)
      items.push_back(json_value(item));
    return "[" + fmt::format("{}", fmt::join(items, ",")) + "]";
  }
  return v.dump();
}

// The report's group fields worth a line, in this order; any field the report gains later is
// printed after them. Costs and byte estimates are left out (the cost model's business), and so
// are the tensor lists (the kernels' banners list their parameters).
const std::vector<std::string>& group_field_order() {
  static const std::vector<std::string> order =
      split("scheme mapping grid block dynamic_shared_bytes vector_width cooperative "
            "min_blocks_per_sm rows row_length scratch_bytes scratch_offset parts part_blocks",
            ' ');
  return order;
}
const std::set<std::string> kOmittedFields = {
    "id", "kind", "nodes", "file", "inputs", "outputs", "estimated_bytes", "estimated_cost"};
// Values that say nothing beyond the default.
bool is_default(const std::string& key, const nlohmann::json& v) {
  return (key == "dynamic_shared_bytes" && v == 0) || (key == "vector_width" && v == 1) ||
         (key == "cooperative" && v == false);
}

std::vector<std::pair<std::string, std::string>> group_fields(const nlohmann::json& group) {
  std::vector<std::pair<std::string, std::string>> fields;
  auto add = [&](const std::string& key) {
    if (group.contains(key) && !is_default(key, group[key]))
      fields.emplace_back(key, json_value(group[key]));
  };
  const std::vector<std::string>& order = group_field_order();
  for (const std::string& key : order)
    add(key);
  for (const auto& [key, value] : group.items())
    if (!kOmittedFields.count(key) && std::find(order.begin(), order.end(), key) == order.end())
      add(key);
  return fields;
}

std::string plan_summary(const Case& c, const nlohmann::json& plan, const FusionPlan& fusion) {
  std::string out = fmt::format("# The fusion plan of {} (planner {}", c.model, c.planner);
  if (fusion.ilp.ran)
    out += fmt::format(", {}{}", fusion.ilp.status,
                       fusion.ilp.exhaustive ? ", every subset a candidate" : "");
  out += "), CUDA target, default DeviceParams (H100).\n";
  out += "# Written by stitch_snapshots (tests/snapshots); the group sources are beside it.\n";
  const nlohmann::json& totals = plan["totals"];
  auto count = [&](const char* key, const char* one, const char* many) {
    return fmt::format("{} {}", json_value(totals[key]), totals[key] == 1 ? one : many);
  };
  out += fmt::format("# {}, {}; arena peak {} bytes, weights {} bytes, {}.\n",
                     count("groups", "group", "groups"), count("launches", "launch", "launches"),
                     json_value(totals["arena_peak_bytes"]), json_value(totals["weights_bytes"]),
                     count("output_copies", "output copy", "output copies"));
  auto describe = [&](const nlohmann::json& group) {
    out += fmt::format("\ngroup {} {}", json_value(group["id"]), json_value(group["kind"]));
    if (group.contains("file")) out += " (" + json_value(group["file"]) + ")";
    out += "\n";
    std::vector<std::string> fields;
    for (const auto& [key, value] : group_fields(group))
      fields.push_back(key + "=" + value);
    if (!fields.empty()) out += fmt::format("  {}\n", fmt::join(fields, " "));
    for (const nlohmann::json& node : group["nodes"])
      out += fmt::format("  {} '{}'\n", json_value(node["op"]), json_value(node["name"]));
  };
  for (const nlohmann::json& group : plan["groups"])
    describe(group);
  for (const nlohmann::json& fallback : plan["fallbacks"]) {
    out += fmt::format("\n# GEMM chain {}'s unfused plan, where the device cannot hold its "
                       "clusters (the unfused chains share a buffer of {} bytes)\n",
                       json_value(fallback["chain_group"]), json_value(totals["fallback_bytes"]));
    for (const nlohmann::json& group : fallback["groups"])
      describe(group);
  }
  return out;
}

// What an expect= entry matches against: the group's kind, each field's name, name=value and
// string value, and the op of each of its nodes. "Regional+BlockPerRow+dynamic_shared_bytes".
std::set<std::string> group_tokens(const nlohmann::json& group) {
  std::set<std::string> tokens = {json_value(group["kind"])};
  for (const auto& [key, value] : group_fields(group)) {
    tokens.insert(key);
    tokens.insert(key + "=" + value);
    if (group[key].is_string()) tokens.insert(value);
  }
  for (const nlohmann::json& node : group["nodes"])
    tokens.insert(json_value(node["op"]));
  return tokens;
}

// The expectations no group of the plan meets.
std::vector<std::string> unmet_expectations(const Case& c, const nlohmann::json& plan) {
  std::vector<std::string> unmet;
  for (const std::vector<std::string>& want : c.expect) {
    bool met = false;
    for (const nlohmann::json& group : plan["groups"]) {
      const std::set<std::string> tokens = group_tokens(group);
      met = met || std::all_of(want.begin(), want.end(),
                               [&](const std::string& t) { return tokens.count(t) > 0; });
    }
    if (!met) unmet.push_back(fmt::format("{}", fmt::join(want, "+")));
  }
  return unmet;
}

// ---- running a case ----

struct Snapshot {
  std::map<std::string, std::string> files; // name -> text
  std::vector<std::string> problems;        // reasons the case fails however the files compare
};

Snapshot generate(const fs::path& root, const Case& c) {
  LoadOptions load;
  for (const auto& [name, shape] : c.shapes)
    load.input_shapes[name] = sym_shape_of(shape);
  load.dims = c.dims;
  bind_fixture_shapes(root / c.model, load);
  Graph graph = load_onnx((root / c.model).string(), load);
  graph.source_file = c.model; // the emitter's banners name it: relative, the same everywhere
  PipelineOptions pipeline;
  pipeline.disabled = c.disabled;
  check_pipeline_options(pipeline);
  run_pipeline(graph, pipeline);
  PlannerOptions options;
  options.planner = c.planner;
  options.ilp_time_limit_s = kIlpTimeLimitSeconds;
  FusionPlan plan = plan_fusion(graph, options);
  MemoryPlan memory = plan_memory(graph, plan);
  const nlohmann::json plan_json = plan_to_json(graph, plan, memory);
  GeneratedModel model = emit_model(graph, plan, memory, "cuda");

  Snapshot s;
  if (plan.ilp.ran && plan.ilp.status != "optimal")
    s.problems.push_back(fmt::format(
        "the ILP stopped without proving its plan optimal ({} after {:.1f} s): the plan would "
        "depend on the machine's speed; pick a smaller model for a snapshot",
        plan.ilp.status, plan.ilp.solve_seconds));
  for (const std::string& e : unmet_expectations(c, plan_json))
    s.problems.push_back(fmt::format(
        "no group of the plan is {} (expect= in cases.txt): the case no longer covers what "
        "README.md says it does; see plan.txt",
        e));
  s.files["plan.txt"] = plan_summary(c, plan_json, plan);
  for (const GeneratedFile& f : model.groups)
    s.files[f.name] = f.text;
  s.files[model.launcher.name] = model.launcher.text;
  return s;
}

std::string read_file(const fs::path& path) {
  std::ifstream f(path, std::ios::binary);
  std::ostringstream text;
  text << f.rdbuf();
  return text.str();
}

void write_file(const fs::path& path, const std::string& text) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f << text;
  if (!f.flush()) throw std::runtime_error("cannot write " + path.string());
}

std::map<std::string, fs::path> checked_in_files(const fs::path& dir) {
  std::map<std::string, fs::path> files;
  if (!fs::is_directory(dir)) return files;
  for (const fs::directory_entry& e : fs::directory_iterator(dir))
    if (e.is_regular_file()) files[e.path().filename().string()] = e.path();
  return files;
}

// Compares; prints each difference. True when the case passes.
bool compare(const Case& c, const Snapshot& s, const fs::path& dir, const std::string& shown_dir) {
  for (const std::string& p : s.problems)
    std::printf("snapshots: %s: %s\n", c.name.c_str(), p.c_str());
  if (!fs::is_directory(dir)) {
    std::printf("snapshots: %s: no snapshot in %s (run scripts/refresh-snapshots.sh)\n",
                c.name.c_str(), shown_dir.c_str());
    return false;
  }
  bool ok = true; // the files
  const std::map<std::string, fs::path> expected = checked_in_files(dir);
  for (const auto& [name, path] : expected)
    if (!s.files.count(name)) {
      std::printf("snapshots: %s: %s/%s is no longer generated\n", c.name.c_str(),
                  shown_dir.c_str(), name.c_str());
      ok = false;
    }
  for (const auto& [name, text] : s.files) {
    auto it = expected.find(name);
    if (it == expected.end()) {
      std::printf("snapshots: %s: %s is generated but not checked in (%zu lines)\n", c.name.c_str(),
                  name.c_str(), split_lines(text).size());
      ok = false;
      continue;
    }
    const std::string old_text = read_file(it->second);
    if (old_text == text) continue;
    ok = false;
    const std::vector<std::string> a = split_lines(old_text), b = split_lines(text);
    std::printf("snapshots: %s: %s/%s differs from the generated code, first at line %zu\n"
                "--- %s/%s (checked in)\n+++ %s (generated now)\n%s",
                c.name.c_str(), shown_dir.c_str(), name.c_str(), first_difference(a, b),
                shown_dir.c_str(), name.c_str(), name.c_str(),
                unified_diff(a, b, kDiffLinesPerFile).c_str());
  }
  if (!ok)
    std::printf("snapshots: %s: FAILED. If the change in the generated code is intended, run "
                "scripts/refresh-snapshots.sh, review the diff and commit it.\n",
                c.name.c_str());
  else if (!s.problems.empty())
    std::printf("snapshots: %s: FAILED (the files match). Fix the case in "
                "tests/snapshots/cases.txt (its model, planner or expect=) and README.md.\n",
                c.name.c_str());
  return ok && s.problems.empty();
}

// Rewrites the case's folder; true when the case has no other problem.
bool update(const Case& c, const Snapshot& s, const fs::path& dir) {
  fs::create_directories(dir);
  std::vector<std::string> changes;
  for (const auto& [name, path] : checked_in_files(dir))
    if (!s.files.count(name)) {
      fs::remove(path);
      changes.push_back("removed " + name);
    }
  for (const auto& [name, text] : s.files) {
    const fs::path path = dir / name;
    const bool existed = fs::exists(path);
    if (existed && read_file(path) == text) continue;
    write_file(path, text);
    changes.push_back((existed ? "updated " : "added ") + name);
  }
  std::printf("snapshots: %s: %s\n", c.name.c_str(),
              changes.empty() ? "unchanged" : fmt::format("{}", fmt::join(changes, ", ")).c_str());
  for (const std::string& p : s.problems)
    std::printf("snapshots: %s: %s\n", c.name.c_str(), p.c_str());
  return s.problems.empty();
}

// expected/ holds exactly the cases' folders; with `fix`, stale folders are removed.
bool check_tree(const std::vector<Case>& cases, const fs::path& expected_root, bool fix) {
  std::set<std::string> names;
  for (const Case& c : cases)
    names.insert(c.name);
  bool ok = true;
  std::set<std::string> present;
  if (fs::is_directory(expected_root))
    for (const fs::directory_entry& e : fs::directory_iterator(expected_root)) {
      if (!e.is_directory()) continue;
      const std::string name = e.path().filename().string();
      present.insert(name);
      if (names.count(name)) continue;
      if (fix) {
        fs::remove_all(e.path());
        std::printf("snapshots: removed expected/%s (no such case in cases.txt)\n", name.c_str());
      } else {
        std::printf("snapshots: expected/%s belongs to no case of cases.txt\n", name.c_str());
        ok = false;
      }
    }
  if (!fix)
    for (const std::string& name : names)
      if (!present.count(name)) {
        std::printf("snapshots: case %s has no folder expected/%s\n", name.c_str(), name.c_str());
        ok = false;
      }
  return ok;
}

int usage() {
  std::fprintf(stderr, "usage: stitch_snapshots [--update] [--source-dir DIR] [CASE...]\n"
                       "       stitch_snapshots [--source-dir DIR] --check-tree\n");
  return 2;
}

int run(int argc, char** argv) {
  fs::path root = STITCH_SOURCE_DIR;
  bool update_files = false, tree_only = false;
  std::vector<std::string> selected;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--update") {
      update_files = true;
    } else if (arg == "--check-tree") {
      tree_only = true;
    } else if (arg == "--source-dir" && i + 1 < argc) {
      root = argv[++i];
    } else if (!arg.empty() && arg[0] == '-') {
      return usage();
    } else {
      selected.push_back(arg);
    }
  }
  const std::string shown_root = "tests/snapshots/expected";
  const fs::path expected_root = root / shown_root;
  const std::vector<Case> cases = read_cases(root / "tests/snapshots/cases.txt");
  if (tree_only) return check_tree(cases, expected_root, false) ? 0 : 1;
  for (const std::string& name : selected)
    if (std::none_of(cases.begin(), cases.end(), [&](const Case& c) { return c.name == name; })) {
      std::fprintf(stderr, "stitch_snapshots: no case '%s' in cases.txt\n", name.c_str());
      return 2;
    }
  int failed = 0;
  for (const Case& c : cases) {
    if (!selected.empty() && std::find(selected.begin(), selected.end(), c.name) == selected.end())
      continue;
    bool ok = false;
    try {
      const Snapshot s = generate(root, c);
      const fs::path dir = expected_root / c.name;
      ok = update_files ? update(c, s, dir) : compare(c, s, dir, shown_root + "/" + c.name);
      if (ok && !update_files)
        std::printf("snapshots: %s: ok (%zu files)\n", c.name.c_str(), s.files.size());
    } catch (const UserError& e) {
      std::printf("snapshots: %s: stitchc refused %s: %s\n", c.name.c_str(), c.model.c_str(),
                  e.what());
    } catch (const InternalError& e) {
      std::printf("snapshots: %s: internal compiler error: %s\n", c.name.c_str(), e.what());
    }
    failed += !ok;
  }
  if (update_files && selected.empty()) check_tree(cases, expected_root, true);
  if (failed) std::printf("snapshots: %d case%s failed\n", failed, failed == 1 ? "" : "s");
  return failed ? 1 : 0;
}

} // namespace

} // namespace stitch::snapshots

int main(int argc, char** argv) {
  try {
    return stitch::snapshots::run(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "stitch_snapshots: %s\n", e.what());
    return 2;
  }
}
