// stitch_conformance: runs ONNX backend node tests end to end (stitchc -> library ->
// stitch-run against output_N.pb) and keeps the conformance lists. Modes:
//
//   --list allowlist.txt [--shard I/N]   run the listed tests (every N-th from the I-th);
//                                        exit 1 when any fails. What ctest runs.
//   --survey --allowlist A --exclusions E --doc D [--results R.tsv]
//                                        run every test of the suite and rewrite A, E and D.
//   --check-lists --allowlist A --exclusions E
//                                        every test of the suite is in exactly one list.
//   TEST...                              run the named tests (tolerances from --allowlist).
//
// --target cuda compiles with nvcc only (the default stitchc target) and runs nothing.
#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <sys/resource.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <map>
#include <mutex>
#include <regex>
#include <thread>

#include "node_suite.h"
#include "run_node_test.h"
#include "survey_report.h"
#include "test_lists.h"

namespace fs = std::filesystem;
using namespace stitch::conformance;

namespace {

struct Options {
  std::string suite;
  RunnerTools tools;
  std::string list;
  std::string shard; // "I/N"
  bool survey = false;
  bool check_lists = false;
  std::string allowlist, exclusions, doc, results, models;
  std::vector<std::string> tests;
  int jobs = 1;
  bool verbose = false;
};

// The onnx package version of the suite, read from onnx/version.py beside it.
std::string suite_version(const fs::path& suite) {
  std::ifstream f(suite / ".." / ".." / ".." / ".." / "version.py");
  std::string text((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  std::smatch m;
  if (std::regex_search(text, m, std::regex(R"(version\s*=\s*['"]([^'"]+)['"])"))) return m[1];
  return "(unknown version)";
}

double children_cpu_seconds() {
  rusage usage{};
  getrusage(RUSAGE_CHILDREN, &usage);
  auto seconds = [](const timeval& t) { return double(t.tv_sec) + double(t.tv_usec) / 1e6; };
  return seconds(usage.ru_utime) + seconds(usage.ru_stime);
}

// Runs `tests` on `jobs` threads, printing one line per test as it ends.
std::vector<TestResult> run_all(const std::vector<NodeTest>& tests,
                                const std::vector<stitch::run::Tolerance>& tolerances,
                                const Options& o) {
  std::vector<TestResult> results(tests.size());
  std::atomic<size_t> next{0};
  std::mutex print;
  size_t done = 0;
  auto worker = [&] {
    for (size_t i = next++; i < tests.size(); i = next++) {
      results[i] = run_node_test(tests[i], tolerances[i], o.tools);
      std::lock_guard<std::mutex> lock(print);
      const TestResult& r = results[i];
      ++done;
      std::cout << fmt::format("[{}/{}] {:<7} {} ({:.1f} s)", done, tests.size(),
                               verdict_name(r.verdict), tests[i].name,
                               r.compile_seconds + r.run_seconds);
      if (!r.detail.empty()) std::cout << ": " << r.detail;
      if (!r.frozen_inputs.empty())
        std::cout << fmt::format(" [frozen: {}]", fmt::join(r.frozen_inputs, ", "));
      std::cout << "\n";
      if (r.verdict == Verdict::Fail && (o.verbose || !o.survey) && !r.log.empty())
        std::cout << r.log << (r.log.back() == '\n' ? "" : "\n");
      std::cout.flush();
    }
  };
  std::vector<std::thread> threads;
  for (int j = 1; j < o.jobs; ++j)
    threads.emplace_back(worker);
  worker();
  for (std::thread& t : threads)
    t.join();
  return results;
}

std::vector<NodeTest> select_shard(const std::vector<NodeTest>& tests, const std::string& shard) {
  if (shard.empty()) return tests;
  unsigned index = 0, count = 0;
  if (std::sscanf(shard.c_str(), "%u/%u", &index, &count) != 2 || count == 0 || index >= count)
    throw std::runtime_error("--shard '" + shard + "' is not I/N with 0 <= I < N");
  std::vector<NodeTest> picked;
  for (size_t i = index; i < tests.size(); i += count)
    picked.push_back(tests[i]);
  return picked;
}

void write_file(const std::string& path, const std::string& text) {
  std::ofstream f(path, std::ios::trunc);
  if (!f || !(f << text) || !f.flush()) throw std::runtime_error("cannot write " + path);
}

// A private work folder under $TMPDIR (or --work-dir), so parallel shards never share one.
fs::path make_work_dir(const fs::path& parent) {
  fs::create_directories(parent);
  std::string pattern = (parent / "stitch-conformance-XXXXXX").string();
  if (!mkdtemp(pattern.data()))
    throw std::runtime_error("cannot create a folder in " + parent.string());
  return pattern;
}

int run(const Options& o) {
  std::vector<NodeTest> suite = discover_node_tests(o.suite);
  std::map<std::string, const NodeTest*> by_name;
  for (const NodeTest& t : suite)
    by_name[t.name] = &t;
  std::vector<AllowlistEntry> allowlist;
  std::vector<ExclusionEntry> exclusions;
  std::string list_path = !o.list.empty() ? o.list : o.allowlist;
  // A survey may start without lists; every other mode reads the lists it is given.
  if (!list_path.empty() && (!o.survey || fs::exists(list_path)))
    allowlist = read_allowlist(list_path);
  if (!o.exclusions.empty() && (!o.survey || fs::exists(o.exclusions)))
    exclusions = read_exclusions(o.exclusions);
  std::map<std::string, stitch::run::Tolerance> tolerance;
  for (const AllowlistEntry& e : allowlist)
    tolerance[e.test] = tolerance_of(e);

  std::vector<std::string> names;
  for (const NodeTest& t : suite)
    names.push_back(t.name);
  if (o.check_lists) {
    std::string problems = check_lists_cover_suite(names, allowlist, exclusions);
    std::cout << (problems.empty() ? fmt::format("the lists cover the {} tests of the suite, each "
                                                 "once ({} allowed, {} excluded)\n",
                                                 suite.size(), allowlist.size(), exclusions.size())
                                   : problems);
    return problems.empty() ? 0 : 1;
  }

  std::vector<NodeTest> selected;
  if (o.survey) {
    selected = suite;
  } else {
    std::vector<std::string> wanted = o.tests;
    if (!o.list.empty())
      for (const AllowlistEntry& e : allowlist)
        wanted.push_back(e.test);
    for (const std::string& name : wanted) {
      auto found = by_name.find(name);
      if (found == by_name.end()) throw std::runtime_error(name + " is not a test of the suite");
      selected.push_back(*found->second);
    }
    selected = select_shard(selected, o.shard);
  }
  std::vector<stitch::run::Tolerance> tolerances;
  for (const NodeTest& t : selected)
    tolerances.push_back(tolerance.count(t.name) ? tolerance[t.name] : stitch::run::Tolerance{});

  auto start = std::chrono::steady_clock::now();
  std::vector<TestResult> results = run_all(selected, tolerances, o);
  std::chrono::duration<double> wall = std::chrono::steady_clock::now() - start;

  std::map<Verdict, std::vector<std::string>> by_verdict;
  for (size_t i = 0; i < selected.size(); ++i)
    by_verdict[results[i].verdict].push_back(selected[i].name);
  std::cout << fmt::format("\n{} tests: {} passed, {} failed, {} refused as unsupported; "
                           "{:.0f} s wall, {:.0f} s CPU in stitchc, compilers and stitch-run\n",
                           selected.size(), by_verdict[Verdict::Pass].size(),
                           by_verdict[Verdict::Fail].size(), by_verdict[Verdict::Refused].size(),
                           wall.count(), children_cpu_seconds());

  if (o.survey) {
    SurveyLists lists = survey_lists(selected, results, allowlist, exclusions);
    write_allowlist(o.allowlist, lists.allowlist);
    write_exclusions(o.exclusions, lists.exclusions);
    write_file(o.doc, conformance_markdown(selected, results, lists, suite_version(o.suite),
                                           o.models.empty() ? "" : models_markdown(o.models)));
    if (!o.results.empty()) write_file(o.results, results_tsv(selected, results));
    std::cout << fmt::format("wrote {} ({} tests), {} ({} tests) and {}\n", o.allowlist,
                             lists.allowlist.size(), o.exclusions, lists.exclusions.size(), o.doc);
    if (!lists.regressions.empty())
      std::cout << fmt::format("REGRESSIONS (allowlisted before, not passing now): {}\n",
                               fmt::join(lists.regressions, ", "));
    return 0;
  }
  std::vector<std::string> not_passing = by_verdict[Verdict::Fail];
  for (const std::string& n : by_verdict[Verdict::Refused])
    not_passing.push_back(n);
  if (!not_passing.empty())
    std::cout << fmt::format("NOT PASSING ({}): {}\n", not_passing.size(),
                             fmt::join(not_passing, " "));
  return not_passing.empty() ? 0 : 1;
}

} // namespace

int main(int argc, char** argv) {
  Options o;
  std::string work_parent = std::getenv("TMPDIR") ? std::getenv("TMPDIR") : "/tmp";
  CLI::App app{"stitch_conformance: the ONNX backend node suite end to end"};
  app.add_option("--suite", o.suite, "the onnx package's backend/test/data/node folder")
      ->required();
  app.add_option("--stitchc", o.tools.stitchc, "the stitchc executable")->required();
  app.add_option("--stitch-run", o.tools.stitch_run, "the stitch-run executable")->required();
  app.add_option("--target", o.tools.target, "host (default) or cuda (compile only)")
      ->check(CLI::IsMember({"host", "cuda"}));
  app.add_option("--planner", o.tools.planner, "stitchc's --planner (default: stitchc's own)");
  app.add_option("--list", o.list, "run the tests of this allowlist");
  app.add_option("--shard", o.shard, "I/N: only every N-th listed test, from the I-th");
  app.add_flag("--survey", o.survey, "run the whole suite and rewrite the lists and the doc");
  app.add_flag("--check-lists", o.check_lists, "check that the lists cover the suite");
  app.add_option("--allowlist", o.allowlist, "allowlist.txt");
  app.add_option("--exclusions", o.exclusions, "exclusions.txt");
  app.add_option("--doc", o.doc, "docs/conformance.md, written by --survey");
  app.add_option("--models", o.models,
                 "tests/models: its fixtures go into the doc's Real models section");
  app.add_option("--results", o.results, "a TSV of every result, written by --survey");
  app.add_option("-j,--jobs", o.jobs, "tests run at once (default 1)");
  app.add_option("--work-dir", work_parent, "where the private work folder goes (default $TMPDIR)");
  app.add_flag("--keep", o.tools.keep_files, "keep every test's folder");
  app.add_flag("-v,--verbose", o.verbose, "print the tools' output of failures in --survey too");
  app.add_option("tests", o.tests, "test names to run");
  CLI11_PARSE(app, argc, argv);
  try {
    if (o.survey && (o.allowlist.empty() || o.exclusions.empty() || o.doc.empty()))
      throw std::runtime_error("--survey needs --allowlist, --exclusions and --doc");
    if (o.check_lists && (o.allowlist.empty() || o.exclusions.empty()))
      throw std::runtime_error("--check-lists needs --allowlist and --exclusions");
    if (!o.survey && !o.check_lists && o.list.empty() && o.tests.empty())
      throw std::runtime_error(
          "nothing to run: give --list, --survey, --check-lists or test names");
    o.jobs = std::max(1, o.jobs);
    // The tools run inside each test's folder.
    o.suite = fs::absolute(o.suite).string();
    o.tools.stitchc = fs::absolute(o.tools.stitchc).string();
    o.tools.stitch_run = fs::absolute(o.tools.stitch_run).string();
    o.tools.work_dir = make_work_dir(work_parent);
    int status = run(o);
    std::error_code ignored;
    if (status == 0 && !o.tools.keep_files)
      fs::remove_all(o.tools.work_dir, ignored);
    else
      std::cout << "work folder kept: " << o.tools.work_dir.string() << "\n";
    return status;
  } catch (const std::exception& e) {
    std::cerr << "stitch_conformance: " << e.what() << "\n";
    return 2;
  }
}
