// AttributeProto -> Attribute, with the attribute's declared type checked against its fields.
#include "frontend/onnx_attributes.h"

#include "frontend/onnx_tensor.h"

namespace stitch {

namespace {

using AP = onnx::AttributeProto;

// Old exporters leave `type` unset; the one field that is set decides.
AP::AttributeType effective_type(const AP& a) {
  if (a.type() != AP::UNDEFINED) return a.type();
  if (a.has_i()) return AP::INT;
  if (a.has_f()) return AP::FLOAT;
  if (a.has_s()) return AP::STRING;
  if (a.has_t()) return AP::TENSOR;
  if (a.has_g()) return AP::GRAPH;
  if (a.ints_size()) return AP::INTS;
  if (a.floats_size()) return AP::FLOATS;
  if (a.strings_size()) return AP::STRINGS;
  return AP::UNDEFINED;
}

// The attribute's size as the limit counts it: list entries, plus the bytes of its strings.
int64_t attribute_elements(const AP& a) {
  int64_t count = a.ints_size() + a.floats_size() + a.strings_size();
  count += static_cast<int64_t>(a.s().size());
  for (const std::string& s : a.strings())
    count += static_cast<int64_t>(s.size());
  return count;
}

} // namespace

Attribute attribute_from_onnx(AP& proto, Graph& graph, const std::string& model_dir,
                              const ErrorSite& where, ConstantBudget& budget) {
  if (proto.name().empty()) user_fail(where, "an attribute has an empty name");
  if (!proto.ref_attr_name().empty())
    user_fail(where,
              "attribute '{}' refers to a function attribute; model-local functions are "
              "not supported",
              proto.name());
  const int64_t elements = attribute_elements(proto);
  if (elements > budget.limits.max_attribute_elements)
    user_fail(where,
              "attribute '{}' has {} entries (list elements and string bytes), more than "
              "the limit of {} (--max-attribute-elements)",
              proto.name(), elements, budget.limits.max_attribute_elements);
  Attribute attr;
  switch (effective_type(proto)) {
  case AP::INT:
    attr.value = static_cast<int64_t>(proto.i());
    break;
  case AP::FLOAT:
    attr.value = static_cast<double>(proto.f());
    break;
  case AP::STRING:
    attr.value = proto.s();
    break;
  case AP::INTS:
    attr.value = std::vector<int64_t>(proto.ints().begin(), proto.ints().end());
    break;
  case AP::FLOATS:
    attr.value = std::vector<double>(proto.floats().begin(), proto.floats().end());
    break;
  case AP::STRINGS:
    attr.value = std::vector<std::string>(proto.strings().begin(), proto.strings().end());
    break;
  case AP::TENSOR: {
    // Exporters leave attribute tensors unnamed: name them after the node and attribute.
    if (proto.t().name().empty())
      proto.mutable_t()->set_name(fmt::format(
          "{}.{}", where.node.empty() ? std::string(where.op_type) : where.node, proto.name()));
    Tensor t = tensor_from_onnx(*proto.mutable_t(), model_dir, where, budget);
    attr.value = graph.add_tensor(std::move(t));
    break;
  }
  case AP::UNDEFINED:
    user_fail(where, "attribute '{}' has no value", proto.name());
  default:
    user_fail(where,
              "attribute '{}' has an unsupported kind ({}): graphs, sparse tensors and "
              "type protos are not supported",
              proto.name(), AP::AttributeType_Name(effective_type(proto)));
  }
  return attr;
}

} // namespace stitch
