// One backend node test: freeze what must be frozen, stitchc, stitch-run, verdict.
#include "run_node_test.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <optional>
#include <regex>
#include <sstream>

#include "backend/shape_input_freezing.h"
#include "driver/subprocess.h"
#include "graph/error.h"

namespace fs = std::filesystem;

namespace stitch::conformance {

namespace {

constexpr size_t kMaxLogBytes = 6000;

TestResult verdict(Verdict v, std::string detail, std::string log = {}) {
  TestResult r;
  r.verdict = v;
  r.detail = std::move(detail);
  r.log = log.size() > kMaxLogBytes ? log.substr(0, kMaxLogBytes) + "\n[...]" : std::move(log);
  return r;
}

bool is_unsupported(const std::string& message) {
  return message.find("unsupported") != std::string::npos;
}

// The files stitch-run binds: each remaining graph input to its input_N.pb, each graph output
// to its output_N.pb (N the position in the model).
struct Bindings {
  std::vector<std::string> inputs;   // NAME=FILE
  std::vector<std::string> expected; // NAME=FILE
};

// What loading the model in-process decided; `problem` set when it went no further.
struct Prepared {
  std::optional<TestResult> problem;
  std::map<std::string, std::string> frozen; // NAME -> input_N.pb, for --freeze-input
  std::vector<std::string> frozen_order;
  Bindings bindings;
};

Prepared prepare(const NodeTest& test) {
  Prepared p;
  fs::path data = test.dir / "test_data_set_0";
  try {
    LoadOptions options;
    Graph g = testing::load_freezing_shape_inputs(test.dir, options, p.frozen_order);
    p.frozen = options.frozen_inputs;
    std::vector<std::string> model_inputs = testing::model_input_names(test.dir / "model.onnx");
    for (TensorId id : g.inputs) {
      const std::string& name = g.tensor(id).name;
      auto at = std::find(model_inputs.begin(), model_inputs.end(), name);
      fs::path pb = data / fmt::format("input_{}.pb", at - model_inputs.begin());
      if (at == model_inputs.end() || !fs::exists(pb)) {
        p.problem = verdict(Verdict::Fail, fmt::format("no test data for graph input '{}'", name));
        return p;
      }
      p.bindings.inputs.push_back(name + "=" + pb.string());
    }
    for (size_t i = 0; i < g.outputs.size(); ++i) {
      fs::path pb = data / fmt::format("output_{}.pb", i);
      if (fs::exists(pb))
        p.bindings.expected.push_back(g.tensor(g.outputs[i]).name + "=" + pb.string());
    }
    if (p.bindings.expected.empty())
      p.problem = verdict(Verdict::Fail, "the test has no output_N.pb to compare with");
  } catch (const UserError& e) {
    std::string message =
        format_user_error({"", e.site().node, e.site().op_type, e.site().output}, e.reason());
    p.problem = verdict(is_unsupported(e.reason()) ? Verdict::Refused : Verdict::Fail,
                        is_unsupported(e.reason()) ? e.reason() : "frontend: " + message);
  } catch (const std::exception& e) {
    p.problem = verdict(Verdict::Fail, std::string("frontend: ") + e.what());
  }
  return p;
}

struct ToolRun {
  CommandResult result;
  double seconds;
};

ToolRun run_tool(const std::vector<std::string>& argv, const fs::path& dir, int timeout_seconds) {
  auto start = std::chrono::steady_clock::now();
  std::vector<CommandResult> results =
      run_commands({{argv, argv[0]}}, dir.string(), 1, timeout_seconds);
  std::chrono::duration<double> took = std::chrono::steady_clock::now() - start;
  return {results.at(0), took.count()};
}

std::string abnormal_end(const char* tool, const CommandResult& r, int timeout_seconds) {
  if (r.timed_out) return fmt::format("{} timed out after {} s", tool, timeout_seconds);
  if (r.output.rfind("cannot run", 0) == 0) return r.output;
  return fmt::format("{} crashed (killed by a signal)", tool);
}

// "compiling ... failed (exit code 1): g++ ARGS... In file included ... group_000.cu:17:34:
// error: WHAT ..." -> "compiling ... failed (exit code 1): group_000.cu:17:34: error: WHAT ...",
// short enough for one line of the exclusions.
std::string condense_compiler_failure(const std::string& message) {
  constexpr size_t kKeep = 160;
  size_t failed = message.find(" failed (");
  size_t error = message.find(" error: ");
  if (failed == std::string::npos || error == std::string::npos || error < failed) return message;
  size_t head_end = message.find("): ", failed);
  if (head_end == std::string::npos || head_end > error) return message;
  size_t location = message.rfind(' ', error - 1); // "group_000.cu:17:34:" before " error: "
  std::string cause = message.substr(location + 1, kKeep);
  return message.substr(0, head_end + 3) + cause +
         (message.size() > location + 1 + kKeep ? " ..." : "");
}

// stitchc's one-line error without "stitchc: error: MODEL_PATH: ".
std::string stitchc_message(const std::string& output, const fs::path& model) {
  std::istringstream lines(output);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("stitchc: ", 0) != 0) continue;
    for (const std::string prefix : {"stitchc: error: ", "stitchc: "})
      if (line.rfind(prefix, 0) == 0) {
        line = line.substr(prefix.size());
        break;
      }
    std::string path = model.string() + ": ";
    if (line.rfind(path, 0) == 0) line = line.substr(path.size());
    return condense_compiler_failure(line);
  }
  return output.substr(0, output.find('\n'));
}

