// channels-last: the layout pass (channels_last.h).
#include "graph/channels_last.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "graph/constant.h"
#include "graph/infer_context.h"
#include "graph/op_params.h"
#include "graph/reductions.h"
#include "graph/topo_sort.h"

namespace stitch {

namespace {

// Every dim 1 for every value of the symbols (a symbolic dim that is 1 at the planning values
// is not).
bool all_ones(const Tensor& t) {
  for (size_t i = 0; i < t.shape.size(); ++i)
    if (!t.dim_is(i, 1)) return false;
  return true;
}

template <typename Dims> Dims permuted(const Dims& shape, const std::vector<int64_t>& perm) {
  Dims out;
  for (int64_t axis : perm)
    out.push_back(shape[static_cast<size_t>(axis)]);
  return out;
}

// A tensor's symbolic dims permuted; none for a static tensor.
SymShape permuted_dims(const Tensor& t, const std::vector<int64_t>& perm) {
  return t.dims.empty() ? SymShape{} : permuted(t.dims, perm);
}

// A Conv this pass stores channels-last (channels_last.h).
bool chosen(const Graph& g, const Node& node, Precision precision) {
  if ((node.op != OpKind::Conv && node.op != OpKind::ConvTranspose) || node.inputs.size() < 2 ||
      node.inputs[0] == kNoTensor || node.inputs[1] == kNoTensor || node.outputs.empty() ||
      node.outputs[0] == kNoTensor)
    return false;
  const Tensor &x = g.tensor(node.inputs[0]), &w = g.tensor(node.inputs[1]),
               &y = g.tensor(node.outputs[0]);
  const size_t rank = x.shape.size();
  if (rank < 3 || rank > 5 || w.shape.size() != rank || y.shape.size() != rank) return false;
  if (!w.is_constant() || w.view_of != kNoTensor) return false;
  if (x.elements() == 0 || y.elements() == 0 || w.elements() == 0) return false;
  for (TensorId t : node.inputs)
    if (t != kNoTensor && g.tensor(t).dtype != y.dtype) return false;
  if (y.dtype == DType::Float16 || y.dtype == DType::BFloat16) return true;
  return y.dtype == DType::Float32 && precision == Precision::Tf32 &&
         NodeContext(g, node).attr_int("group", 1) == 1;
}

class ChannelsLast {
public:
  explicit ChannelsLast(Graph& graph) : g_(graph) {
    for (const Tensor& t : g_.tensors)
      names_.insert(t.name);
    producer_ = g_.producers();
    consumers_ = g_.consumers();
  }

  bool run(Precision precision) {
    std::vector<int32_t> convs;
    for (size_t n = 0; n < g_.nodes.size(); ++n)
      if (chosen(g_, g_.nodes[n], precision)) convs.push_back(static_cast<int32_t>(n));
    if (convs.empty()) return false;
    std::vector<int32_t> work;
    for (int32_t conv : convs)
      work.push_back(wrap(conv));
    while (!work.empty()) {
      const int32_t f = work.back();
      work.pop_back();
      sink(f, work);
    }
    for (size_t n = 0; n < g_.nodes.size(); ++n)
      if (!attached_.count(static_cast<int32_t>(n))) reshape_if_in_order(static_cast<int32_t>(n));
    topo_sort(g_);
    return true;
  }

private:
  std::string fresh_name(const std::string& want) { return stitch::fresh_name(names_, want); }

  // A new tensor; `dims` its symbolic shape where it has one (the pass reads the tensors it
  // made before derive_dims gives them theirs).
  TensorId add_tensor(const std::string& name, DType dtype, Shape shape, SymShape dims = {}) {
    Tensor t;
    t.name = fresh_name(name);
    t.dtype = dtype;
    t.shape = std::move(shape);
    t.typed = true;
    if (!is_static(dims)) t.dims = std::move(dims);
    const TensorId id = g_.add_tensor(std::move(t));
    producer_.resize(g_.tensors.size(), -1);
    consumers_.resize(g_.tensors.size());
    return id;
  }

