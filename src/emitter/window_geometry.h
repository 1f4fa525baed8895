// What the window kernels share: where an output element's window lies, and the loops over
// its taps that lie inside the input, for a window's geometry (planner/group_spec.h's
// WindowGeometry, which legality resolved). Used by the single-op pooling kernels
// (kernel_window.cpp) and by fused Local groups around a window op (kernel_fused_window.cpp).
// Over symbolic spatial axes the extents are the run's (code of the kernel's `sym<k>`
// parameters); elsewhere they are literals.
#pragma once

#include <string>
#include <vector>

#include "emitter/code_writer.h"
#include "graph/graph.h"
#include "planner/group_spec.h"

namespace stitch {

// The spatial extents a window kernel indexes by, per axis of X (`in`) and Y (`out`), and its
// pads: a literal, or over symbolic spatial axes (and for SAME's pads of the run) the name of a
// constant that emit_window_extents declared, once per thread before the loop over the
// elements.
struct WindowExtents {
  std::vector<std::string> in, out;
  // Literals, or pad_begin<d> and the end pad's expression (AveragePool's count only).
  std::vector<std::string> pad_begin, pad_end;
};
WindowExtents emit_window_extents(CodeWriter& out, const Graph& g, const WindowGeometry& w);

// Output element i's position: o<d> on each spatial axis, `plane` (image * channels +
// channel), and start<d>, where its window starts on axis d (negative inside the begin pad).
void emit_window_position(CodeWriter& out, const WindowGeometry& w, const WindowExtents& e);

// The elements of one plane of the window's input, as code.
std::string window_plane_code(const WindowExtents& e);

// The product of extents as code: the literals multiplied out, the names joined by " * ".
std::string extents_product(const std::vector<std::string>& extents);

// Opens one loop per spatial axis over the taps inside the input, innermost last, given
// `start<d>`. The loop bounds are clamped by stitch::window::first_tap / end_tap, so no tap
// tests its bounds. Each loop defines k<d> (the tap) and <position><d> (the input position on
// axis d). Returns the row-major offset of the tap's input element within its plane, e.g.
// "x0 * 56 + x1".
std::string open_tap_loops(CodeWriter& out, const WindowGeometry& w, const WindowExtents& e,
                           const std::string& position);
void close_tap_loops(CodeWriter& out, const WindowGeometry& w);

// AveragePool's divisor, given `start<d>`: `const int64_t count = ...;`, the taps inside the
// input, or with count_include_pad inside the padded input [-pad begin, size + pad end) (with
// ceil_mode, a last window's part past the end padding does not count).
void emit_average_pool_count(CodeWriter& out, const WindowGeometry& w, const WindowExtents& e,
                             bool include_pad);

} // namespace stitch
