// The ONNX backend node test suite as the conformance runner sees it: one folder per test
// (model.onnx and test_data_set_0/{input,output}_N.pb), each test naming the ONNX op it
// exercises and the report category that op falls in.
//
// Every plain test of the suite is a single-node model, so its op is that node's op_type.
// A test_X_expanded (or test_X_expanded_ver18) model holds the function body of the op of
// test_X, many nodes of other ops; it is counted under test_X's op, since that is the op
// whose semantics it checks.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace stitch::conformance {

struct NodeTest {
  std::string name;          // "test_add"
  std::filesystem::path dir; // the folder holding model.onnx
  std::string op;            // "Add"; "DOMAIN.Op" for an op outside the default domain
  bool expanded = false;     // the function-body variant of another test
  std::string category;      // one of report_categories()
};

// Every test under `root` (the onnx package's backend/test/data/node), sorted by name.
// Throws std::runtime_error when the folder is missing or a model cannot be read.
std::vector<NodeTest> discover_node_tests(const std::filesystem::path& root);

// The report's categories, in the order docs/conformance.md shows them.
const std::vector<std::string>& report_categories();

// The category of an ONNX op: the category of its row in stitchc's op table (ops.def), with
// softmax, normalization and pooling ops under their own headings as the conformance
// requirement names them; "not in the op table" for ops stitchc does not know.
std::string report_category(const std::string& op);

} // namespace stitch::conformance