  // Appends Transpose(input, perm) writing `output` (a new tensor when kNoTensor).
  int32_t add_transpose(TensorId input, const std::vector<int64_t>& perm, TensorId output,
                        const std::string& name) {
    const Tensor& in = g_.tensor(input);
    if (output == kNoTensor)
      output = add_tensor(name, in.dtype, permuted(in.shape, perm), permuted_dims(in, perm));
    Node node;
    node.op = OpKind::Transpose;
    node.name = g_.tensor(output).name;
    node.inputs = {input};
    node.outputs = {output};
    node.opset = g_.opset;
    node.attrs["perm"] = Attribute{perm};
    g_.nodes.push_back(std::move(node));
    const auto n = static_cast<int32_t>(g_.nodes.size()) - 1;
    producer_[output] = n;
    consumers_[input].push_back(n);
    return n;
  }

  void set_input(int32_t n, size_t i, TensorId to) {
    Node& node = g_.nodes[n];
    const TensorId from = node.inputs[i];
    node.inputs[i] = to;
    bool still = false;
    for (TensorId t : node.inputs)
      still = still || t == from;
    if (from != kNoTensor && !still) {
      auto& readers = consumers_[from];
      readers.erase(std::remove(readers.begin(), readers.end(), n), readers.end());
    }
    auto& now = consumers_[to];
    if (std::find(now.begin(), now.end(), n) == now.end()) now.push_back(n);
  }

  // A constant (broadcast to `rank` axes) stored channels-last; one copy however many nodes
  // read it (a filter two Convs share).
  TensorId permuted_constant(TensorId t, size_t rank) {
    auto [cached, fresh] = permuted_.try_emplace({t, rank}, kNoTensor);
    if (!fresh) return cached->second;
    const Tensor& source = g_.tensor(t);
    Shape aligned(rank - source.shape.size(), 1);
    aligned.insert(aligned.end(), source.shape.begin(), source.shape.end());
    const std::vector<int64_t> to_last = channels_last_perm(rank);
    auto data = std::make_shared<ConstantData>();
    data->bytes = transpose_bytes(source.constant->bytes, aligned, to_last,
                                  static_cast<size_t>(dtype_size(source.dtype)));
    const TensorId id =
        add_tensor(source.name + "/channels_last", source.dtype, permuted(aligned, to_last));
    g_.tensor(id).constant = std::move(data);
    permuted_[{t, rank}] = id;
    return id;
  }

  // A Transpose that keeps the element order (it moves only axes of size 1: [N, 1, 1, C] to
  // [N, C, 1, 1]) becomes a Reshape, which make-views turns into a view: no copy.
  void reshape_if_in_order(int32_t n) {
    Node& node = g_.nodes[n];
    if (node.op != OpKind::Transpose || node.inputs.size() != 1 || node.outputs.size() != 1) return;
    const Tensor& in = g_.tensor(node.inputs[0]);
    // (A zero-size tensor stays a Transpose: Reshape reads a 0 in its shape as "keep".)
    if (shape_elements(in.shape) == 0) return;
    int64_t last = -1;
    for (int64_t axis : read_perm(NodeContext(g_, node))) {
      if (in.dim_is(static_cast<size_t>(axis), 1)) continue;
      if (axis < last) return;
      last = axis;
    }
    const SymShape out = g_.tensor(node.outputs[0]).sym_shape();
    const TensorId dims = add_tensor(g_.tensor(node.outputs[0]).name + "/shape", DType::Int64, {});
    set_shape_value(g_, g_.tensor(dims), out);
    Node& reshape = g_.nodes[n];
    reshape.op = OpKind::Reshape;
    reshape.attrs.clear();
    reshape.inputs.push_back(dims);
    consumers_[dims].push_back(n);
  }

  // A to_last Transpose of `t` (one per tensor: its readers share the copy).
  TensorId stored_last(TensorId t) {
    auto [cached, fresh] = last_of_.try_emplace(t, kNoTensor);
    if (fresh) {
      const std::string name = g_.tensor(t).name + "/channels_last";
      const std::vector<int64_t> perm = channels_last_perm(g_.tensor(t).shape.size());
      cached->second = g_.nodes[add_transpose(t, perm, kNoTensor, name)].outputs[0];
    }
    return cached->second;
  }

  // The channels a channels-last Conv's input is padded to: a multiple of 16 bytes of
  // elements (8 float16 or bfloat16, 4 float32), the alignment cuDNN's tensor-core kernels
  // need to read NHWC; the same count when it is one already, or for a ConvTranspose or a
  // grouped Conv (whose channels per group would change).
  int64_t padded_channels(int32_t conv) const {
    const Node& node = g_.nodes[conv];
    const Tensor& x = g_.tensor(node.inputs[0]);
    const int64_t channels = x.shape[1];
    if (node.op != OpKind::Conv || NodeContext(g_, node).attr_int("group", 1) != 1) return channels;
    const int64_t lanes = 16 / dtype_size(x.dtype);
    return (channels + lanes - 1) / lanes * lanes;
  }

