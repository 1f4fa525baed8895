// What the window kernels share: a window op's geometry (pools and depthwise Conv) and the
// loops over the taps of one output element's window that lie inside the input. Used by the
// single-op pooling kernels (kernel_window.cpp) and by fused Local groups around a window op
// (kernel_fused_window.cpp).
#pragma once

#include <string>
#include <vector>

#include "emitter/code_writer.h"
#include "graph/graph.h"

namespace stitch {

// One window op's window, resolved: pads from auto_pad, one entry per spatial axis.
struct WindowGeometry {
  Shape in, out; // spatial sizes of X and Y
  std::vector<int64_t> kernel, strides, dilations, pad_begin, pad_end;
  int64_t taps() const;
};

// Reads the attributes the way the shape rules do (rule_pool, rule_conv), with the output
// sizes they computed: kernel_shape (a Conv without it takes its filter's spatial size),
// strides, dilations, pads or auto_pad. SAME_UPPER / SAME_LOWER split the padding that the
// ceil(in / stride) windows need, the odd one at the end / begin; VALID pads nothing.
WindowGeometry read_window_geometry(const Graph& graph, const Node& node);

// Opens one loop per spatial axis over the taps inside the input, innermost last, given
// `start<d>`, where the window starts on axis d (negative inside the begin pad). The loop
// bounds are clamped by stitch::window::first_tap / end_tap, so no tap tests its bounds. Each
// loop defines k<d> (the tap) and <position><d> (the input position on axis d). Returns the
// row-major offset of the tap's input element within its plane, e.g. "x0 * 56 + x1".
std::string open_tap_loops(CodeWriter& out, const WindowGeometry& w, const std::string& position);
void close_tap_loops(CodeWriter& out, const WindowGeometry& w);

// AveragePool's divisor, given `start<d>`: `const int64_t count = ...;`, the taps inside the
// input, or with count_include_pad inside the padded input [-pad begin, size + pad end) (with
// ceil_mode, a last window's part past the end padding does not count).
void emit_average_pool_count(CodeWriter& out, const WindowGeometry& w, bool include_pad);

} // namespace stitch
