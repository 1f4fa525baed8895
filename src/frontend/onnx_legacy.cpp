// onnx_legacy: the rewrites of onnx_legacy.h, one function per older form, applied node by node.
#include "frontend/onnx_legacy.h"

#include <onnx/defs/schema.h>
#include <onnx/shape_inference/implementation.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <optional>
#include <set>
#include <unordered_map>

#include "graph/error.h"

namespace stitch {

namespace {

constexpr int kUpgradedOpset = 7;
constexpr int kResizeOpset = 10; // the Resize whose (X, scales) form Upsample computes

const onnx::AttributeProto* find_attr(const onnx::NodeProto& node, const std::string& name) {
  for (const auto& a : node.attribute())
    if (a.name() == name) return &a;
  return nullptr;
}

void remove_attr(onnx::NodeProto& node, const std::string& name) {
  auto* attrs = node.mutable_attribute();
  attrs->erase(std::remove_if(attrs->begin(), attrs->end(),
                              [&](const onnx::AttributeProto& a) { return a.name() == name; }),
               attrs->end());
}

onnx::AttributeProto& set_attr(onnx::NodeProto& node, const std::string& name,
                               onnx::AttributeProto::AttributeType type) {
  remove_attr(node, name);
  onnx::AttributeProto& a = *node.add_attribute();
  a.set_name(name);
  a.set_type(type);
  return a;
}

// The rewrites of one model: fresh names for the constants and nodes they add, the ranks of
// values (from ONNX's shape inference, run once when a rewrite first needs one), errors.
class LegacyRewriter {
public:
  LegacyRewriter(onnx::ModelProto& model, int opset, const std::string& path)
      : model_(model), graph_(*model.mutable_graph()), opset_(opset), path_(path) {
    for (const auto& init : graph_.initializer())
      names_.insert(init.name());
    for (const auto& in : graph_.input())
      names_.insert(in.name());
    for (const auto& node : graph_.node())
      for (const auto& out : node.output())
        names_.insert(out);
  }

  std::vector<int> run() {
    std::vector<int> node_opsets;
    // Nodes this adds are appended; the loader orders nodes itself.
    const int original = graph_.node_size();
    for (int i = 0; i < original; ++i) {
      onnx::NodeProto& node = *graph_.mutable_node(i);
      if (!is_default_domain(node.domain())) continue;
      node_opsets.resize(static_cast<size_t>(i) + 1, 0);
      if (node.op_type() == "Upsample") {
        upsample(i);
        node_opsets[static_cast<size_t>(i)] = kResizeOpset;
        continue;
      }
      if (opset_ >= kUpgradedOpset) continue;
      remove_attr(node, "consumed_inputs");
      upgrade(i);
    }
    node_opsets.resize(static_cast<size_t>(graph_.node_size()), 0);
    if (opset_ < kUpgradedOpset)
      for (auto& imp : *model_.mutable_opset_import())
        if (is_default_domain(imp.domain())) imp.set_version(kUpgradedOpset);
    return node_opsets;
  }

private:
  ErrorSite site(const onnx::NodeProto& node) const {
    return {path_, node.name(), node.op_type(), first_output(node)};
  }

  std::string fresh_name(const onnx::NodeProto& node, const std::string& what) {
    std::string base = (node.name().empty() ? "legacy" : node.name()) + "/" + what;
    std::string name = base;
    for (int k = 1; names_.count(name); ++k)
      name = base + "_" + std::to_string(k);
    names_.insert(name);
    return name;
  }

  // A constant initializer of int64 or float values, named after `node`.
  std::string add_constant(const onnx::NodeProto& node, const std::string& what,
                           const std::vector<int64_t>& ints, const std::vector<float>& floats) {
    onnx::TensorProto& t = *graph_.add_initializer();
    t.set_name(fresh_name(node, what));
    if (floats.empty()) {
      t.set_data_type(onnx::TensorProto::INT64);
      t.add_dims(static_cast<int64_t>(ints.size()));
      for (int64_t v : ints)
        t.add_int64_data(v);
    } else {
      t.set_data_type(onnx::TensorProto::FLOAT);
      t.add_dims(static_cast<int64_t>(floats.size()));
      for (float v : floats)
        t.add_float_data(v);
    }
    return t.name();
  }