  // Pad(t, zeros after the last axis up to `channels`) of a channels-last t; one per tensor.
  TensorId padded_last(TensorId t, int64_t channels) {
    auto [cached, fresh] = padded_.try_emplace({t, channels}, kNoTensor);
    if (!fresh) return cached->second;
    const Shape& shape = g_.tensor(t).shape;
    std::vector<int64_t> pads(2 * shape.size(), 0);
    pads.back() = channels - shape.back();
    Shape out = shape;
    out.back() = channels;
    SymShape dims = g_.tensor(t).dims;
    if (!dims.empty()) dims.back() = channels;
    const TensorId padded = add_tensor(g_.tensor(t).name + "/padded", g_.tensor(t).dtype,
                                       std::move(out), std::move(dims));
    Node node;
    node.op = OpKind::Pad;
    node.name = g_.tensor(padded).name;
    node.opset = g_.opset;
    node.inputs = {t};
    if (g_.opset < 11) {
      node.attrs["pads"] = Attribute{pads};
    } else {
      const TensorId list = add_tensor(g_.tensor(padded).name + "/pads", DType::Int64,
                                       {static_cast<int64_t>(pads.size())});
      g_.tensor(list).constant = make_constant_from_int64(DType::Int64, pads);
      node.inputs.push_back(list);
    }
    node.outputs = {padded};
    g_.nodes.push_back(std::move(node));
    const auto n = static_cast<int32_t>(g_.nodes.size()) - 1;
    producer_[padded] = n;
    for (TensorId input : g_.nodes[n].inputs)
      consumers_[input].push_back(n);
    cached->second = padded;
    return padded;
  }

  // The filter W [K, C, k...] with zero filters for the channels C..channels-1 (one copy
  // however many Convs read it).
  TensorId padded_filter(TensorId w, int64_t channels) {
    auto [cached, fresh] = padded_.try_emplace({w, channels}, kNoTensor);
    if (!fresh) return cached->second;
    const Tensor& source = g_.tensor(w);
    const auto size = static_cast<size_t>(dtype_size(source.dtype));
    const int64_t filters = source.shape[0], taps = shape_elements(source.shape) / filters;
    const int64_t padded_taps = taps / source.shape[1] * channels;
    auto data = std::make_shared<ConstantData>();
    data->bytes =
        zero_padded_rows(source.constant->bytes, filters, static_cast<size_t>(taps) * size,
                         static_cast<size_t>(padded_taps) * size);
    Shape shape = source.shape;
    shape[1] = channels;
    const TensorId id = add_tensor(source.name + "/padded", source.dtype, std::move(shape));
    g_.tensor(id).constant = std::move(data);
    cached->second = id;
    return id;
  }

  // Step 1 for one Conv; returns the to_first Transpose that now produces its result.
  int32_t wrap(int32_t conv) {
    const size_t rank = g_.tensor(g_.nodes[conv].inputs[0]).shape.size();
    const std::vector<int64_t> to_last = channels_last_perm(rank),
                               to_first = channels_first_perm(rank);
    const int64_t channels = padded_channels(conv);
    const TensorId x = g_.nodes[conv].inputs[0];
    const bool pad = channels != g_.tensor(x).shape[1];
    TensorId x_last = stored_last(x);
    if (pad) x_last = padded_last(x_last, channels);
    const int32_t x_first =
        add_transpose(x_last, to_first, kNoTensor, g_.tensor(x).name + "/channels_first");
    set_input(conv, 0, g_.nodes[x_first].outputs[0]);
    attached_.insert(x_first);

    TensorId w = g_.nodes[conv].inputs[1];
    if (pad) w = padded_filter(w, channels);
    const int32_t w_first = add_transpose(permuted_constant(w, rank), to_first, kNoTensor,
                                          g_.tensor(w).name + "/channels_first");
    set_input(conv, 1, g_.nodes[w_first].outputs[0]);
    attached_.insert(w_first);

    const TensorId y = g_.nodes[conv].outputs[0];
    const TensorId product = add_tensor(g_.tensor(y).name + "/conv", g_.tensor(y).dtype,
                                        g_.tensor(y).shape, g_.tensor(y).dims);
    g_.nodes[conv].outputs[0] = product;
    producer_[product] = conv;
    const int32_t y_last =
        add_transpose(product, to_last, kNoTensor, g_.tensor(y).name + "/channels_last");
    attached_.insert(y_last);
    return add_transpose(g_.nodes[y_last].outputs[0], to_first, y, "");
  }

