// read_window_geometry and the tap loops of window_geometry.h.
#include "emitter/window_geometry.h"

#include <algorithm>

#include <fmt/format.h>

#include "graph/infer_context.h"

namespace stitch {

int64_t WindowGeometry::taps() const {
  int64_t taps = 1;
  for (int64_t k : kernel)
    taps *= k;
  return taps;
}

WindowGeometry read_window_geometry(const Graph& graph, const Node& node) {
  NodeContext attrs(graph, node);
  const Shape& x = graph.tensor(node.inputs[0]).shape;
  const Shape& y = graph.tensor(node.outputs[0]).shape;
  const size_t n = x.size() - 2;
  WindowGeometry w;
  w.in.assign(x.begin() + 2, x.end());
  w.out.assign(y.begin() + 2, y.end());
  if (node.op == OpKind::Conv && !attrs.has_attr("kernel_shape")) {
    const Shape& filter = graph.tensor(node.inputs[1]).shape;
    w.kernel.assign(filter.begin() + 2, filter.end());
  } else {
    w.kernel = attrs.req_ints("kernel_shape");
  }
  w.strides = attrs.attr_ints("strides", std::vector<int64_t>(n, 1));
  w.dilations = attrs.attr_ints("dilations", std::vector<int64_t>(n, 1));
  std::vector<int64_t> pads = attrs.attr_ints("pads", std::vector<int64_t>(2 * n, 0));
  const std::string auto_pad = attrs.attr_string("auto_pad", "NOTSET");
  for (size_t i = 0; i < n; ++i) {
    int64_t begin = 0, end = 0;
    if (auto_pad == "NOTSET") {
      begin = pads[i];
      end = pads[i + n];
    } else if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
      const int64_t extent = (w.kernel[i] - 1) * w.dilations[i] + 1;
      const int64_t total = std::max<int64_t>(0, (w.out[i] - 1) * w.strides[i] + extent - w.in[i]);
      begin = auto_pad == "SAME_UPPER" ? total / 2 : total - total / 2;
      end = total - begin;
    }
    w.pad_begin.push_back(begin);
    w.pad_end.push_back(end);
  }
  return w;
}

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