// The lines of stitch-run's report that say what mismatched, or its error, joined.
std::string stitch_run_problem(const std::string& output) {
  std::istringstream lines(output);
  std::vector<std::string> problems;
  for (std::string line; std::getline(lines, line);) {
    if (line.find("MISMATCH") == std::string::npos && line.rfind("stitch-run: ", 0) != 0) continue;
    size_t colon = line.find(".pb: "); // "    vs /long/path/output_0.pb: max abs err ..."
    if (colon != std::string::npos) {
      size_t slash = line.rfind('/', colon);
      line = line.substr(slash == std::string::npos ? 0 : slash + 1);
    }
    problems.push_back(line.substr(line.find_first_not_of(' ')));
  }
  if (problems.empty()) return "stitch-run failed without a message";
  return fmt::format("{}", fmt::join(problems, "; "));
}

} // namespace

const char* verdict_name(Verdict v) {
  switch (v) {
  case Verdict::Pass:
    return "PASS";
  case Verdict::Fail:
    return "FAIL";
  case Verdict::Refused:
    return "REFUSED";
  }
  return "?";
}

std::string refusal_summary(const std::string& reason) {
  static const std::regex node_site(R"(^node( '[^']*')?( \([^)]*\))?( writing '[^']*')?: )");
  static const std::regex first_nodes(R"( x\d+ \(first: [^)]*\))");
  static const std::regex input_name(R"(graph input '[^']*' )");
  std::string summary = std::regex_replace(reason, node_site, "");
  summary = std::regex_replace(summary, first_nodes, "");
  return std::regex_replace(summary, input_name, "graph input ");
}

namespace {

// stitchc MODEL -o LIBRARY [--target T] [--freeze-input ...]; nullopt when it built the library.
std::optional<TestResult> compile_model(const fs::path& model, const fs::path& library,
                                        const Prepared& prepared, const RunnerTools& tools,
                                        double& seconds) {
  std::vector<std::string> argv = {tools.stitchc, model.string(), "-o", library.string()};
  if (tools.target != "cuda") argv.insert(argv.end(), {"--target", tools.target});
  if (!tools.planner.empty()) argv.insert(argv.end(), {"--planner", tools.planner});
  for (const auto& [name, pb] : prepared.frozen)
    argv.insert(argv.end(), {"--freeze-input", name + "=" + pb});
  ToolRun compiled = run_tool(argv, library.parent_path(), tools.compile_timeout_seconds);
  seconds = compiled.seconds;
  const CommandResult& r = compiled.result;
  if (r.exit_code == 0) return std::nullopt;
  std::string message = r.exit_code < 0 ? abnormal_end("stitchc", r, tools.compile_timeout_seconds)
                                        : stitchc_message(r.output, model);
  if (r.exit_code == 1 && is_unsupported(message))
    return verdict(Verdict::Refused, message, r.output);
  bool names_tool = message.rfind("stitchc", 0) == 0 || message.rfind("cannot run", 0) == 0;
  return verdict(Verdict::Fail, names_tool ? message : "stitchc: " + message, r.output);
}

// stitch-run LIBRARY --input ... --expected ... --rtol R --atol A.
TestResult run_library(const fs::path& library, const Prepared& prepared,
                       const run::Tolerance& tolerance, const RunnerTools& tools, double& seconds) {
  std::vector<std::string> argv = {tools.stitch_run, library.string(),
                                   "--rtol",         fmt::format("{:g}", tolerance.rtol),
                                   "--atol",         fmt::format("{:g}", tolerance.atol)};
  for (const std::string& input : prepared.bindings.inputs)
    argv.insert(argv.end(), {"--input", input});
  for (const std::string& expected : prepared.bindings.expected)
    argv.insert(argv.end(), {"--expected", expected});
  ToolRun ran = run_tool(argv, library.parent_path(), tools.run_timeout_seconds);
  seconds = ran.seconds;
  const CommandResult& r = ran.result;
  if (r.exit_code == 0) return verdict(Verdict::Pass, "");
  std::string problem = r.exit_code < 0 ? abnormal_end("stitch-run", r, tools.run_timeout_seconds)
                                        : stitch_run_problem(r.output);
  return verdict(Verdict::Fail, problem, r.output);
}

} // namespace

TestResult run_node_test(const NodeTest& test, const run::Tolerance& tolerance,
                         const RunnerTools& tools) {
  Prepared prepared = prepare(test);
  if (prepared.problem) {
    prepared.problem->frozen_inputs = prepared.frozen_order;
    return *prepared.problem;
  }
  fs::path work = fs::absolute(tools.work_dir / test.name);
  fs::remove_all(work);
  fs::create_directories(work);
  fs::path library = work / "model.so";

  double compile_seconds = 0, run_seconds = 0;
  std::optional<TestResult> not_built =
      compile_model(test.dir / "model.onnx", library, prepared, tools, compile_seconds);
  TestResult result = not_built ? *not_built
                      : tools.target == "cuda"
                          ? verdict(Verdict::Pass, "") // nothing to run on
                          : run_library(library, prepared, tolerance, tools, run_seconds);
  result.compile_seconds = compile_seconds;
  result.run_seconds = run_seconds;
  result.frozen_inputs = prepared.frozen_order;
  if (!tools.keep_files && result.verdict != Verdict::Fail) fs::remove_all(work);
  return result;
}

} // namespace stitch::conformance