  // Whether `n` is Transpose(v, perm) of a rank-`rank` v.
  bool is_transpose(int32_t n, const std::vector<int64_t>& perm) const {
    if (n < 0) return false;
    const Node& node = g_.nodes[n];
    return node.op == OpKind::Transpose && node.inputs.size() == 1 &&
           read_perm(NodeContext(g_, node)) == perm;
  }

  // Whether the pointwise `n` reading `shown` (a to_first Transpose's output) can compute
  // channels-last instead.
  bool movable(int32_t n, TensorId shown, size_t rank) const {
    const Node& node = g_.nodes[n];
    if (global_pool(node) || reduce_op(node.op))
      return node.inputs[0] == shown && !reduced_axes(node).empty();
    if (!op_is_pointwise(node.op) || node.outputs.size() != 1 || node.outputs[0] == kNoTensor)
      return false;
    if (node.op == OpKind::Expand || node.op == OpKind::CastLike) return false;
    if (node.attrs.count("axis") || node.attrs.count("broadcast")) return false; // legacy
    if (g_.tensor(node.outputs[0]).shape.size() != rank) return false;
    const std::vector<int64_t> to_first = channels_first_perm(rank);
    for (TensorId t : node.inputs) {
      if (t == kNoTensor || t == shown) continue;
      const Tensor& operand = g_.tensor(t);
      if (operand.shape.size() > rank) return false;
      if (is_transpose(producer_[t], to_first) || all_ones(operand)) continue;
      if (operand.is_constant() && operand.view_of == kNoTensor) continue;
      if (operand.shape.size() != rank) return false;
    }
    return true;
  }

  static bool global_pool(const Node& node) {
    return (node.op == OpKind::GlobalAveragePool || node.op == OpKind::GlobalMaxPool) &&
           node.inputs.size() == 1 && node.outputs.size() == 1;
  }

  // A Reduce* op of the reduction table (axes as an attribute or input), not a global pool.
  static bool reduce_op(OpKind op) {
    return reduction_rule(op) != nullptr && op != OpKind::GlobalAveragePool &&
           op != OpKind::GlobalMaxPool;
  }

  // The logical axes a global pool or a Reduce* node keeping its dims reduces; empty when it
  // is neither (or drops its axes, or is a no-op).
  std::vector<bool> reduced_axes(const Node& node) const {
    const size_t rank = g_.tensor(node.inputs[0]).shape.size();
    if (global_pool(node)) {
      std::vector<bool> reduced(rank, true);
      reduced[0] = reduced[1] = false;
      return reduced;
    }
    if (!reduce_op(node.op) || node.outputs.size() != 1) return {};
    const ReduceParams params = read_reduce_params(NodeContext(g_, node));
    if (params.noop || !params.keepdims) return {};
    return params.reduced;
  }

  // The reduction `n` of a channels-last tensor: the same reduction over the same axes where
  // channels-last stores them (a global pool becomes ReduceMean or ReduceMax), dims kept, the
  // axes an attribute or, from the op's opset for it, input 1.
  void reduce_channels_last(int32_t n, const std::vector<bool>& reduced, size_t rank) {
    const std::vector<int64_t> to_last = channels_last_perm(rank);
    std::vector<int64_t> axes;
    for (size_t j = 0; j < rank; ++j)
      if (reduced[static_cast<size_t>(to_last[j])]) axes.push_back(static_cast<int64_t>(j));
    Node& node = g_.nodes[n];
    if (node.op == OpKind::GlobalAveragePool) node.op = OpKind::ReduceMean;
    if (node.op == OpKind::GlobalMaxPool) node.op = OpKind::ReduceMax;
    node.attrs.erase("axes");
    node.attrs.erase("noop_with_empty_axes");
    node.attrs["keepdims"] = Attribute{int64_t{1}};
    if (node.opset < reduce_axes_input_opset(node.op)) {
      node.attrs["axes"] = Attribute{axes};
      return;
    }
    const TensorId list = add_tensor(g_.tensor(node.outputs[0]).name + "/axes", DType::Int64,
                                     {static_cast<int64_t>(axes.size())});
    g_.tensor(list).constant = make_constant_from_int64(DType::Int64, axes);
    if (g_.nodes[n].inputs.size() < 2) {
      g_.nodes[n].inputs.push_back(list);
      consumers_[list].push_back(n);
    } else {
      set_input(n, 1, list);
    }
  }

