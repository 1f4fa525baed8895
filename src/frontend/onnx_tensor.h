// Conversion of ONNX TensorProtos (initializers, Constant values) into constant stitchc
// tensors, including external data files, with every size and path checked.
#pragma once

#include <onnx/onnx_pb.h>

#include <string>

#include "graph/error.h"
#include "graph/graph.h"

namespace stitch {

// What the model's constants (initializers, Constant values, frozen inputs) have used of the
// ModelLimits so far: tensor_from_onnx checks each tensor's element count and charges its
// bytes before it reads any data.
struct ConstantBudget {
  explicit ConstantBudget(const ModelLimits& l) : limits(l) {}
  const ModelLimits& limits;
  int64_t bytes = 0;
};

// `model_dir` is the folder of the model file: external data must resolve beneath it.
// `site` names where the tensor appears, for messages. The proto's raw_data may be moved
// out of it.
Tensor tensor_from_onnx(onnx::TensorProto& proto, const std::string& model_dir,
                        const ErrorSite& site, ConstantBudget& budget);

} // namespace stitch
