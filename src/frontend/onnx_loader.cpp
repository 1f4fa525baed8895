// load_onnx: file -> ModelProto -> Graph. The steps run in order: read and parse the file,
// check opsets and domains, bind the inputs' shapes, convert initializers, convert nodes
// (refusing every unsupported op at once), resolve names, order the nodes.
#include "frontend/onnx_loader.h"

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>
#include <onnx/onnx_pb.h>
#include <sys/stat.h>

#include <algorithm>
#include <cctype>
#include <fstream>
#include <optional>
#include <set>
#include <unordered_map>

#include "frontend/onnx_attributes.h"
#include "frontend/onnx_legacy.h"
#include "frontend/onnx_tensor.h"
#include "graph/checked_math.h"
#include "graph/error.h"
#include "graph/topo_sort.h"

namespace stitch {

namespace {

constexpr int kNewestOpset = 25;
constexpr int kOldestOpset = 1;               // opsets 1-6 are read as 7 (onnx_legacy.h)
constexpr int64_t kProtobufLimit = INT32_MAX; // protobuf's 2 GiB message limit

std::string folder_of(const std::string& path) {
  size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

onnx::ModelProto read_model(const std::string& path) {
  ErrorSite site{path, "", ""};
  struct stat st {};
  if (stat(path.c_str(), &st) != 0)
    user_fail(site, "cannot open the model: {}", std::strerror(errno));
  if (!S_ISREG(st.st_mode)) user_fail(site, "the model is not a regular file");
  if (st.st_size > kProtobufLimit)
    user_fail(site,
              "the model is {} bytes, over protobuf's 2 GiB limit; store the weights as "
              "external data",
              static_cast<long long>(st.st_size));
  std::ifstream in(path, std::ios::binary);
  if (!in) user_fail(site, "cannot open the model: {}", std::strerror(errno));
  std::string bytes(static_cast<size_t>(st.st_size), '\0');
  if (!in.read(bytes.data(), st.st_size)) user_fail(site, "reading the model failed");

  onnx::ModelProto model;
  google::protobuf::io::ArrayInputStream raw(bytes.data(), static_cast<int>(bytes.size()));
  google::protobuf::io::CodedInputStream coded(&raw);
  coded.SetTotalBytesLimit(static_cast<int>(kProtobufLimit));
  coded.SetRecursionLimit(100);
  if (!model.ParseFromCodedStream(&coded) || !coded.ConsumedEntireMessage())
    user_fail(site, "not a valid ONNX model: the file does not parse as an ONNX protobuf "
                    "(truncated or not ONNX)");
  if (!model.has_graph())
    user_fail(site, "not a valid ONNX model: it has no graph (an empty or non-ONNX file?)");
  return model;
}

// An input dim written as -1 (paddle2onnx and some converters): unknown, like an unnamed dim,
// bound with --input-shape.
constexpr int64_t kUnknownDim = -1;

int default_opset(const onnx::ModelProto& model, const std::string& path) {
  int64_t opset = 0;
  for (const auto& imp : model.opset_import())
    if (is_default_domain(imp.domain())) opset = imp.version();
  if (opset == 0 && model.graph().node_size() > 0)
    user_fail({path, "", ""}, "the model imports no opset of the default ONNX domain");
  if (opset != 0 && opset < kOldestOpset)
    user_fail({path, "", ""}, "unsupported opset {}: older than the oldest stitchc supports ({})",
              opset, kOldestOpset);
  if (opset > kNewestOpset)
    user_fail({path, "", ""}, "unsupported opset {}: newer than the newest stitchc knows ({})",
              opset, kNewestOpset);
  return static_cast<int>(opset);
}

// How a list of nodes shows one: 'NAME', or, for a node without a name, unnamed writing 'y'.
std::string describe_node(const onnx::NodeProto& node) {
  if (!node.name().empty() || first_output(node).empty()) return "'" + node.name() + "'";
  return "unnamed writing '" + first_output(node) + "'";
}

struct SeenOps {
  int count = 0;
  std::vector<std::string> first;
};

// "KEY xN (first: 'a', 'b')" for each key, joined by "; ".
std::string describe_seen(const std::map<std::string, SeenOps>& seen) {
  std::vector<std::string> parts;
  for (const auto& [key, s] : seen)
    parts.push_back(fmt::format("{} x{} (first: {})", key, s.count, fmt::join(s.first, ", ")));
  return fmt::format("{}", fmt::join(parts, "; "));
}

// Counts the nodes for which `key` gives a key (a domain, an op type), keeping the first names.
template <typename Key>
std::map<std::string, SeenOps> count_nodes(const onnx::GraphProto& g, Key&& key) {
  std::map<std::string, SeenOps> seen;
  for (const auto& node : g.node()) {
    std::optional<std::string> k = key(node);
    if (!k) continue;
    SeenOps& s = seen[*k];
    ++s.count;
    if (s.first.size() < 3) s.first.push_back(describe_node(node));
  }
  return seen;
}

// Refuses nodes of other domains, each domain with its count and first node names, in one
// message (before the default domain's opset is read: a model of another domain's ops alone
// imports none).
void check_domains(const onnx::GraphProto& g, const std::string& path) {
  auto foreign = count_nodes(g, [](const onnx::NodeProto& node) -> std::optional<std::string> {
    if (is_default_domain(node.domain())) return std::nullopt;
    return node.domain();
  });
  if (!foreign.empty())
    user_fail({path, "", ""},
              "unsupported op domain: {}; stitchc supports the default ONNX "
              "domain only",
              describe_seen(foreign));
}

// Refuses every unsupported op of the default domain (after older forms are rewritten), each
// with its count and first node names, in one message.
void check_ops_supported(const onnx::GraphProto& g, const std::string& path) {
  auto unsupported = count_nodes(g, [](const onnx::NodeProto& node) -> std::optional<std::string> {
    if (op_from_onnx(node.op_type())) return std::nullopt;
    return node.op_type();
  });
  if (!unsupported.empty())
    user_fail({path, "", ""}, "unsupported ops: {}", describe_seen(unsupported));
}

class GraphBuilder {
public:
  GraphBuilder(onnx::ModelProto& model, const std::string& path, const LoadOptions& options)
      : model_(model), path_(path), dir_(folder_of(path)), options_(options) {
    graph_.source_file = path;
  }

  Graph build() {
    onnx::GraphProto& g = *model_.mutable_graph();
    graph_.limits = options_.limits;
    if (g.node_size() > options_.limits.max_nodes)
      user_fail(site(), "the graph has {} nodes, more than the limit of {} (--max-nodes)",
                g.node_size(), options_.limits.max_nodes);
    check_domains(g, path_);
    const int opset = default_opset(model_, path_);
    node_opsets_ = upgrade_legacy_forms(model_, opset, path_);
    graph_.opset = upgraded_opset(opset);
    check_ops_supported(g, path_);
    add_initializers(g);
    add_inputs(g);
    for (int i = 0; i < g.node_size(); ++i)
      add_node(*g.mutable_node(i), node_opsets_.at(static_cast<size_t>(i)));
    add_outputs(g);
    topo_sort(graph_);
    return std::move(graph_);
  }

private:
  ErrorSite site() const { return {path_, "", ""}; }

  TensorId define(Tensor t, const ErrorSite& where) {
    if (t.name.empty()) user_fail(where, "a value has an empty name");
    if (names_.count(t.name))
      user_fail(where,
                "value '{}' is defined twice (two producers, or an initializer and a "
                "producer)",
                t.name);
    std::string name = t.name;
    TensorId id = graph_.add_tensor(std::move(t));
    names_[name] = id;
    return id;
  }

  void add_initializers(onnx::GraphProto& g) {
    if (g.sparse_initializer_size() > 0)
      user_fail(site(), "sparse initializers are not supported ('{}')",
                g.sparse_initializer(0).values().name());
    for (auto& init : *g.mutable_initializer()) {
      ErrorSite where{path_, "", ""};
      if (names_.count(init.name()))
        user_fail(where, "initializer '{}' is defined twice", init.name());
      define(tensor_from_onnx(init, dir_, where, budget_), where);
      initializer_names_.insert(init.name());
    }
  }

  // The symbol `name` of a --dim or an --input-shape as an expression: a constant where --dim
  // binds it to one value, the symbol where it gives a range; nullopt where --dim omits it.
  std::optional<DimExpr> dim_option(const std::string& name) const {
    for (const SymbolicDim& d : options_.dims)
      if (d.name == name) return d.min == d.max ? DimExpr(d.min) : DimExpr::symbol(d.name);
    return std::nullopt;
  }

  void add_inputs(const onnx::GraphProto& g) {
    std::map<std::string, DimExpr> bound_dims; // dim_param -> a value or a --dim symbol
    auto check_names_input = [&](const std::string& name, const char* flag) {
      for (const auto& in : g.input())
        if (in.name() == name) return;
      user_fail(site(), "{} names '{}', which is not a graph input", flag, name);
    };
    for (const auto& [name, shape] : options_.input_shapes)
      check_names_input(name, "--input-shape");
    for (const auto& [name, file] : options_.frozen_inputs)
      check_names_input(name, "--freeze-input");
    // The symbols --input-shape names resolve through --dim.
    std::map<std::string, SymShape> given_shapes;
    for (const auto& [name, shape] : options_.input_shapes) {
      SymShape& resolved = given_shapes[name];
      for (const DimExpr& d : shape) {
        std::optional<std::string> symbol = d.as_symbol();
        if (!symbol) {
          resolved.push_back(d);
          continue;
        }
        std::optional<DimExpr> value = dim_option(*symbol);
        if (!value)
          user_fail(site(),
                    "--input-shape {} names the dim '{}', which no --dim {}=MIN..MAX gives a "
                    "range (where a name holds an 'x', separate the dims with commas)",
                    name, *symbol, *symbol);
        resolved.push_back(*value);
      }
    }
    std::vector<std::string> unbound;
    // Two rounds: bindings given for one input name its dim_params, which bind other inputs.
    std::vector<const onnx::ValueInfoProto*> pending;
    for (const auto& in : g.input()) {
      if (initializer_names_.count(in.name())) continue; // a constant with a default value
      if (options_.frozen_inputs.count(in.name())) {
        freeze_input(in);
        continue;
      }
      if (!in.type().has_tensor_type())
        user_fail(site(),
                  "graph input '{}' has an unsupported type: only tensors are supported "
                  "(not sequences, maps or optionals)",
                  in.name());
      const auto& tt = in.type().tensor_type();
      std::optional<DType> dtype = dtype_from_onnx(tt.elem_type());
      if (!dtype)
        user_fail(site(), "graph input '{}' has unsupported data type {}", in.name(),
                  onnx_dtype_code_name(tt.elem_type()));
      if (!tt.has_shape())
        if (!options_.input_shapes.count(in.name()))
          user_fail(site(), "graph input '{}' has no shape; give one with --input-shape {}=...",
                    in.name(), in.name());
      auto given = given_shapes.find(in.name());
      if (given != given_shapes.end() && tt.has_shape() &&
          static_cast<int>(given->second.size()) != tt.shape().dim_size())
        user_fail(site(), "--input-shape {} has rank {}, but the model declares rank {}", in.name(),
                  given->second.size(), tt.shape().dim_size());
      if (given != given_shapes.end() && tt.has_shape())
        for (int i = 0; i < tt.shape().dim_size(); ++i) {
          const auto& dim = tt.shape().dim(i);
          const DimExpr& v = given->second[i];
          if (dim.has_dim_value() && dim.dim_value() != kUnknownDim &&
              v != DimExpr(dim.dim_value()))
            user_fail(site(), "--input-shape {} gives dim {} = {}, but the model fixes it to {}",
                      in.name(), i, v.to_string(), dim.dim_value());
          if (dim.has_dim_param()) {
            auto [it, fresh] = bound_dims.emplace(dim.dim_param(), v);
            if (!fresh && it->second != v)
              user_fail(site(), "symbolic dim '{}' is bound to both {} and {}", dim.dim_param(),
                        it->second.to_string(), v.to_string());
          }
        }
      pending.push_back(&in);
      Tensor t;
      t.name = in.name();
      t.dtype = *dtype;
      t.typed = true;
      graph_.inputs.push_back(define(std::move(t), site()));
    }
    std::set<std::string> used_symbols;
    for (size_t k = 0; k < pending.size(); ++k) {
      const onnx::ValueInfoProto& in = *pending[k];
      Tensor& t = graph_.tensor(graph_.inputs[k]);
      SymShape dims;
      auto given = given_shapes.find(in.name());
      if (given != given_shapes.end()) {
        dims = given->second;
      } else {
        const auto& shape = in.type().tensor_type().shape();
        for (int i = 0; i < shape.dim_size(); ++i) {
          const auto& dim = shape.dim(i);
          if (dim.has_dim_value() && dim.dim_value() != kUnknownDim) {
            if (dim.dim_value() < 0)
              user_fail(site(), "graph input '{}' has negative dim {} = {}", in.name(), i,
                        dim.dim_value());
            dims.push_back(dim.dim_value());
            continue;
          }
          auto b = dim.has_dim_param() ? bound_dims.find(dim.dim_param()) : bound_dims.end();
          if (b != bound_dims.end()) {
            dims.push_back(b->second);
            continue;
          }
          std::optional<DimExpr> option =
              dim.has_dim_param() ? dim_option(dim.dim_param()) : std::nullopt;
          if (option) {
            dims.push_back(*option);
            continue;
          }
          unbound.push_back(fmt::format("{}[{}]{}", in.name(), i,
                                        dim.has_dim_param()   ? " '" + dim.dim_param() + "'"
                                        : dim.has_dim_value() ? " (written as -1)"
                                                              : ""));
          dims.push_back(0);
        }
      }
      for (const DimExpr& d : dims) {
        std::set<std::string> symbols = d.symbols();
        used_symbols.insert(symbols.begin(), symbols.end());
      }
      check_input_size(in.name(), t.dtype, dims);
      t.shape = evaluate_shape(dims, planning_values());
      if (!is_static(dims)) t.dims = dims;
    }
    if (!unbound.empty())
      user_fail(site(),
                "the model has symbolic dims to bind with --input-shape NAME=DxDx... or "
                "--dim NAME=VALUE, or to keep symbolic with --dim NAME=MIN..MAX: {}",
                fmt::join(unbound, ", "));
    for (const SymbolicDim& d : options_.dims) {
      auto bound = bound_dims.find(d.name);
      if (bound != bound_dims.end() && d.min != d.max && bound->second != DimExpr::symbol(d.name))
        user_fail(site(), "--dim {}={}..{} ranges the dim '{}', which --input-shape binds to {}",
                  d.name, d.min, d.max, d.name, bound->second.to_string());
      bool named = used_symbols.count(d.name) != 0;
      for (const auto& [param, value] : bound_dims)
        named = named || param == d.name;
      for (const auto& in : g.input())
        for (const auto& dim : in.type().tensor_type().shape().dim())
          named = named || (dim.has_dim_param() && dim.dim_param() == d.name);
      if (!named)
        user_fail(site(), "--dim names '{}', which is no symbolic dim of the graph inputs", d.name);
      if (d.min != d.max && used_symbols.count(d.name)) graph_.symbols.push_back(d);
    }
  }

  SymbolValues planning_values() const {
    SymbolValues out;
    for (const SymbolicDim& d : options_.dims)
      out[d.name] = d.typical;
    return out;
  }

  static Shape evaluate_shape(const SymShape& dims, const SymbolValues& values) {
    Shape out;
    for (const DimExpr& d : dims)
      out.push_back(d.evaluate(values));
    return out;
  }

  // The input's bytes and elements at the largest value of every symbol fit the limits.
  void check_input_size(const std::string& name, DType dtype, const SymShape& dims) const {
    SymbolValues largest;
    for (const SymbolicDim& d : options_.dims)
      largest[d.name] = d.max;
    Shape shape = evaluate_shape(dims, largest);
    const char* at_most = is_static(dims) ? "" : " at the largest values of its symbolic dims";
    int64_t elements = 0;
    try {
      elements = shape_elements(shape);
      Tensor t;
      t.dtype = dtype;
      t.shape = shape;
      (void)t.bytes();
    } catch (const UserError& e) {
      user_fail(site(), "graph input '{}' shape {}{} is too large: {}", name,
                shape_to_string(shape), at_most, e.reason());
    }
    if (elements > options_.limits.max_tensor_elements)
      user_fail(site(),
                "graph input '{}' shape {}{} has {} elements, more than the limit of {} "
                "(--max-tensor-elements)",
                name, shape_to_string(shape), at_most, elements,
                options_.limits.max_tensor_elements);
  }

  // A graph input given a fixed value (--freeze-input NAME=FILE.pb) becomes a constant.
  void freeze_input(const onnx::ValueInfoProto& in) {
    const std::string& file = options_.frozen_inputs.at(in.name());
    ErrorSite where{file, "", ""};
    std::ifstream f(file, std::ios::binary);
    if (!f) user_fail(where, "--freeze-input {}: cannot open the file", in.name());
    onnx::TensorProto proto;
    if (!proto.ParseFromIstream(&f))
      user_fail(where, "--freeze-input {}: the file is not an ONNX TensorProto", in.name());
    std::string dir = folder_of(file);
    Tensor t = tensor_from_onnx(proto, dir, where, budget_);
    t.name = in.name();
    const auto& tt = in.type().tensor_type();
    if (tt.elem_type() != dtype_onnx_code(t.dtype))
      user_fail(where, "--freeze-input {}: the file holds {}, the input is declared {}", in.name(),
                dtype_name(t.dtype), onnx_dtype_code_name(tt.elem_type()));
    if (tt.has_shape()) {
      bool same = tt.shape().dim_size() == static_cast<int>(t.shape.size());
      for (int i = 0; same && i < tt.shape().dim_size(); ++i)
        same = !tt.shape().dim(i).has_dim_value() || tt.shape().dim(i).dim_value() == t.shape[i];
      if (!same)
        user_fail(where, "--freeze-input {}: the file's shape {} does not fit the declared one",
                  in.name(), shape_to_string(t.shape));
    }
    define(std::move(t), site());
  }

  // `opset`: the form the node has when it differs from the graph's (0: the graph's).
  void add_node(onnx::NodeProto& proto, int opset) {
    Node node;
    node.op = *op_from_onnx(proto.op_type()); // checked by check_ops_supported
    node.name = proto.name();
    node.opset = opset > 0 ? opset : graph_.opset;
    ErrorSite where{path_, proto.name(), proto.op_type(), first_output(proto)};
    for (const std::string& in : proto.input()) {
      if (in.empty()) {
        node.inputs.push_back(kNoTensor);
        continue;
      }
      auto it = names_.find(in);
      if (it == names_.end()) {
        pending_inputs_.push_back({graph_.nodes.size(), node.inputs.size(), in, where});
        node.inputs.push_back(kNoTensor);
        continue;
      }
      node.inputs.push_back(it->second);
    }
    for (const std::string& out : proto.output()) {
      if (out.empty()) {
        node.outputs.push_back(kNoTensor);
        continue;
      }
      Tensor t;
      t.name = out;
      node.outputs.push_back(define(std::move(t), where));
    }
    for (auto& attr : *proto.mutable_attribute())
      node.attrs[attr.name()] = attribute_from_onnx(attr, graph_, dir_, where, budget_);
    graph_.nodes.push_back(std::move(node));
  }

  // Inputs named before their producer appears (the model's node order need not be
  // topological), resolved once every node is known.
  void resolve_pending_inputs() {
    for (const PendingInput& p : pending_inputs_) {
      auto it = names_.find(p.name);
      if (it == names_.end())
        user_fail(p.where, "input '{}' is not defined by any node, initializer or graph input",
                  p.name);
      graph_.nodes[p.node].inputs[p.slot] = it->second;
    }
  }

  void add_outputs(const onnx::GraphProto& g) {
    resolve_pending_inputs();
    if (g.output_size() == 0) user_fail(site(), "the graph has no outputs");
    for (const auto& out : g.output()) {
      auto it = names_.find(out.name());
      if (it == names_.end())
        user_fail(site(), "graph output '{}' is not defined by any node, initializer or input",
                  out.name());
      graph_.outputs.push_back(it->second);
      DeclaredType decl;
      if (out.type().has_tensor_type()) {
        const auto& tt = out.type().tensor_type();
        decl.onnx_elem_type = tt.elem_type();
        decl.has_shape = tt.has_shape();
        for (const auto& dim : tt.shape().dim())
          decl.dims.push_back(dim.has_dim_value() ? dim.dim_value() : -1);
      } else if (out.has_type()) {
        user_fail(site(),
                  "graph output '{}' has an unsupported type: only tensors are supported "
                  "(not sequences, maps or optionals)",
                  out.name());
      }
      graph_.declared_outputs[it->second] = decl;
    }
  }

  struct PendingInput {
    size_t node;
    size_t slot;
    std::string name;
    ErrorSite where;
  };

  onnx::ModelProto& model_;
  std::string path_;
  std::string dir_;
  const LoadOptions& options_;
  Graph graph_;
  std::unordered_map<std::string, TensorId> names_;
  std::set<std::string> initializer_names_;
  ConstantBudget budget_{options_.limits};
  std::vector<PendingInput> pending_inputs_;
  std::vector<int> node_opsets_; // per node: its form's opset where it is not the graph's
};

} // namespace

std::optional<SymShape> parse_symbolic_shape_spec(const std::string& spec) {
  SymShape shape;
  if (spec.empty()) return shape;
  const char separator = spec.find(',') != std::string::npos ? ',' : 'x';
  size_t start = 0;
  while (start <= spec.size()) {
    size_t end = spec.find(separator, start);
    if (end == std::string::npos) end = spec.size();
    std::string part = spec.substr(start, end - start);
    start = end + 1;
    if (is_dim_name(part)) {
      shape.push_back(DimExpr::symbol(part));
      continue;
    }
    std::optional<Shape> value = parse_shape_spec(part);
    if (!value || value->size() != 1) return std::nullopt;
    shape.push_back((*value)[0]);
  }
  return shape;
}

bool is_dim_name(const std::string& name) {
  if (name.empty() || name.size() > 64 || std::isdigit(static_cast<unsigned char>(name[0])))
    return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
  });
}