  // Reshape(input, shape) into a new tensor named after `name`.
  // The target may be symbolic: the new tensor's dims follow after the pass.
  TensorId add_reshape(TensorId input, const SymShape& shape, const std::string& name) {
    const TensorId out = add_tensor(name, g_.tensor(input).dtype, g_.planning_shape(shape), shape);
    const TensorId dims = add_tensor(name + "/shape", DType::Int64, {});
    set_shape_value(g_, g_.tensor(dims), shape);
    Node node;
    node.op = OpKind::Reshape;
    node.name = g_.tensor(out).name;
    node.opset = g_.opset;
    node.inputs = {input, dims};
    node.outputs = {out};
    g_.nodes.push_back(std::move(node));
    const auto n = static_cast<int32_t>(g_.nodes.size()) - 1;
    producer_[out] = n;
    consumers_[input].push_back(n);
    consumers_[dims].push_back(n);
    return out;
  }

  // Whether the pool `n` reading `shown` can pool the channels-last tensor instead: a MaxPool
  // without its Indices output or an AveragePool, its pads explicit (or VALID).
  bool pool_movable(int32_t n, TensorId shown) const {
    const Node& node = g_.nodes[n];
    if (node.op != OpKind::MaxPool && node.op != OpKind::AveragePool) return false;
    if (node.inputs.size() != 1 || node.inputs[0] != shown || node.outputs.empty() ||
        node.outputs[0] == kNoTensor)
      return false;
    for (size_t i = 1; i < node.outputs.size(); ++i)
      if (node.outputs[i] != kNoTensor) return false;
    const std::string auto_pad = NodeContext(g_, node).attr_string("auto_pad", "NOTSET");
    return (auto_pad == "NOTSET" || auto_pad == "VALID") && node.attrs.count("kernel_shape");
  }

  // The pool `n` of the channels-last `stored` [N, spatial..., C]: the same pool over one more
  // spatial axis, the channels (window 1, stride 1, no padding), of `stored` viewed as
  // [N, 1, spatial..., C]; its result [N, 1, out..., C] viewed as [N, out..., C]. Each output
  // element is the same fold of the same taps; a warp's threads read adjacent channels.
  // Returns the to_first Transpose that now gives the pool's result.
  int32_t pool_channels_last(int32_t n, TensorId stored) {
    const std::string name =
        g_.nodes[n].name.empty() ? g_.tensor(g_.nodes[n].outputs[0]).name : g_.nodes[n].name;
    const Shape in = g_.tensor(stored).shape;
    const TensorId out = g_.nodes[n].outputs[0];
    const Shape out_first = g_.tensor(out).shape; // [N, C, out...]
    const size_t spatial = in.size() - 2;
    // The images and spatial extents may be symbolic (the pads are fixed: explicit or VALID).
    const SymShape in_dims = g_.tensor(stored).sym_shape(), out_dims = g_.tensor(out).sym_shape();
    SymShape in_windows = {in_dims[0], 1};
    in_windows.insert(in_windows.end(), in_dims.begin() + 1, in_dims.end());
    const TensorId x = add_reshape(stored, in_windows, name + "/windows");
    SymShape pooled_dims = {out_dims[0], 1}, out_last = {out_dims[0]};
    for (size_t i = 0; i < spatial; ++i) {
      pooled_dims.push_back(out_dims[2 + i]);
      out_last.push_back(out_dims[2 + i]);
    }
    pooled_dims.push_back(out_dims[1]);
    out_last.push_back(out_dims[1]);

    Node& node = g_.nodes[n];
    const WindowParams w =
        read_window_params(NodeContext(g_, node), NodeContext(g_, node).req_ints("kernel_shape"));
    std::vector<int64_t> kernel = w.kernel, strides = w.strides, dilations = w.dilations, begins,
                         ends;
    for (size_t i = 0; i < spatial; ++i) {
      const AxisPads pads = window_pads(w, i, in[1 + i], out_first[2 + i]);
      begins.push_back(pads.begin);
      ends.push_back(pads.end);
    }
    kernel.push_back(1);
    strides.push_back(1);
    dilations.push_back(1);
    begins.push_back(0);
    ends.push_back(0);
    begins.insert(begins.end(), ends.begin(), ends.end());
    node.attrs["kernel_shape"] = Attribute{kernel};
    node.attrs["strides"] = Attribute{strides};
    node.attrs["pads"] = Attribute{begins};
    if (node.attrs.count("dilations")) node.attrs["dilations"] = Attribute{dilations};
    node.attrs.erase("auto_pad");
    node.attrs.erase("storage_order");
    node.outputs.resize(1);
    set_input(n, 0, x);
    const TensorId pooled = add_tensor(name + "/windows_pooled", g_.tensor(out).dtype,
                                       g_.planning_shape(pooled_dims), pooled_dims);
    g_.nodes[n].outputs[0] = pooled;
    producer_[pooled] = n;
    const TensorId last = add_reshape(pooled, out_last, g_.tensor(out).name + "/channels_last");
    return add_transpose(last, channels_first_perm(in.size()), out, "");
  }

