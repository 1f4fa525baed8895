// Unit tests of the conformance runner's pieces that need no compiler: the list files, the
// survey's decisions, and the refusal summaries the exclusions are grouped by.
#include <catch2/catch.hpp>

#include <fstream>

#include "run_node_test.h"
#include "survey_report.h"
#include "test_lists.h"

namespace fs = std::filesystem;
using namespace stitch::conformance;

namespace {

fs::path write_temp(const std::string& name, const std::string& text) {
  fs::path path = fs::temp_directory_path() / ("stitch_conformance_" + name);
  std::ofstream(path) << text;
  return path;
}

TestResult result(Verdict v, std::string detail = "") {
  TestResult r;
  r.verdict = v;
  r.detail = std::move(detail);
  return r;
}

} // namespace

TEST_CASE("an allowlist line may override the tolerance, with its reason") {
  auto entries =
      read_allowlist(write_temp("allow1", "# comment\n\ntest_a\n"
                                          "test_b  rtol=1e-2  # accumulates 10^4 terms\n"));
  REQUIRE(entries.size() == 2);
  CHECK(!entries[0].tolerance);
  CHECK(tolerance_of(entries[0]).rtol == 1e-3);
  REQUIRE(entries[1].tolerance);
  CHECK(entries[1].tolerance->rtol == 1e-2);
  CHECK(entries[1].tolerance->atol == 1e-5); // the default, kept
  CHECK(entries[1].reason == "accumulates 10^4 terms");
}

TEST_CASE("a tolerance override without a reason is rejected") {
  CHECK_THROWS(read_allowlist(write_temp("allow2", "test_b  atol=1e-3\n")));
}

TEST_CASE("a test listed twice is rejected") {
  CHECK_THROWS(read_allowlist(write_temp("allow3", "test_a\ntest_a\n")));
}

TEST_CASE("an exclusion needs its reason") {
  CHECK_THROWS(read_exclusions(write_temp("excl1", "test_if\n")));
  CHECK(read_exclusions(write_temp("excl2", "test_if  # control flow\n"))[0].reason ==
        "control flow");
}

TEST_CASE("the lists must cover the suite, each test once") {
  std::vector<AllowlistEntry> allowed = {{"test_a", std::nullopt, ""},
                                         {"test_gone", std::nullopt, ""}};
  std::vector<ExclusionEntry> excluded = {{"test_a", "why"}};
  std::string problems = check_lists_cover_suite({"test_a", "test_b"}, allowed, excluded);
  CHECK(problems.find("test_a: in both") != std::string::npos);
  CHECK(problems.find("test_b: in neither") != std::string::npos);
  CHECK(problems.find("test_gone: in the allowlist but not in the suite") != std::string::npos);
}

TEST_CASE("refusal summaries drop node names and counts, so one cause is one group") {
  CHECK(refusal_summary("unsupported ops: If x1 (first: unnamed writing 'res')") ==
        "unsupported ops: If");
  CHECK(refusal_summary("node 'n' (Cast): unsupported in code generation: dtype bfloat16") ==
        "unsupported in code generation: dtype bfloat16");
  CHECK(
      refusal_summary("node (Cast) writing 'y': unsupported in code generation: dtype bfloat16") ==
      "unsupported in code generation: dtype bfloat16");
  CHECK(refusal_summary("graph input 'like' has unsupported data type INT4") ==
        "graph input has unsupported data type INT4");
}

TEST_CASE("the survey keeps overrides and hand-written reasons, and reports regressions") {
  std::vector<NodeTest> tests = {{"test_a", {}, "Add", false, "broadcast"},
                                 {"test_b", {}, "If", false, "not in the op table"},
                                 {"test_c", {}, "Relu", false, "elementwise"},
                                 {"test_d", {}, "Relu", false, "elementwise"}};
  std::vector<TestResult> results = {
      result(Verdict::Pass), result(Verdict::Refused, "unsupported ops: If x1 (first: 'n')"),
      result(Verdict::Fail, "output 'y': MISMATCH"), result(Verdict::Fail, "output 'y': MISMATCH")};
  stitch::run::Tolerance loose{1e-2, 1e-5};
  SurveyLists lists =
      survey_lists(tests, results, {{"test_a", loose, "why"}, {"test_c", std::nullopt, ""}},
                   {{"test_d", "known bug #12"}});
  REQUIRE(lists.allowlist.size() == 1);
  CHECK(lists.allowlist[0].tolerance->rtol == 1e-2);
  REQUIRE(lists.exclusions.size() == 3);
  CHECK(lists.exclusions[0].reason == "unsupported ops: If");
  CHECK(lists.exclusions[1].reason == "fails: output 'y': MISMATCH");
  CHECK(lists.exclusions[2].reason == "known bug #12");
  CHECK(lists.regressions == std::vector<std::string>{"test_c"});
}

TEST_CASE("the doc's Real models section lists every fixture with its exporter, opset and ops") {
  const std::string md = models_markdown(STITCH_SOURCE_DIR "/tests/models");
  REQUIRE(md.rfind("## Real models", 0) == 0);
  CHECK(md.find("| `bert_ts16` | torchscript | 16 | input_ids int64[batchx16]") !=
        std::string::npos);
  CHECK(md.find("| `resnet18_dynamo18` | dynamo | 18 |") != std::string::npos);
  CHECK(md.find("Softmax (2)") != std::string::npos);                     // bert_ts16's op counts
  CHECK(models_markdown(STITCH_SOURCE_DIR "/tests/conformance").empty()); // no fixtures there
}
