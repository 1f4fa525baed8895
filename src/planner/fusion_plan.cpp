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

} // namespace stitch
