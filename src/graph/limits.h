// The caps stitchc puts on one model. A model ONNX allows but that would exhaust the
// compiler's memory or time — millions of nodes, a tensor of a trillion elements, weights
// beyond any GPU, an attribute with a hundred million entries — is refused with a UserError
// naming the node or tensor, the cap, and the stitchc flag that raises it. The defaults are
// far above today's models (a 7B-parameter float32 model is 28 GB of weights).
#pragma once

#include <cstdint>

namespace stitch {

struct ModelLimits {
  int64_t max_nodes = int64_t{1} << 20;              // --max-nodes: nodes in the graph
  int64_t max_weight_bytes = int64_t{64} << 30;      // --max-weight-bytes: all constants together
  int64_t max_tensor_elements = int64_t{1} << 36;    // --max-tensor-elements: any one tensor
  int64_t max_attribute_elements = int64_t{1} << 24; // --max-attribute-elements: entries of one
                                                     // attribute list, or bytes of its strings
};

} // namespace stitch
