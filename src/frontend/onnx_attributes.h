// Conversion of ONNX AttributeProtos into stitchc Attributes.
#pragma once

#include <onnx/onnx_pb.h>

#include "frontend/onnx_tensor.h"
#include "graph/error.h"
#include "graph/graph.h"

namespace stitch {

// A TENSOR attribute becomes a constant tensor added to `graph`; its id is the value.
// Graph-valued attributes, references to function attributes and sparse tensors are refused,
// and so is a list or string longer than ModelLimits::max_attribute_elements.
Attribute attribute_from_onnx(onnx::AttributeProto& proto, Graph& graph,
                              const std::string& model_dir, const ErrorSite& where,
                              ConstantBudget& budget);

} // namespace stitch
