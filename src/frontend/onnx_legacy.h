// Older ONNX forms read as the forms stitchc knows: models of opsets 1-6 (the older model zoo,
// converters of the time) and Upsample (opsets 1-9).
//
// The op table reads every op in its form from opset 7 on. Before the graph is built, the
// frontend rewrites, in the ModelProto, each node of an older model that has an older form
// into that opset-7 form, and then declares the model opset 7:
//   - `consumed_inputs` (before opset 6) is dropped: it only described in-place reuse;
//   - Cast's `to` (a type name before opset 6) becomes the type's number;
//   - Concat's `axis` (optional before opset 4) becomes 1 where absent;
//   - Reshape's `shape` attribute (before opset 5) becomes its constant second input;
//   - Pad's `paddings` (opset 1) becomes `pads`;
//   - Split's second input `split` (opset 1), a constant, becomes the attribute;
//   - BatchNormalization's and Dropout's `is_test` (before opset 7) is dropped when it says
//     inference (1); training mode is refused;
//   - Gemm's `broadcast` (before opset 7) is dropped: C broadcasts by the newer rule, which
//     accepts every C the older one did;
//   - the binary ops that broadcast by `broadcast` and `axis` before opset 7 (Add, Sub, Mul,
//     Div, Pow, And, Or, Xor, Equal, Greater, Less): with `axis`, B is aligned with A from that
//     axis on, which numpy-style broadcasting does once B gets trailing axes of 1: an Unsqueeze
//     of B is inserted (the ranks come from ONNX's shape inference of the model). Without
//     `axis`, B is a suffix of A's shape, as numpy-style broadcasting aligns it already;
//   - Upsample (which has no later form: it became Resize) becomes the Resize of opset 10,
//     which computes the same (asymmetric coordinates, floor for nearest): its `scales`
//     attribute (opset 7) or `height_scale`/`width_scale` (opset 1) a constant input.
// An op whose older form differs otherwise (Tile before opset 6) is refused by name and
// version. Every rewrite keeps the node's name, so errors still name the model's nodes.
#pragma once

#include <onnx/onnx_pb.h>

#include <string>
#include <vector>

namespace stitch {

// Whether `domain` names the default ONNX domain ("" or "ai.onnx"). Shared with the loader.
bool is_default_domain(const std::string& domain);

// A node's first non-empty output, which names a node that has no name; "" when it has none.
std::string first_output(const onnx::NodeProto& node);

// Rewrites the older forms of `model` (default-domain opset `opset`) in place. Returns, per node
// of the graph (in the graph's order, nodes it added included), the opset whose form the node
// now has where that differs from the model's (a Resize made from an Upsample: 10), else 0.
// Throws UserError (naming `path`, the node and op) for forms it cannot rewrite.
std::vector<int> upgrade_legacy_forms(onnx::ModelProto& model, int opset, const std::string& path);

// The opset a model of opset `opset` is read as after upgrade_legacy_forms: at least 7.
int upgraded_opset(int opset);

} // namespace stitch
