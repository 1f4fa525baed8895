// What the window kernels share: the loops over the taps of one output element's window that
// lie inside the input, for a window's geometry (planner/group_spec.h's WindowGeometry, which
// legality resolved). Used by the
// single-op pooling kernels (kernel_window.cpp) and by fused Local groups around a window op
// (kernel_fused_window.cpp).
#pragma once

#include <string>
#include <vector>

#include "emitter/code_writer.h"
#include "graph/graph.h"
#include "planner/group_spec.h"

namespace stitch {

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