  const onnx::TensorProto* initializer(const std::string& name) const {
    for (const auto& init : graph_.initializer())
      if (init.name() == name) return &init;
    return nullptr;
  }

  void upgrade(int index) {
    onnx::NodeProto& node = *graph_.mutable_node(index);
    const std::string& op = node.op_type();
    if (op == "Cast") return cast(node);
    if (op == "Concat") return concat(node);
    if (op == "Reshape") return reshape(node);
    if (op == "Pad") return pad(node);
    if (op == "Split") return split(node);
    if (op == "BatchNormalization" || op == "Dropout") return inference_only(node);
    if (op == "Gemm") return remove_attr(node, "broadcast");
    if (op == "Tile")
      user_fail(site(node),
                "Tile of opset {} (repeats given as 'tiles' and 'axis'): stitchc reads Tile from "
                "opset 6 on",
                opset_);
    static const std::set<std::string> broadcasting = {
        "Add", "Sub", "Mul", "Div", "Pow", "And", "Or", "Xor", "Equal", "Greater", "Less"};
    if (broadcasting.count(op)) return legacy_broadcast(index);
  }

  // Cast before opset 6: `to` names the type ("FLOAT").
  void cast(onnx::NodeProto& node) {
    const onnx::AttributeProto* to = find_attr(node, "to");
    if (to == nullptr || to->type() != onnx::AttributeProto::STRING) return;
    onnx::TensorProto::DataType type{};
    if (!onnx::TensorProto::DataType_Parse(to->s(), &type))
      user_fail(site(node), "attribute 'to' names the unknown type \"{}\"", to->s());
    set_attr(node, "to", onnx::AttributeProto::INT).set_i(type);
  }

  // Concat before opset 4: `axis` defaults to 1.
  void concat(onnx::NodeProto& node) {
    if (opset_ < 4 && find_attr(node, "axis") == nullptr)
      set_attr(node, "axis", onnx::AttributeProto::INT).set_i(1);
  }

  // Reshape before opset 5: the target shape is the attribute `shape`.
  void reshape(onnx::NodeProto& node) {
    if (opset_ >= 5) return;
    const onnx::AttributeProto* shape = find_attr(node, "shape");
    if (shape == nullptr)
      user_fail(site(node), "Reshape of opset {} has no attribute 'shape'", opset_);
    std::vector<int64_t> dims(shape->ints().begin(), shape->ints().end());
    const std::string name = add_constant(node, "shape", dims, {});
    remove_attr(node, "shape");
    if (node.input_size() < 1) user_fail(site(node), "Reshape has no data input");
    while (node.input_size() > 1)
      node.mutable_input()->RemoveLast();
    node.add_input(name);
  }

  // Pad of opset 1: `paddings` was the name of `pads`.
  void pad(onnx::NodeProto& node) {
    const onnx::AttributeProto* paddings = find_attr(node, "paddings");
    if (paddings == nullptr) return;
    onnx::AttributeProto pads = *paddings;
    pads.set_name("pads");
    remove_attr(node, "paddings");
    remove_attr(node, "pads");
    *node.add_attribute() = pads;
  }

  // Split of opset 1: the sizes may come as a second input, which must be constant.
  void split(onnx::NodeProto& node) {
    if (node.input_size() < 2) return;
    if (!node.input(1).empty()) {
      const onnx::TensorProto* sizes = initializer(node.input(1));
      if (sizes == nullptr || sizes->data_type() != onnx::TensorProto::INT64 ||
          sizes->data_location() == onnx::TensorProto::EXTERNAL)
        user_fail(site(node),
                  "Split of opset 1 takes its sizes from input '{}', which stitchc reads only as "
                  "an int64 initializer stored in the model",
                  node.input(1));
      std::vector<int64_t> values(sizes->int64_data().begin(), sizes->int64_data().end());
      if (sizes->has_raw_data()) {
        const std::string& raw = sizes->raw_data();
        if (raw.size() % sizeof(int64_t) != 0)
          user_fail(site(node), "the raw data of Split's sizes '{}' is {} bytes, not int64s",
                    node.input(1), raw.size());
        values.resize(raw.size() / sizeof(int64_t));
        std::memcpy(values.data(), raw.data(), raw.size()); // little-endian, as ONNX stores it
      }
      auto& attr = set_attr(node, "split", onnx::AttributeProto::INTS);
      for (int64_t v : values)
        attr.add_ints(v);
    }
    node.mutable_input()->RemoveLast();
  }

