// Names of the plan's enums, for reports and generated comments.
#include "planner/fusion_plan.h"

namespace stitch {

std::string_view group_kind_name(GroupKind k) {
  switch (k) {
  case GroupKind::Kernel:
    return "kernel";
  case GroupKind::GemmLibrary:
    return "cublaslt";
  case GroupKind::ConvLibrary:
    return "cudnn";
  case GroupKind::Attention:
    return "attention";
  case GroupKind::GemmChain:
    return "gemm_chain";
  case GroupKind::Alias:
    return "alias";
  }
  return "?";
}

std::string_view scheme_name(StitchScheme s) {
  switch (s) {
  case StitchScheme::Independent:
    return "independent";
  case StitchScheme::Local:
    return "local";
  case StitchScheme::Regional:
    return "regional";
  case StitchScheme::Global:
    return "global";
  }
  return "?";
}

std::string_view mapping_name(ThreadMapping m) {
  switch (m) {
  case ThreadMapping::Flat:
    return "flat";
  case ThreadMapping::WarpPerRow:
    return "warp-per-row";
  case ThreadMapping::BlockPerRow:
    return "block-per-row";
  }
  return "?";
}

std::string_view row_cache_name(RowCache c) {
  switch (c) {
  case RowCache::Registers:
    return "registers";
  case RowCache::Shared:
    return "shared";
  case RowCache::None:
    return "none";
  }
  return "?";
}

int64_t WindowGeometry::taps() const {
  int64_t taps = 1;
  for (int64_t k : kernel)
    taps *= k;
  return taps;
}

std::string_view spec_name(const GroupSpec& spec) {
  struct Name {
    std::string_view operator()(const OpSpec&) const { return "op"; }
    std::string_view operator()(const LocalSpec&) const { return "local"; }
    std::string_view operator()(const WindowSpec&) const { return "window"; }
    std::string_view operator()(const RegionalSpec&) const { return "regional"; }
    std::string_view operator()(const ColumnSpec&) const { return "column"; }
    std::string_view operator()(const RowGemvSpec&) const { return "row_gemv"; }
    std::string_view operator()(const IndependentSpec&) const { return "independent"; }
    std::string_view operator()(const GemmSpec&) const { return "gemm"; }
    std::string_view operator()(const ConvSpec&) const { return "conv"; }
    std::string_view operator()(const AttentionSpec&) const { return "attention"; }
    std::string_view operator()(const GemmChainSpec&) const { return "gemm_chain"; }
    std::string_view operator()(const AliasSpec&) const { return "alias"; }
  };
  return std::visit(Name{}, spec);
}

} // namespace stitch
