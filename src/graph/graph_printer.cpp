// print_graph: one line per input, constant in use, and node.
#include "graph/graph_printer.h"

#include <fmt/format.h>

namespace stitch {

namespace {

// Model strings are shown escaped so that a name cannot forge lines of the dump.
std::string quoted(const std::string& s) {
  std::string out = "'";
  for (unsigned char c : s) {
    if (c == '\'' || c == '\\')
      out += '\\', out += static_cast<char>(c);
    else if (c < 0x20 || c >= 0x7f)
      out += fmt::format("\\x{:02x}", c);
    else
      out += static_cast<char>(c);
  }
  return out + "'";
}

std::string value(const Graph& g, TensorId id) {
  if (id == kNoTensor) return "_";
  return "%" + quoted(g.tensor(id).name);
}

std::string typed(const Graph& g, TensorId id) {
  const Tensor& t = g.tensor(id);
  // Symbolic dims are identifiers (the frontend accepts no other), so they print as they are.
  std::string s =
      fmt::format("{}: {}{}", value(g, id), dtype_name(t.dtype),
                  t.is_dynamic() ? sym_shape_to_string(t.dims) : shape_to_string(t.shape));
  if (!t.sym_values.empty()) s += " = " + sym_shape_to_string(t.sym_values);
  if (t.view_of != kNoTensor) s += " view of " + value(g, t.view_of);
  return s;
}

std::string attribute(const Graph& g, const Attribute& a) {
  return std::visit(
      [&](const auto& v) -> std::string {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, std::string>)
          return quoted(v);
        else if constexpr (std::is_same_v<T, std::vector<std::string>>) {
          std::vector<std::string> q;
          for (const auto& s : v)
            q.push_back(quoted(s));
          return fmt::format("[{}]", fmt::join(q, ","));
        } else if constexpr (std::is_same_v<T, TensorId>)
          return typed(g, v);
        else if constexpr (std::is_same_v<T, int64_t> || std::is_same_v<T, double>)
          return fmt::format("{}", v);
        else
          return fmt::format("[{}]", fmt::join(v, ","));
      },
      a.value);
}

} // namespace

std::string print_graph(const Graph& g) {
  std::string out = fmt::format("graph opset {} ({} nodes)\n", g.opset, g.nodes.size());
  for (const SymbolicDim& d : g.symbols)
    out += fmt::format("  symbol {} in {}..{}, planned at {}\n", d.name, d.min, d.max, d.typical);
  for (TensorId t : g.inputs)
    out += "  input " + typed(g, t) + "\n";
  for (const Node& n : g.nodes) {
    std::vector<std::string> outs, ins, attrs;
    for (TensorId t : n.outputs)
      outs.push_back(t == kNoTensor ? "_" : typed(g, t));
    for (TensorId t : n.inputs) {
      std::string s = value(g, t);
      if (t != kNoTensor && g.tensor(t).is_constant()) s += "(const)";
      ins.push_back(s);
    }
    for (const auto& [key, a] : n.attrs)
      attrs.push_back(key + "=" + attribute(g, a));
    out += fmt::format(
        "  {} = {}({}){}  // {}\n", fmt::join(outs, ", "), op_name(n.op), fmt::join(ins, ", "),
        attrs.empty() ? "" : fmt::format(" {{{}}}", fmt::join(attrs, ", ")), quoted(n.name));
  }
  for (TensorId t : g.outputs)
    out += "  output " + typed(g, t) + "\n";
  return out;
}

} // namespace stitch
