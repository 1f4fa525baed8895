// Discovering the ONNX backend node tests and the op each one exercises.
#include "node_suite.h"

#include <onnx/onnx_pb.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <stdexcept>

#include "graph/ops.h"

namespace fs = std::filesystem;

namespace stitch::conformance {

namespace {

constexpr const char* kNotInOpTable = "not in the op table";

// The op of a single-node model ("" when the model has no node).
std::string single_node_op(const fs::path& model_path) {
  std::ifstream f(model_path, std::ios::binary);
  onnx::ModelProto model;
  if (!f || !model.ParseFromIstream(&f))
    throw std::runtime_error("cannot read " + model_path.string());
  if (model.graph().node_size() == 0) return "";
  const onnx::NodeProto& node = model.graph().node(0);
  bool default_domain = node.domain().empty() || node.domain() == "ai.onnx";
  return default_domain ? node.op_type() : node.domain() + "." + node.op_type();
}

// "test_softmax_axis_0_expanded_ver18" -> "test_softmax_axis_0"; other names unchanged.
std::string base_test_name(const std::string& name) {
  size_t at = name.find("_expanded");
  return at == std::string::npos ? name : name.substr(0, at);
}

bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

} // namespace

const std::vector<std::string>& report_categories() {
  static const std::vector<std::string> categories = {
      "elementwise", "broadcast", "reduction", "softmax", "normalization", "matmul/gemm",
      "conv",        "pooling",   "movement",  "opaque",  kNotInOpTable};
  return categories;
}

std::string report_category(const std::string& op) {
  std::optional<OpKind> kind = op_from_onnx(op);
  if (!kind || op_is_internal(*kind)) return kNotInOpTable;
  // The requirement's headings that the op table does not have as categories of their own.
  if (op == "Softmax" || op == "LogSoftmax") return "softmax";
  if (ends_with(op, "Normalization")) return "normalization";
  if (ends_with(op, "Pool")) return "pooling";
  switch (op_category(*kind)) {
  case OpCategory::Elementwise:
    return "elementwise";
  case OpCategory::Broadcast:
    return "broadcast";
  case OpCategory::Reduction:
    return "reduction";
  case OpCategory::Movement:
    return "movement";
  case OpCategory::Gemm:
    return "matmul/gemm";
  case OpCategory::Conv:
    return "conv";
  case OpCategory::Opaque:
    return "opaque";
  }
  return kNotInOpTable;
}

std::vector<NodeTest> discover_node_tests(const fs::path& root) {
  if (!fs::is_directory(root))
    throw std::runtime_error("no ONNX backend node tests at " + root.string() +
                             " (install the test requirements: scripts/install-deps.sh)");
  std::vector<NodeTest> tests;
  for (const auto& entry : fs::directory_iterator(root))
    if (fs::exists(entry.path() / "model.onnx"))
      tests.push_back({entry.path().filename().string(), entry.path(), "", false, ""});
  std::sort(tests.begin(), tests.end(),
            [](const NodeTest& a, const NodeTest& b) { return a.name < b.name; });

  std::map<std::string, std::string> op_of_plain_test;
  for (const NodeTest& t : tests)
    if (base_test_name(t.name) == t.name)
      op_of_plain_test[t.name] = single_node_op(t.dir / "model.onnx");
  for (NodeTest& t : tests) {
    std::string base = base_test_name(t.name);
    t.expanded = base != t.name;
    auto found = op_of_plain_test.find(base);
    t.op = found != op_of_plain_test.end() ? found->second : single_node_op(t.dir / "model.onnx");
    if (t.op.empty()) t.op = "(no node)";
    t.category = report_category(t.op);
  }
  return tests;
}

} // namespace stitch::conformance
