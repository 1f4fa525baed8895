// The tap loops of window_geometry.h.
#include "emitter/window_geometry.h"

#include <algorithm>

#include <fmt/format.h>

namespace stitch {

std::string open_tap_loops(CodeWriter& out, const WindowGeometry& w, const std::string& position) {
  for (size_t d = 0; d < w.in.size(); ++d) {
    out.linef("const int64_t k{0}_first = stitch::window::first_tap(start{0}, {1});", d,
              w.dilations[d]);
    out.linef("const int64_t k{0}_end = stitch::window::end_tap(start{0}, {1}, {2}, {3});", d,
              w.dilations[d], w.kernel[d], w.in[d]);
  }
  for (size_t d = 0; d < w.in.size(); ++d) {
    out.open(fmt::format("for (int64_t k{0} = k{0}_first; k{0} < k{0}_end; ++k{0})", d));
    out.linef("const int64_t {}{} = start{} + {};", position, d, d,
              w.dilations[d] == 1 ? fmt::format("k{}", d)
                                  : fmt::format("k{} * {}", d, w.dilations[d]));
  }
  std::vector<std::string> terms;
  int64_t stride = 1;
  for (size_t d = w.in.size(); d-- > 0;) {
    terms.insert(terms.begin(), stride == 1 ? fmt::format("{}{}", position, d)
                                            : fmt::format("{}{} * {}", position, d, stride));
    stride *= w.in[d];
  }
  return fmt::format("{}", fmt::join(terms, " + "));
}

void close_tap_loops(CodeWriter& out, const WindowGeometry& w) {
  for (size_t d = 0; d < w.in.size(); ++d)
    out.close();
}

void emit_average_pool_count(CodeWriter& out, const WindowGeometry& w, bool include_pad) {
  std::vector<std::string> factors;
  for (size_t d = 0; d < w.in.size(); ++d) {
    if (include_pad)
      factors.push_back(fmt::format("stitch::window::taps_inside(start{} + {}, {}, {}, {})", d,
                                    w.pad_begin[d], w.dilations[d], w.kernel[d],
                                    w.in[d] + w.pad_begin[d] + w.pad_end[d]));
    else
      factors.push_back(fmt::format("stitch::window::taps_inside(start{}, {}, {}, {})", d,
                                    w.dilations[d], w.kernel[d], w.in[d]));
  }
  out.linef("const int64_t count = {};{}", fmt::join(factors, " * "),
            include_pad ? " // taps inside the padded input (count_include_pad)"
                        : " // taps inside the input");
}

} // namespace stitch
