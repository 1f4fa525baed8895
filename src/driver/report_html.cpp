// plan_report_html: Graphviz lays out the dataflow graph with a cluster per fusion group; the
// page holds that SVG, the group and rejected-fusion tables (escaped HTML), and the node
// details as a JSON data block that a small script shows on hover or click.
#include "driver/report_html.h"

#include <graphviz/cgraph.h>
#include <graphviz/gvc.h>

#include <map>
#include <memory>
#include <type_traits>

#include <fmt/format.h>

#include "graph/error.h"
#include "graph/ops.h"

namespace stitch {

namespace {

// ---- colors: one per scheme of a generated kernel, one per other kind of group ----

struct GroupStyle {
  const char* key;  // "regional", "cublaslt", ...
  const char* fill; // the cluster's fill
  const char* edge; // its border
};

constexpr GroupStyle kStyles[] = {
    {"local", "#dcf2dc", "#5a9e5a"},     {"regional", "#d8e7fb", "#4a78b5"},
    {"global", "#fde3c9", "#c07a2c"},    {"independent", "#fff3b0", "#a89330"},
    {"cublaslt", "#e8dbf8", "#7a55b0"},  {"cudnn", "#f9d8e9", "#b0557f"},
    {"attention", "#d2f1ef", "#2f8f88"}, {"gemm_chain", "#f6e0d2", "#a0603a"},
    {"alias", "#eeeeee", "#9a9a9a"},
};

std::string style_key(const FusionGroup& group) {
  if (group.kind == GroupKind::Kernel) return std::string(scheme_name(group.scheme));
  return std::string(group_kind_name(group.kind));
}

const GroupStyle& style_of(const FusionGroup& group) {
  std::string key = style_key(group);
  for (const GroupStyle& s : kStyles)
    if (key == s.key) return s;
  internal_fail("no report color for group kind '{}'", key);
}

std::string library_name(GroupKind kind) {
  if (kind == GroupKind::GemmLibrary) return "cuBLASLt";
  if (kind == GroupKind::ConvLibrary) return "cuDNN";
  return "";
}

std::string shapes_of(const Graph& g, const std::vector<TensorId>& tensors) {
  std::string text;
  for (TensorId t : tensors) {
    if (t == kNoTensor) continue;
    if (!text.empty()) text += " ";
    text += std::string(dtype_name(g.tensor(t).dtype)) + shape_to_string(g.tensor(t).shape);
  }
  return text;
}

// ---- the Graphviz layout ----

// gvRenderData's length parameter is unsigned int in older Graphviz, size_t in newer.
template <typename F> struct RenderLength;
template <typename R, typename A, typename B, typename C, typename D, typename L>
struct RenderLength<R (*)(A, B, C, D, L*)> {
  using type = L;
};

std::string graphviz_errors;
int collect_graphviz_error(char* message) {
  graphviz_errors += message;
  return 0;
}

// Owns the Graphviz context and graph for one layout.
class Layout {
public:
  Layout() : gvc_(gvContext()), graph_(agopen(chars("plan"), Agdirected, nullptr)) {
    if (!gvc_ || !graph_) internal_fail("Graphviz could not start");
  }
  ~Layout() {
    if (laid_out_) gvFreeLayout(gvc_, graph_);
    agclose(graph_);
    gvFreeContext(gvc_);
  }
  Layout(const Layout&) = delete;
  Layout& operator=(const Layout&) = delete;

  Agraph_t* graph() { return graph_; }

  static void set(void* object, const char* name, const std::string& value) {
    agsafeset(object, chars(name), chars(value.c_str()), chars(""));
  }