  // BatchNormalization and Dropout before opset 7: `is_test` 1 is inference, the one mode a
  // compiled model runs.
  void inference_only(onnx::NodeProto& node) {
    const onnx::AttributeProto* is_test = find_attr(node, "is_test");
    if (is_test != nullptr && is_test->i() == 0 && node.op_type() == "BatchNormalization")
      user_fail(site(node), "is_test is 0 (training mode); stitchc compiles inference only");
    // Dropout in training mode drops nothing in inference (ONNX Runtime runs it as Identity).
    remove_attr(node, "is_test");
  }

  // Binary ops before opset 7: with broadcast=1 and `axis`, B's dims align with A's from
  // `axis` on; B gets trailing axes of 1 so that numpy-style broadcasting aligns it the same.
  void legacy_broadcast(int index) {
    onnx::NodeProto& node = *graph_.mutable_node(index);
    const onnx::AttributeProto* broadcast = find_attr(node, "broadcast");
    const onnx::AttributeProto* axis = find_attr(node, "axis");
    const bool broadcasts = broadcast != nullptr && broadcast->i() != 0;
    if (broadcasts && axis != nullptr && node.input_size() == 2) {
      const std::string a = node.input(0), b = node.input(1);
      const std::optional<int> rank_a = rank_of(a), rank_b = rank_of(b);
      if (!rank_a || !rank_b)
        user_fail(site(node),
                  "broadcasts '{}' onto '{}' from axis {} (opset {}), which needs both ranks, but "
                  "the rank of '{}' is unknown",
                  b, a, axis->i(), opset_, rank_a ? b : a);
      int64_t start = axis->i() < 0 ? axis->i() + *rank_a : axis->i();
      if (start < 0 || start + *rank_b > *rank_a)
        user_fail(site(node), "axis {} does not fit '{}' (rank {}) into '{}' (rank {})", axis->i(),
                  b, *rank_b, a, *rank_a);
      const int64_t trailing = *rank_a - start - *rank_b;
      if (trailing > 0) {
        onnx::NodeProto unsqueeze;
        unsqueeze.set_op_type("Unsqueeze");
        unsqueeze.set_name(fresh_name(node, "broadcast_axes"));
        unsqueeze.add_input(b);
        const std::string aligned = fresh_name(node, "aligned");
        unsqueeze.add_output(aligned);
        auto& axes = set_attr(unsqueeze, "axes", onnx::AttributeProto::INTS);
        for (int64_t k = 0; k < trailing; ++k)
          axes.add_ints(*rank_b + k);
        graph_.mutable_node(index)->set_input(1, aligned);
        *graph_.add_node() = std::move(unsqueeze);
      }
    }
    onnx::NodeProto& same = *graph_.mutable_node(index);
    remove_attr(same, "broadcast");
    remove_attr(same, "axis");
  }

