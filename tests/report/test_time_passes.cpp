// --time-passes and the progress line: each phase's time on stderr; progress only on a
// terminal (run under script(1), which gives the command a pseudo-terminal) and never with
// --quiet; run_commands reports each command's time and calls on_done as commands finish.
#include <catch2/catch.hpp>

#include <regex>

#include "driver/subprocess.h"
#include "model_builder.h"
#include "planted_model.h"

using namespace stitch;

namespace {

// Runs stitchc on the planted model with `flags`, planning only; returns what it printed.
std::string run_stitchc(const std::vector<std::string>& flags, bool on_terminal = false) {
  std::string dir = test::fresh_temp_dir("time-passes").string();
  std::vector<std::string> argv = {STITCHC_PATH,    test::write_planted_model(dir),
                                   "--planner",     "ilp",
                                   "--report-html", dir + "/plan.html"};
  argv.insert(argv.end(), flags.begin(), flags.end());
  if (on_terminal) {
    std::string line;
    for (const std::string& a : argv)
      line += "'" + a + "' "; // test paths hold no quotes
    std::string script = find_program({"script"});
    REQUIRE(!script.empty()); // util-linux's script(1), in every Debian system
    argv = {script, "-q", "-e", "-c", line, "/dev/null"};
  }
  std::vector<CommandResult> r = run_commands({{argv, "stitchc"}}, dir, 1, 300);
  INFO(r[0].output);
  REQUIRE(r[0].exit_code == 0);
  return r[0].output;
}

bool has_time_line(const std::string& output, const std::string& phase) {
  return std::regex_search(output,
                           std::regex("stitchc: time: " + phase + " +[0-9]+\\.[0-9]{3} s\n"));
}

} // namespace

// Each phase stitchc went through has its line, the ILP solve inside planning included.
TEST_CASE("time-passes prints each phase's wall time") {
  std::string out = run_stitchc({"--time-passes"});
  INFO(out);
  for (const char* phase :
       {"load", "  pass infer-shapes", "  pass make-views", "passes", "plan \\(ilp planner\\)",
        "  ILP solve \\(GLPK\\)", "memory plan", "html report \\(Graphviz layout\\)", "total"})
    CHECK(has_time_line(out, phase));
  CHECK(out.find('\r') == std::string::npos); // not a terminal: no progress line
}

// Without the flag, a plan-only run prints nothing at all.
TEST_CASE("without --time-passes stitchc prints no timings") { CHECK(run_stitchc({}) == ""); }

// On a terminal the ILP solve shows its progress line; --quiet shows none.
TEST_CASE("progress shows on a terminal unless --quiet") {
  CHECK(run_stitchc({}, true).find("\rstitchc: solving the fusion ILP... (") != std::string::npos);
  std::string quiet = run_stitchc({"--quiet"}, true);
  CHECK(quiet.find("solving the fusion ILP") == std::string::npos);
  CHECK(quiet.find("\033[K") == std::string::npos);
}

// Every command reports its wall time, and on_done counts the finished commands up to the total.
TEST_CASE("run_commands times each command and reports each finish") {
  std::vector<Command> commands;
  for (int i = 0; i < 3; ++i)
    commands.push_back({{"sh", "-c", "sleep 0.2"}, "sleeping"});
  std::vector<std::pair<size_t, size_t>> calls;
  std::vector<CommandResult> results =
      run_commands(commands, test::fresh_temp_dir("run-commands").string(), 2, 60,
                   [&](size_t done, size_t total) {
                     calls.push_back({done, total});
                   });
  REQUIRE(calls.size() == 3);
  for (size_t i = 0; i < calls.size(); ++i)
    CHECK(calls[i] == std::pair<size_t, size_t>{i + 1, 3});
  for (const CommandResult& r : results) {
    CHECK(r.exit_code == 0);
    CHECK(r.seconds >= 0.19);
    CHECK(r.seconds < 30);
  }
}
