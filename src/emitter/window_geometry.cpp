// The window positions and tap loops of window_geometry.h.
#include "emitter/window_geometry.h"

#include <algorithm>
#include <tuple>

#include <fmt/format.h>

#include "emitter/emit_context.h"

namespace stitch {

namespace {

// `name * factor`, or `name` for a factor of 1.
std::string scaled(const std::string& name, const std::string& factor) {
  return factor == "1" ? name : fmt::format("{} * {}", name, factor);
}

} // namespace

WindowExtents emit_window_extents(CodeWriter& out, const Graph& g, const WindowGeometry& w) {
  WindowExtents e;
  const SymShape in = w.in_extents(), result = w.out_extents();
  for (const auto& [dims, names, prefix, what] :
       {std::tuple{&in, &e.in, "in", "the window's input"},
        std::tuple{&result, &e.out, "out", "its output"}})
    for (size_t d = 0; d < dims->size(); ++d) {
      const DimExpr& x = (*dims)[d];
      if (x.is_constant()) {
        names->push_back(std::to_string(x.constant_value()));
        continue;
      }
      names->push_back(fmt::format("{}_extent{}", prefix, d));
      out.linef("const int64_t {} = {}; // {}: spatial axis {} of {}", names->back(),
                dim_code(g, x), x.to_string(), d, what);
    }
  for (size_t d = 0; d < w.pad_begin.size(); ++d)
    for (const auto& [pads, dims, names, side] :
         {std::tuple{&w.pad_begin, &w.pad_begin_dims, &e.pad_begin, "begin"},
          std::tuple{&w.pad_end, &w.pad_end_dims, &e.pad_end, "end"}}) {
      if (dims->empty() || (*dims)[d].is_constant()) {
        names->push_back(std::to_string(dims->empty() ? (*pads)[d] : (*dims)[d].constant_value()));
        continue;
      }
      // The end pad only counts an AveragePool's taps (count_include_pad): written there.
      if (names == &e.pad_end) {
        names->push_back("(" + dim_code(g, (*dims)[d]) + ")");
        continue;
      }
      names->push_back(fmt::format("pad_{}{}", side, d));
      out.linef("const int64_t {} = {}; // {}: the run's {} pad of spatial axis {} (SAME)",
                names->back(), dim_code(g, (*dims)[d]), (*dims)[d].to_string(), side, d);
    }
  return e;
}

std::string extents_product(const std::vector<std::string>& extents) {
  int64_t literal = 1;
  std::vector<std::string> factors;
  for (const std::string& x : extents) {
    if (is_literal(x))
      literal *= std::stoll(x);
    else
      factors.push_back(x);
  }
  if (literal != 1 || factors.empty()) factors.push_back(std::to_string(literal));
  return fmt::format("{}", fmt::join(factors, " * "));
}

void emit_window_position(CodeWriter& out, const WindowGeometry& w, const WindowExtents& e) {
  out.line("int64_t left = i;");
  for (size_t d = e.out.size(); d-- > 0;)
    out.linef("const int64_t o{} = left % {}; left /= {};", d, e.out[d], e.out[d]);
  out.line("const int64_t plane = left; // image * channels + channel");
  for (size_t d = 0; d < e.out.size(); ++d) {
    std::string start = scaled(fmt::format("o{}", d), std::to_string(w.strides[d]));
    if (e.pad_begin[d] != "0") start += fmt::format(" - {}", e.pad_begin[d]);
    out.linef("const int64_t start{} = {}; // window start on spatial axis {}", d, start, d);
  }
}

std::string window_plane_code(const WindowExtents& e) {
  const std::string p = extents_product(e.in);
  return is_literal(p) ? p : "(" + p + ")";
}

std::string open_tap_loops(CodeWriter& out, const WindowGeometry& w, const WindowExtents& e,
                           const std::string& position) {
  for (size_t d = 0; d < e.in.size(); ++d) {
    out.linef("const int64_t k{0}_first = stitch::window::first_tap(start{0}, {1});", d,
              w.dilations[d]);
    out.linef("const int64_t k{0}_end = stitch::window::end_tap(start{0}, {1}, {2}, {3});", d,
              w.dilations[d], w.kernel[d], e.in[d]);
  }
  for (size_t d = 0; d < e.in.size(); ++d) {
    out.open(fmt::format("for (int64_t k{0} = k{0}_first; k{0} < k{0}_end; ++k{0})", d));
    out.linef("const int64_t {}{} = start{} + {};", position, d, d,
              scaled(fmt::format("k{}", d), std::to_string(w.dilations[d])));
  }
  std::vector<std::string> terms;
  for (size_t d = 0; d < e.in.size(); ++d)
    terms.push_back(
        scaled(fmt::format("{}{}", position, d),
               extents_product({e.in.begin() + static_cast<std::ptrdiff_t>(d) + 1, e.in.end()})));
  return fmt::format("{}", fmt::join(terms, " + "));
}

void close_tap_loops(CodeWriter& out, const WindowGeometry& w) {
  for (size_t d = 0; d < w.in.size(); ++d)
    out.close();
}

void emit_average_pool_count(CodeWriter& out, const WindowGeometry& w, const WindowExtents& e,
                             bool include_pad) {
  std::vector<std::string> factors;
  for (size_t d = 0; d < e.in.size(); ++d) {
    if (include_pad) {
      const bool literal =
          is_literal(e.in[d]) && is_literal(e.pad_begin[d]) && is_literal(e.pad_end[d]);
      const std::string padded =
          literal ? std::to_string(std::stoll(e.in[d]) + std::stoll(e.pad_begin[d]) +
                                   std::stoll(e.pad_end[d]))
                  : fmt::format("{} + {} + {}", e.in[d], e.pad_begin[d], e.pad_end[d]);
      factors.push_back(fmt::format("stitch::window::taps_inside(start{} + {}, {}, {}, {})", d,
                                    e.pad_begin[d], w.dilations[d], w.kernel[d], padded));
    } else {
      factors.push_back(fmt::format("stitch::window::taps_inside(start{}, {}, {}, {})", d,
                                    w.dilations[d], w.kernel[d], e.in[d]));
    }
  }
  out.linef("const int64_t count = {};{}", fmt::join(factors, " * "),
            include_pad ? " // taps inside the padded input (count_include_pad)"
                        : " // taps inside the input");
}

} // namespace stitch