  // Step 2 for the to_first Transpose `f`: its pointwise readers move past it, each leaving
  // a to_first Transpose of its own result (pushed to `work`).
  void sink(int32_t f, std::vector<int32_t>& work) {
    const TensorId stored = g_.nodes[f].inputs[0], shown = g_.nodes[f].outputs[0];
    const size_t rank = g_.tensor(stored).shape.size();
    const std::vector<int64_t> to_last = channels_last_perm(rank),
                               to_first = channels_first_perm(rank);
    const std::vector<int32_t> readers = consumers_[shown];
    for (int32_t n : readers) {
      Node& node = g_.nodes[n];
      if (is_transpose(n, to_last)) { // the pair cancels
        node.op = OpKind::Identity;
        node.attrs.clear();
        set_input(n, 0, stored);
        continue;
      }
      if (pool_movable(n, shown)) {
        work.push_back(pool_channels_last(n, stored));
        continue;
      }
      if (!movable(n, shown, rank)) continue;
      const std::vector<bool> reduced = reduced_axes(g_.nodes[n]);
      const bool pool = !reduced.empty();
      if (pool) {
        set_input(n, 0, stored);
        reduce_channels_last(n, reduced, rank);
      }
      for (size_t i = 0; i < g_.nodes[n].inputs.size() && !pool; ++i) {
        const TensorId t = g_.nodes[n].inputs[i];
        if (t == kNoTensor) continue;
        const Tensor& operand = g_.tensor(t);
        if (t == shown) {
          set_input(n, i, stored);
        } else if (is_transpose(producer_[t], to_first)) {
          set_input(n, i, g_.nodes[producer_[t]].inputs[0]);
        } else if (all_ones(operand)) {
          continue;
        } else if (operand.is_constant() && operand.view_of == kNoTensor) {
          set_input(n, i, permuted_constant(t, rank));
        } else {
          set_input(n, i, stored_last(t));
        }
      }
      const TensorId out = g_.nodes[n].outputs[0];
      const TensorId out_last = add_tensor(
          g_.tensor(out).name + "/channels_last", g_.tensor(out).dtype,
          permuted(g_.tensor(out).shape, to_last), permuted_dims(g_.tensor(out), to_last));
      g_.nodes[n].outputs[0] = out_last;
      producer_[out_last] = n;
      work.push_back(add_transpose(out_last, to_first, out, ""));
    }
  }

  Graph& g_;
  std::set<std::string> names_;
  std::vector<int32_t> producer_;
  std::vector<std::vector<int32_t>> consumers_;
  std::map<TensorId, TensorId> last_of_; // a tensor -> its to_last Transpose's output
  std::set<int32_t> attached_;           // the Transposes a Conv reads or writes through
  std::map<std::pair<TensorId, size_t>, TensorId> permuted_; // (constant, rank) -> stored copy
  std::map<std::pair<TensorId, int64_t>, TensorId> padded_;  // (tensor, channels) -> padded
};

} // namespace

bool channels_last(Graph& graph, Precision precision) { return ChannelsLast(graph).run(precision); }

} // namespace stitch
