// Name and category lookups over the operator table (ops.def).
#include "graph/ops.h"

#include <iterator>

namespace stitch {

namespace {
struct OpInfo {
  std::string_view name;
  OpCategory category;
  std::string_view device;
};

constexpr OpInfo kOps[] = {
#define STITCH_OP(name, category, rule, fold, device) {#name, OpCategory::category, device},
#include "graph/ops.def"
#undef STITCH_OP
};
} // namespace

std::string_view op_name(OpKind op) { return kOps[static_cast<int>(op)].name; }
OpCategory op_category(OpKind op) { return kOps[static_cast<int>(op)].category; }
std::string_view op_device_function(OpKind op) { return kOps[static_cast<int>(op)].device; }

std::string_view category_name(OpCategory c) {
  switch (c) {
  case OpCategory::Elementwise:
    return "elementwise";
  case OpCategory::Broadcast:
    return "broadcast";
  case OpCategory::Reduction:
    return "reduction";
  case OpCategory::Movement:
    return "movement";
  case OpCategory::Gemm:
    return "gemm";
  case OpCategory::Conv:
    return "conv";
  case OpCategory::Opaque:
    return "opaque";
  }
  return "?";
}

bool op_is_internal(OpKind op) { return op == OpKind::View; }

bool op_reinterprets_storage(OpKind op) {
  switch (op) {
  case OpKind::Identity:
  case OpKind::Dropout:
  case OpKind::Reshape:
  case OpKind::Flatten:
  case OpKind::Squeeze:
  case OpKind::Unsqueeze:
  case OpKind::View:
    return true;
  default:
    return false;
  }
}

bool op_is_pointwise(OpKind op) {
  const OpCategory c = op_category(op);
  if (c != OpCategory::Elementwise && c != OpCategory::Broadcast) return false;
  return !op_device_function(op).empty() || op == OpKind::Cast || op == OpKind::CastLike ||
         op == OpKind::Expand;
}

std::optional<OpKind> op_from_onnx(std::string_view op_type) {
  for (size_t i = 0; i < std::size(kOps); ++i) {
    auto op = static_cast<OpKind>(i);
    if (kOps[i].name == op_type && !op_is_internal(op)) return op;
  }
  return std::nullopt;
}

} // namespace stitch