std::optional<SymbolicDim> parse_dim_spec(const std::string& arg) {
  size_t eq = arg.rfind('=');
  if (eq == std::string::npos || !is_dim_name(arg.substr(0, eq))) return std::nullopt;
  SymbolicDim d;
  d.name = arg.substr(0, eq);
  std::string range = arg.substr(eq + 1);
  std::string typical;
  if (size_t at = range.find('@'); at != std::string::npos) {
    typical = range.substr(at + 1);
    range = range.substr(0, at);
  }
  auto number = [](const std::string& s) -> std::optional<int64_t> {
    std::optional<Shape> v = parse_shape_spec(s);
    if (!v || v->size() != 1) return std::nullopt;
    return (*v)[0];
  };
  size_t dots = range.find("..");
  std::optional<int64_t> lo = number(range.substr(0, dots));
  std::optional<int64_t> hi = dots == std::string::npos ? lo : number(range.substr(dots + 2));
  if (!lo || !hi) return std::nullopt;
  std::optional<int64_t> typ = typical.empty() ? hi : number(typical);
  if (!typ) return std::nullopt;
  d.min = *lo;
  d.max = *hi;
  d.typical = *typ;
  return d;
}

std::optional<Shape> parse_shape_spec(const std::string& spec) {
  Shape shape;
  if (spec.empty()) return shape;
  size_t start = 0;
  while (start <= spec.size()) {
    size_t end = spec.find('x', start);
    if (end == std::string::npos) end = spec.size();
    std::string part = spec.substr(start, end - start);
    if (part.empty() || part.size() > 15) return std::nullopt;
    for (char c : part)
      if (c < '0' || c > '9') return std::nullopt;
    shape.push_back(std::stoll(part));
    start = end + 1;
  }
  return shape;
}

Graph load_onnx(const std::string& path, const LoadOptions& options) {
  onnx::ModelProto model = read_model(path);
  try {
    return GraphBuilder(model, path, options).build();
  } catch (const UserError& e) {
    if (e.site().file.empty()) throw e.with_file(path);
    throw;
  }
}

} // namespace stitch
