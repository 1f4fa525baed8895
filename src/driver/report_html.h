// --report-html: the fusion plan as one self-contained HTML page (no network, no other
// files): the dataflow graph laid out by Graphviz (dot, rendered to SVG in memory) with each
// fusion group a colored cluster, each node labeled with its op and output shape and library
// calls marked; a table of the groups; a node's details on hover or click; the fusions the
// planner rejected with its reasons.
//
// Every string that comes from the model (node and tensor names) is escaped: into HTML text
// with html_escape, into the page's data block with script_safe_json. Graphviz never sees a
// model string: its nodes are named n0, n1, ... and labeled with op names and shapes only.
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <string_view>

#include "graph/convert_precision.h"
#include "graph/graph.h"
#include "planner/fusion_plan.h"
#include "planner/memory_plan.h"

namespace stitch {

// The page for the plan of `graph` (after the passes). Throws InternalError when Graphviz
// fails to lay the graph out.
// `precision` is what --precision and --io-precision chose (the page says it, and what stayed
// float32); each node's label and details give its tensors' dtypes.
std::string plan_report_html(const Graph& graph, const FusionPlan& plan, const MemoryPlan& memory,
                             const PrecisionOptions& precision = {});

// `text` as HTML text or attribute value: & < > " ' become entities.
std::string html_escape(std::string_view text);

// `value` as JSON text that may sit inside <script type="application/json">: < > & are
// written \u003c \u003e \u0026 (so no "</script>" can end the block); invalid UTF-8 is
// replaced by U+FFFD.
std::string script_safe_json(const nlohmann::json& value);

} // namespace stitch