  std::string svg() {
    graphviz_errors.clear();
    agseterr(AGERR);
    agseterrf(collect_graphviz_error);
    if (gvLayout(gvc_, graph_, "dot") != 0)
      internal_fail("Graphviz could not lay out the plan (is the graphviz package with its dot "
                    "plugin installed?): {}",
                    graphviz_errors);
    laid_out_ = true;
    char* data = nullptr;
    typename RenderLength<decltype(&gvRenderData)>::type length = 0;
    if (gvRenderData(gvc_, graph_, "svg", &data, &length) != 0 || !data)
      internal_fail("Graphviz could not render the plan as SVG: {}", graphviz_errors);
    std::string text(data, length);
    gvFreeRenderData(data);
    // Inline SVG in HTML: drop the XML declaration, doctype and comments before <svg.
    size_t start = text.find("<svg");
    if (start == std::string::npos) internal_fail("Graphviz's SVG has no <svg> element");
    return text.substr(start);
  }

private:
  static char* chars(const char* s) { return const_cast<char*>(s); }

  GVC_t* gvc_;
  Agraph_t* graph_;
  bool laid_out_ = false;
};

// The producer node of every tensor (-1 for graph inputs and constants).
std::vector<int32_t> producers(const Graph& g) {
  std::vector<int32_t> producer(g.tensors.size(), -1);
  for (size_t n = 0; n < g.nodes.size(); ++n)
    for (TensorId t : g.nodes[n].outputs)
      if (t != kNoTensor) producer[t] = static_cast<int32_t>(n);
  return producer;
}

std::string layout_svg(const Graph& g, const FusionPlan& plan) {
  Layout layout;
  Agraph_t* root = layout.graph();
  Layout::set(root, "rankdir", "TB");
  Layout::set(root, "nodesep", "0.2");
  Layout::set(root, "ranksep", "0.3");
  Layout::set(root, "fontname", "Helvetica");
  Layout::set(root, "fontsize", "11");
  std::vector<Agnode_t*> nodes(g.nodes.size(), nullptr);
  for (const FusionGroup& group : plan.groups) {
    const GroupStyle& style = style_of(group);
    Agraph_t* cluster =
        agsubg(root, const_cast<char*>(fmt::format("cluster_{}", group.id).c_str()), 1);
    Layout::set(cluster, "id", fmt::format("group_{}", group.id));
    Layout::set(cluster, "label", fmt::format("#{} {}", group.id, style.key));
    Layout::set(cluster, "style", "filled,rounded");
    Layout::set(cluster, "fillcolor", style.fill);
    Layout::set(cluster, "color", style.edge);
    Layout::set(cluster, "fontsize", "10");
    std::string library = library_name(group.kind);
    for (int32_t n : group.nodes) {
      const Node& node = g.nodes[n];
      Agnode_t* a = agnode(cluster, const_cast<char*>(fmt::format("n{}", n).c_str()), 1);
      nodes[n] = a;
      std::string op(op_name(node.op));
      if (!library.empty()) op += " [" + library + "]";
      Layout::set(a, "id", fmt::format("node_{}", n));
      Layout::set(a, "class", library.empty() ? "op" : "op library");
      Layout::set(a, "label", op + "\\n" + shapes_of(g, node.outputs));
      Layout::set(a, "shape", library.empty() ? "box" : "box3d");
      Layout::set(a, "style", library.empty() ? "filled,rounded" : "filled,bold");
      Layout::set(a, "fillcolor", "white");
      Layout::set(a, "fontname", "Helvetica");
      Layout::set(a, "fontsize", "10");
    }
  }
  for (size_t n = 0; n < nodes.size(); ++n)
    if (!nodes[n]) internal_fail("node {} of the graph is in no group of the plan", n);
  // Graph inputs and outputs: small ellipses named by position (their names are in the data).
  auto terminal = [&](const std::string& name, const std::string& id, const std::string& label) {
    Agnode_t* a = agnode(root, const_cast<char*>(name.c_str()), 1);
    Layout::set(a, "id", id);
    Layout::set(a, "class", "terminal");
    Layout::set(a, "label", label);
    Layout::set(a, "shape", "ellipse");
    Layout::set(a, "fontname", "Helvetica");
    Layout::set(a, "fontsize", "9");
    return a;
  };
  std::map<TensorId, Agnode_t*> input_nodes;
  for (size_t i = 0; i < g.inputs.size(); ++i)
    input_nodes[g.inputs[i]] = terminal(fmt::format("in{}", i), fmt::format("input_{}", i),
                                        "input\\n" + shapes_of(g, {g.inputs[i]}));
  std::vector<int32_t> producer = producers(g);
  auto source_of = [&](TensorId t) -> Agnode_t* {
    if (producer[t] >= 0) return nodes[producer[t]];
    auto it = input_nodes.find(t);
    return it == input_nodes.end() ? nullptr : it->second; // constants are not drawn
  };
  for (size_t n = 0; n < g.nodes.size(); ++n)
    for (TensorId t : g.nodes[n].inputs)
      if (t != kNoTensor)
        if (Agnode_t* from = source_of(t)) agedge(root, from, nodes[n], nullptr, 1);
  for (size_t i = 0; i < g.outputs.size(); ++i) {
    Agnode_t* out = terminal(fmt::format("out{}", i), fmt::format("output_{}", i),
                             "output\\n" + shapes_of(g, {g.outputs[i]}));
    if (Agnode_t* from = source_of(g.outputs[i])) agedge(root, from, out, nullptr, 1);
  }
  return layout.svg();
}

// ---- the page ----

nlohmann::json tensor_json(const Graph& g, TensorId t) {
  if (t == kNoTensor) return nullptr;
  const Tensor& tensor = g.tensor(t);
  nlohmann::json j = {{"name", tensor.name},
                      {"dtype", dtype_name(tensor.dtype)},
                      {"shape", shape_to_string(tensor.shape)}};
  if (tensor.is_constant()) j["constant"] = true;
  return j;
}

// What the script shows for a node, an input or an output, keyed by the SVG element's id.
nlohmann::json details_json(const Graph& g, const FusionPlan& plan) {
  nlohmann::json details = nlohmann::json::object();
  for (const FusionGroup& group : plan.groups) {
    std::string where = fmt::format("#{} {}", group.id, style_key(group));
    if (generated_kernel(group.kind)) where += fmt::format(", group_{:03}.cu", group.id);
    for (int32_t n : group.nodes) {
      const Node& node = g.nodes[n];
      nlohmann::json inputs = nlohmann::json::array(), outputs = nlohmann::json::array();
      for (TensorId t : node.inputs)
        inputs.push_back(tensor_json(g, t));
      for (TensorId t : node.outputs)
        outputs.push_back(tensor_json(g, t));
      details[fmt::format("node_{}", n)] = {{"title", node.name.empty() ? "(unnamed)" : node.name},
                                            {"op", op_name(node.op)},
                                            {"group", where},
                                            {"group_id", group.id},
                                            {"inputs", inputs},
                                            {"outputs", outputs}};
    }
  }
  for (size_t i = 0; i < g.inputs.size(); ++i)
    details[fmt::format("input_{}", i)] = {{"title", g.tensor(g.inputs[i]).name},
                                           {"op", "graph input"},
                                           {"outputs", {tensor_json(g, g.inputs[i])}}};
  for (size_t i = 0; i < g.outputs.size(); ++i)
    details[fmt::format("output_{}", i)] = {{"title", g.tensor(g.outputs[i]).name},
                                            {"op", "graph output"},
                                            {"inputs", {tensor_json(g, g.outputs[i])}}};
  return details;
}

std::string dims(const std::array<int64_t, 3>& d) {
  return fmt::format("{}x{}x{}", d[0], d[1], d[2]);
}

std::string node_list(const Graph& g, const std::vector<int32_t>& nodes) {
  std::string text;
  for (int32_t n : nodes) {
    if (!text.empty()) text += ", ";
    text += g.nodes[n].name.empty() ? "(unnamed " + std::string(op_name(g.nodes[n].op)) + ")"
                                    : g.nodes[n].name;
  }
  return html_escape(text);
}

std::string group_table(const Graph& g, const FusionPlan& plan) {
  std::string rows;
  for (const FusionGroup& group : plan.groups) {
    bool kernel = generated_kernel(group.kind);
    rows += fmt::format(
        "<tr id=\"row-group-{0}\" data-group=\"{0}\"><td>{0}</td><td><span class=\"swatch\" "
        "style=\"background:{1}\"></span>{2}</td><td>{3}</td><td>{4}</td><td>{5}</td><td>{6}</td>"
        "<td class=\"num\">{7}</td><td>{8}</td><td class=\"names\">{9}</td></tr>\n",
        group.id, style_of(group).fill, html_escape(group_kind_name(group.kind)),
        kernel ? html_escape(scheme_name(group.scheme)) : "",
        kernel ? html_escape(mapping_name(group.mapping)) : "",
        kernel ? dims(group.launch.grid) : "", kernel ? dims(group.launch.block) : "",
        group.estimated_bytes, kernel ? fmt::format("group_{:03}.cu", group.id) : "",
        node_list(g, group.nodes));
  }
  return "<table id=\"groups\"><thead><tr><th>id</th><th>kind</th><th>scheme</th><th>mapping</th>"
         "<th>grid</th><th>block</th><th>est. bytes</th><th>file</th><th>ONNX nodes</th></tr>"
         "</thead><tbody>\n" +
         rows + "</tbody></table>\n";
}

// Each GEMM chain's unfused plan: what the library runs where the device cannot hold the chain's
// clusters. Empty without chains.
std::string fallback_section(const Graph& g, const FusionPlan& plan) {
  if (plan.fallbacks.empty()) return "";
  std::string rows;
  for (const ChainFallback& fallback : plan.fallbacks)
    for (const FusionGroup& group : fallback.groups) {
      const bool kernel = generated_kernel(group.kind);
      rows += fmt::format(
          "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td "
          "class=\"num\">{}</td><td>{}</td><td class=\"names\">{}</td></tr>\n",
          fallback.chain_group, group.id, html_escape(group_kind_name(group.kind)),
          kernel ? html_escape(scheme_name(group.scheme)) : "", group.estimated_bytes,
          kernel ? fmt::format("group_{:03}.cu", group.id) : "", node_list(g, group.nodes));
    }
  return "<section><h2>Unfused GEMM chains</h2>\n<p>Where the device cannot hold a chain's "
         "thread-block clusters (before sm_90, or too little shared memory: asked when the model "
         "is created), the library runs these groups in the chain's place.</p>\n"
         "<table id=\"fallbacks\"><thead><tr><th>chain</th><th>id</th><th>kind</th>"
         "<th>scheme</th><th>est. bytes</th><th>file</th><th>ONNX nodes</th></tr></thead>"
         "<tbody>\n" +
         rows + "</tbody></table></section>\n";
}

std::string rejected_table(const Graph& g, const FusionPlan& plan) {
  if (plan.rejected.empty()) return "<p>None.</p>\n";
  std::string rows;
  for (const RejectedFusion& r : plan.rejected)
    rows += fmt::format("<tr><td class=\"names\">{}</td><td>{}</td></tr>\n", node_list(g, r.nodes),
                        html_escape(r.reason));
  return "<table id=\"rejected\"><thead><tr><th>nodes</th><th>reason</th></tr></thead><tbody>\n" +
         rows + "</tbody></table>\n";
}

std::string precision_summary(const PrecisionOptions& precision) {
  std::string text = fmt::format("<p>precision <b>{}</b>", precision_name(precision.precision));
  if (!reduced_dtype(precision.precision)) return text + "</p>\n";
  text += fmt::format(", inputs and outputs <b>{}</b>; kept in float32:</p><ul>",
                      io_precision_name(precision.io));
  for (const std::string& rule : precision_fp32_rules())
    text += "<li>" + html_escape(rule) + "</li>";
  return text + "</ul>\n";
}

std::string summary(const Graph& g, const FusionPlan& plan, const MemoryPlan& memory) {
  int64_t launches = 0, bytes = 0;
  for (const FusionGroup& group : plan.groups) {
    if (group.kind != GroupKind::Alias) ++launches;
    bytes += group.estimated_bytes;
  }
  std::string text = fmt::format(
      "<p>planner <b>{}</b>: {} nodes in <b>{}</b> groups (<span id=\"drawn-groups\">?</span> "
      "drawn), {} launches, {} estimated HBM bytes; arena peak {} bytes (intermediates "
      "{}).</p>\n",
      html_escape(plan.planner), g.nodes.size(), plan.groups.size(), launches, bytes,
      memory.arena_bytes, memory.intermediate_bytes);
  if (plan.ilp.ran)
    text +=
        fmt::format("<p>ILP: {}, {} candidates, {} cycle cuts, objective {:.0f}, bound {:.0f} "
                    "(gap {:.2f}%), solved in {:.2f} s.</p>\n",
                    html_escape(plan.ilp.status), plan.ilp.candidates, plan.ilp.cycle_cuts,
                    plan.ilp.objective, plan.ilp.bound, 100 * plan.ilp.gap, plan.ilp.solve_seconds);
  std::string compare;
  for (const PlanTotals& t : plan.totals)
    compare += fmt::format("<li>{}: {} launches, {} bytes, cost {}</li>", html_escape(t.planner),
                           t.launches, t.bytes, t.cost);
  if (!compare.empty()) text += "<p>By the same cost model:</p><ul>" + compare + "</ul>\n";
  return text;
}

std::string legend() {
  std::string items;
  for (const GroupStyle& s : kStyles)
    items += fmt::format("<span><span class=\"swatch\" style=\"background:{};border-color:{}\">"
                         "</span>{}</span>",
                         s.fill, s.edge, s.key);
  return "<div class=\"legend\">" + items +
         "<span>a 3-D box is a library call (cuBLASLt, cuDNN)</span></div>\n";
}

constexpr const char* kStyleSheet = R"css(
body { font: 13px/1.4 Helvetica, Arial, sans-serif; margin: 0; color: #222; }
header, section { padding: 8px 16px; }
h1 { font-size: 18px; margin: 4px 0; } h2 { font-size: 15px; margin: 12px 0 6px; }
.legend span { margin-right: 12px; white-space: nowrap; }
.swatch { display: inline-block; width: 12px; height: 12px; border: 1px solid #888;
          margin-right: 4px; vertical-align: middle; }
#view { display: flex; gap: 8px; padding: 0 16px; }
#graph { flex: 1; overflow: auto; border: 1px solid #ccc; max-height: 80vh; background: #fff; }
#graph.fit svg { width: 100%; height: auto; }
#details { width: 340px; max-height: 80vh; overflow: auto; border: 1px solid #ccc;
           padding: 8px; font-size: 12px; word-break: break-all; }
#details h3 { margin: 0 0 4px; font-size: 13px; }
g.node { cursor: pointer; }
g.node.selected polygon, g.node.selected path { stroke: #d00; stroke-width: 3; }
g.cluster.selected > polygon, g.cluster.selected > path { stroke: #d00; stroke-width: 3; }
table { border-collapse: collapse; font-size: 12px; }
th, td { border: 1px solid #ddd; padding: 2px 6px; text-align: left; vertical-align: top; }
td.num { text-align: right; } td.names { word-break: break-all; max-width: 600px; }
tr.selected { background: #ffe9a8; } #groups tbody tr { cursor: pointer; }
)css";

// Reads the data block, counts the groups drawn, and shows details; model strings only ever
// reach the page through textContent.
constexpr const char* kScript = R"js(
(function () {
  const details = JSON.parse(document.getElementById('plan-data').textContent);
  const svg = document.querySelector('#graph svg');
  const clusters = svg ? svg.querySelectorAll('g.cluster[id^="group_"]') : [];
  document.getElementById('drawn-groups').textContent = String(clusters.length);
  document.body.setAttribute('data-drawn-groups', String(clusters.length));
  const panel = document.getElementById('details');
  function add(parent, tag, text) {
    const e = document.createElement(tag);
    e.textContent = text;
    parent.appendChild(e);
    return e;
  }
  function tensors(label, list) {
    if (!list || !list.length) return;
    add(panel, 'b', label);
    const ul = document.createElement('ul');
    for (const t of list) {
      if (!t) { add(ul, 'li', '(omitted)'); continue; }
      add(ul, 'li', t.name + '  ' + t.dtype + t.shape + (t.constant ? '  (constant)' : ''));
    }
    panel.appendChild(ul);
  }
  function show(id) {
    const d = details[id];
    if (!d) return;
    panel.replaceChildren();
    add(panel, 'h3', d.title);
    add(panel, 'div', d.op);
    if (d.group) add(panel, 'div', 'group ' + d.group);
    tensors('inputs', d.inputs);
    tensors('outputs', d.outputs);
  }
  let pinned = null;
  function select(on) {
    document.querySelectorAll('.selected').forEach(e => e.classList.remove('selected'));
    for (const e of on) if (e) e.classList.add('selected');
  }
  for (const node of (svg ? svg.querySelectorAll('g.node') : [])) {
    node.addEventListener('mouseenter', () => { if (!pinned) show(node.id); });
    node.addEventListener('click', () => {
      pinned = pinned === node.id ? null : node.id;
      show(node.id);
      const d = details[node.id];
      const row = d && d.group_id !== undefined ? document.getElementById('row-group-' + d.group_id) : null;
      select(pinned ? [node, row] : []);
    });
  }
  for (const row of document.querySelectorAll('#groups tbody tr')) {
    row.addEventListener('click', () => {
      const cluster = document.getElementById('group_' + row.dataset.group);
      select([row, cluster]);
      if (cluster) cluster.scrollIntoView({block: 'center', inline: 'center'});
    });
  }
  // plan.html#node_12 opens with that node's details pinned.
  const start = decodeURIComponent(location.hash.slice(1));
  if (details[start]) {
    pinned = start;
    show(start);
    select([document.getElementById(start)]);
  }
  document.getElementById('fit').addEventListener('click', () => {
    document.getElementById('graph').classList.toggle('fit');
  });
})();
)js";

} // namespace

std::string html_escape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
    case '&':
      out += "&amp;";
      break;
    case '<':
      out += "&lt;";
      break;
    case '>':
      out += "&gt;";
      break;
    case '"':
      out += "&quot;";
      break;
    case '\'':
      out += "&#39;";
      break;
    default:
      out += c;
    }
  }
  return out;
}