  // Upsample -> Resize (opset 10): inputs (X, scales), mode nearest or linear.
  void upsample(int index) {
    onnx::NodeProto& node = *graph_.mutable_node(index);
    std::string mode = "nearest";
    if (const onnx::AttributeProto* m = find_attr(node, "mode")) mode = m->s();
    if (mode == "NN") mode = "nearest";
    if (mode == "BILINEAR" || mode == "bilinear") mode = "linear";
    if (mode != "nearest" && mode != "linear")
      user_fail(site(node), "attribute 'mode' is \"{}\"; Upsample's modes are nearest and linear",
                mode);
    std::vector<float> scales;
    if (const onnx::AttributeProto* s = find_attr(node, "scales")) {
      scales.assign(s->floats().begin(), s->floats().end());
    } else if (find_attr(node, "height_scale") != nullptr ||
               find_attr(node, "width_scale") != nullptr) {
      const onnx::AttributeProto* h = find_attr(node, "height_scale");
      const onnx::AttributeProto* w = find_attr(node, "width_scale");
      scales = {1.0f, 1.0f, h != nullptr ? h->f() : 1.0f, w != nullptr ? w->f() : 1.0f};
    } else if (node.input_size() < 2) {
      user_fail(site(node), "Upsample has neither a 'scales' attribute nor a scales input");
    }
    if (!scales.empty()) {
      const std::string name = add_constant(node, "scales", {}, scales);
      while (node.input_size() > 1)
        node.mutable_input()->RemoveLast();
      node.add_input(name);
    }
    for (const char* legacy : {"scales", "height_scale", "width_scale", "mode"})
      remove_attr(node, legacy);
    node.set_op_type("Resize");
    set_attr(node, "mode", onnx::AttributeProto::STRING).set_s(mode);
  }

  // The rank of value `name`: an initializer's, a graph input's, or what ONNX's shape
  // inference gives (run once, on the graph without its weights' data).
  std::optional<int> rank_of(const std::string& name) {
    if (const onnx::TensorProto* init = initializer(name)) return init->dims_size();
    if (!inferred_) infer_ranks();
    auto it = ranks_.find(name);
    if (it == ranks_.end()) return std::nullopt;
    return it->second;
  }

  void infer_ranks() {
    inferred_ = true;
    onnx::GraphProto skeleton;
    *skeleton.mutable_node() = graph_.node();
    *skeleton.mutable_input() = graph_.input();
    *skeleton.mutable_output() = graph_.output();
    *skeleton.mutable_value_info() = graph_.value_info();
    std::set<std::string> declared;
    for (const auto& in : graph_.input())
      declared.insert(in.name());
    for (const auto& init : graph_.initializer()) {
      if (declared.count(init.name())) continue;
      onnx::ValueInfoProto& in = *skeleton.add_input();
      in.set_name(init.name());
      auto& tt = *in.mutable_type()->mutable_tensor_type();
      tt.set_elem_type(init.data_type());
      auto& shape = *tt.mutable_shape();
      for (int64_t d : init.dims())
        shape.add_dim()->set_dim_value(d);
    }
    std::unordered_map<std::string, int> imports;
    for (const auto& imp : model_.opset_import())
      imports[is_default_domain(imp.domain()) ? "" : imp.domain()] =
          static_cast<int>(imp.version());
    try {
      onnx::shape_inference::InferShapes(&skeleton, imports);
    } catch (const std::exception&) {
      // What it inferred before failing stays; a rank still unknown is reported where needed.
    }
    auto note = [&](const onnx::ValueInfoProto& v) {
      if (v.type().has_tensor_type() && v.type().tensor_type().has_shape())
        ranks_[v.name()] = v.type().tensor_type().shape().dim_size();
    };
    for (const auto& v : skeleton.input())
      note(v);
    for (const auto& v : skeleton.value_info())
      note(v);
    for (const auto& v : skeleton.output())
      note(v);
  }

  onnx::ModelProto& model_;
  onnx::GraphProto& graph_;
  int opset_;
  std::string path_;
  std::set<std::string> names_;
  bool inferred_ = false;
  std::map<std::string, int> ranks_;
};

} // namespace

bool is_default_domain(const std::string& domain) { return domain.empty() || domain == "ai.onnx"; }

std::string first_output(const onnx::NodeProto& node) {
  for (const std::string& out : node.output())
    if (!out.empty()) return out;
  return "";
}

int upgraded_opset(int opset) {
  return opset > 0 && opset < kUpgradedOpset ? kUpgradedOpset : opset;
}

std::vector<int> upgrade_legacy_forms(onnx::ModelProto& model, int opset, const std::string& path) {
  return LegacyRewriter(model, opset, path).run();
}

} // namespace stitch
