// What a survey of the whole suite turns into: the new allowlist (every test that passed,
// keeping the tolerance overrides written before), the new exclusions (every other test with
// the reason observed, or a hand-written reason kept while the test still does not pass),
// and docs/conformance.md (pass counts per category and per op, exclusions by reason).
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "node_suite.h"
#include "run_node_test.h"
#include "test_lists.h"

namespace stitch::conformance {

struct SurveyLists {
  std::vector<AllowlistEntry> allowlist;
  std::vector<ExclusionEntry> exclusions;
  std::vector<std::string> regressions; // allowlisted before, not passing now
};

// `results[i]` is the result of `tests[i]`; `old_*` are the lists before the survey.
SurveyLists survey_lists(const std::vector<NodeTest>& tests, const std::vector<TestResult>& results,
                         const std::vector<AllowlistEntry>& old_allowlist,
                         const std::vector<ExclusionEntry>& old_exclusions);

// The "Real models" section of docs/conformance.md: the fixtures of `models_dir`
// (tests/models: each <name>.onnx with its <name>.inputs.json), their exporter, opset, inputs
// and ops, and how the models/* ctest targets check them. Empty when the folder has none.
std::string models_markdown(const std::string& models_dir);

// The text of docs/conformance.md. `suite_version` names the onnx package ("1.17.0");
// `models` is models_markdown's section, appended when not empty.
std::string conformance_markdown(const std::vector<NodeTest>& tests,
                                 const std::vector<TestResult>& results, const SurveyLists& lists,
                                 const std::string& suite_version, const std::string& models = {});

// One line per test, tab-separated: name, op, category, verdict, compile s, run s, detail.
std::string results_tsv(const std::vector<NodeTest>& tests, const std::vector<TestResult>& results);

} // namespace stitch::conformance