std::string script_safe_json(const nlohmann::json& value) {
  std::string text = value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    // Outside strings JSON has none of these characters, so escaping them is always valid.
    switch (c) {
    case '<':
      out += "\\u003c";
      break;
    case '>':
      out += "\\u003e";
      break;
    case '&':
      out += "\\u0026";
      break;
    default:
      out += c;
    }
  }
  return out;
}

std::string plan_report_html(const Graph& graph, const FusionPlan& plan, const MemoryPlan& memory,
                             const PrecisionOptions& precision) {
  std::string title = "stitchc plan: " + graph.source_file;
  return "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n<title>" +
         html_escape(title) + "</title>\n<style>" + kStyleSheet + "</style></head>\n" +
         fmt::format("<body data-groups=\"{}\">\n", plan.groups.size()) + "<header><h1>" +
         html_escape(title) + "</h1>\n" + summary(graph, plan, memory) +
         precision_summary(precision) + legend() +
         "<button id=\"fit\">fit to width</button> Hover a node for its details; click to pin it."
         "</header>\n<div id=\"view\"><div id=\"graph\">" +
         layout_svg(graph, plan) +
         "</div><div id=\"details\">Hover a node.</div></div>\n<section><h2>Groups</h2>\n" +
         group_table(graph, plan) + "</section>\n" + fallback_section(graph, plan) +
         "<section><h2>Rejected fusions</h2>\n" + rejected_table(graph, plan) + "</section>\n" +
         "<script type=\"application/json\" id=\"plan-data\">" +
         script_safe_json(details_json(graph, plan)) + "</script>\n<script>" + kScript +
         "</script>\n</body></html>\n";
}

} // namespace stitch
