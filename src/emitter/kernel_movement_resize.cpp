// Resize: one thread per output element. For each resized axis the output coordinate is
// mapped to an input coordinate by the node's coordinate_transformation_mode (in double, as the
// ONNX reference computes it), then the element is the nearest input element (every
// nearest_mode) or the weighted sum of the linear (2 per axis: bilinear, trilinear, ...) or
// cubic (4 per axis) taps, accumulated in fp32 (fp64 for double and 32/64-bit integers), taps
// outside the input clamped to its edge. tf_crop_and_resize writes extrapolation_value where
// the coordinate leaves the input. With antialias=1 a downsampled axis (scale < 1) widens the
// linear or cubic filter by 1 / scale, over as many taps as that covers.
#include <cmath>

#include "emitter/kernel_movement.h"

namespace stitch {

namespace {

struct ResizeAxis {
  int64_t axis = 0;
  double scale = 1.0;
  // The axis's input and output extents and its scale as code: literals, or over symbolic
  // dims the run's (a scale from sizes is the run's output extent over its input extent).
  std::string in_size, out_size, scale_code;
  bool run_scale = false; // from sizes over a symbolic axis: scale_code is out / in of the run
  std::string roi_start = "0.0", roi_end = "1.0"; // expressions: literals, or reads of `roi`
  int64_t taps = 1;                               // inputs per output on this axis
  bool antialias = false;                         // widened filter (downsampling with antialias=1)
};

struct ResizeParams {
  std::string mode;        // nearest, linear, cubic
  std::string coordinates; // coordinate_transformation_mode
  std::string nearest_mode;
  double cubic_a = -0.75;
  bool exclude_outside = false;
  double extrapolation = 0.0;
  std::vector<ResizeAxis> axes; // the axes that change, in order
  bool runtime_roi = false;     // tf_crop_and_resize with a roi computed at run time
};

const char* coordinates_enum(const GroupEmitContext& ctx, const std::string& mode) {
  if (mode == "half_pixel") return "HalfPixel";
  if (mode == "pytorch_half_pixel") return "PytorchHalfPixel";
  if (mode == "align_corners") return "AlignCorners";
  if (mode == "asymmetric") return "Asymmetric";
  if (mode == "tf_crop_and_resize") return "TfCropAndResize";
  if (mode == "half_pixel_symmetric") return "HalfPixelSymmetric";
  ctx.spec_error(fmt::format("Resize coordinate_transformation_mode \"{}\"", mode));
}

const char* nearest_enum(const GroupEmitContext& ctx, const std::string& mode) {
  if (mode == "round_prefer_floor") return "RoundPreferFloor";
  if (mode == "round_prefer_ceil") return "RoundPreferCeil";
  if (mode == "floor") return "Floor";
  if (mode == "ceil") return "Ceil";
  ctx.spec_error(fmt::format("Resize nearest_mode \"{}\"", mode));
}

std::string double_literal(double v) {
  if (std::isinf(v)) return v < 0 ? "-INFINITY" : "INFINITY";
  std::string text = fmt::format("{:.17g}", v);
  if (text.find_first_of(".en") == std::string::npos) text += ".0";
  return text;
}

ResizeParams read_resize(const GroupEmitContext& ctx) {
  const Node& node = ctx.node();
  const Graph& g = ctx.graph();
  NodeContext nc(g, node);
  const Shape& in = nc.shape(0);
  const Shape& out = ctx.tensor(node.outputs[0]).shape;
  const SymShape in_dims = g.tensor(node.inputs[0]).sym_shape();
  const SymShape out_dims = g.tensor(node.outputs[0]).sym_shape();
  const int64_t rank = nc.rank(0);
  ResizeParams p;
  p.mode = nc.attr_string("mode", "nearest");
  if (nc.opset() < 11) {
    // Opset 10 resizes as Upsample did: x / scale, nearest rounds down.
    p.coordinates = "asymmetric";
    p.nearest_mode = "floor";
  } else {
    p.coordinates = nc.attr_string("coordinate_transformation_mode", "half_pixel");
    p.nearest_mode = nc.attr_string("nearest_mode", "round_prefer_floor");
    p.cubic_a = nc.attr_float("cubic_coeff_a", -0.75);
    p.exclude_outside = nc.attr_int("exclude_outside", 0) != 0;
    p.extrapolation = nc.attr_float("extrapolation_value", 0.0);
  }
  std::vector<int64_t> axes;
  for (int64_t d = 0; d < rank; ++d)
    axes.push_back(d);
  std::string policy = "stretch";
  if (nc.opset() >= 18) {
    axes = nc.normalize_axes(nc.attr_ints("axes", axes), rank, "axes");
    policy = nc.attr_string("keep_aspect_ratio_policy", "stretch");
  }
  const int scales_input = nc.opset() < 11 ? 1 : 2, sizes_input = nc.opset() < 11 ? -1 : 3;
  auto given = [&](int i) { return i > 0 && nc.has_input(i) && nc.input(i).elements() > 0; };

  std::vector<double> scale(rank, 1.0);
  const bool by_sizes = !given(scales_input);
  if (!by_sizes) {
    std::vector<double> scales = nc.const_floats(scales_input, "scales");
    for (size_t i = 0; i < axes.size(); ++i)
      scale[axes[i]] = scales[i];
  } else {
    std::vector<int64_t> sizes = nc.const_int_vector(sizes_input, "sizes");
    if (policy == "stretch") {
      for (size_t i = 0; i < axes.size(); ++i)
        scale[axes[i]] = static_cast<double>(sizes[i]) / static_cast<double>(in[axes[i]]);
    } else {
      double uniform = policy == "not_larger" ? INFINITY : 0.0;
      for (size_t i = 0; i < axes.size(); ++i) {
        double ratio = static_cast<double>(sizes[i]) / static_cast<double>(in[axes[i]]);
        uniform = policy == "not_larger" ? std::min(uniform, ratio) : std::max(uniform, ratio);
      }
      for (int64_t a : axes)
        scale[a] = uniform;
    }
  }
  // tf_crop_and_resize's crop box: [starts..., ends...] over `axes`, constant or read at
  // run time (then every axis it names is resized).
  std::vector<std::string> roi_start(rank, "0.0"), roi_end(rank, "1.0");
  std::vector<bool> cropped(rank, false);
  if (p.coordinates == "tf_crop_and_resize") {
    if (!given(1)) ctx.spec_error("Resize tf_crop_and_resize without a roi input");
    if (nc.input(1).elements() != static_cast<int64_t>(2 * axes.size()))
      ctx.spec_error(fmt::format("Resize roi with {} values for {} axes", nc.input(1).elements(),
                                 axes.size()));
    p.runtime_roi = !nc.input(1).is_constant();
    std::vector<double> roi = p.runtime_roi ? std::vector<double>() : nc.const_floats(1, "roi");
    for (size_t i = 0; i < axes.size(); ++i) {
      size_t j = axes.size() + i;
      if (p.runtime_roi) {
        roi_start[axes[i]] = fmt::format("double(roi[{}])", i);
        roi_end[axes[i]] = fmt::format("double(roi[{}])", j);
        cropped[axes[i]] = true;
        continue;
      }
      roi_start[axes[i]] = double_literal(roi[i]);
      roi_end[axes[i]] = double_literal(roi[j]);
      cropped[axes[i]] = roi[i] != 0.0 || roi[j] != 1.0;
    }
  }
  const bool antialias =
      nc.opset() >= 18 && nc.attr_int("antialias", 0) != 0 && p.mode != "nearest";
  const int64_t plain_taps = p.mode == "nearest" ? 1 : p.mode == "linear" ? 2 : 4;
  for (int64_t d = 0; d < rank; ++d) {
    const auto k = static_cast<size_t>(d);
    // Over symbolic dims an axis is left alone only where its extents are one expression (at
    // the planning binding two different ones may be equal).
    const bool symbolic = !in_dims[k].is_constant() || !out_dims[k].is_constant();
    const bool same = symbolic ? in_dims[k] == out_dims[k] : out[k] == in[k];
    bool identity = same && (scale[k] == 1.0 || (symbolic && by_sizes)) && !cropped[k];
    if (identity) continue;
    ResizeAxis a{d, scale[k], "", "", "", false, roi_start[k], roi_end[k], plain_taps, false};
    a.in_size = dim_code(g, in_dims[k]);
    a.out_size = dim_code(g, out_dims[k]);
    a.run_scale = symbolic && by_sizes;
    a.scale_code = a.run_scale ? fmt::format("(double({}) / double({}))", a.out_size, a.in_size)
                               : double_literal(scale[k]);
    if (antialias && scale[d] < 1.0) {
      // As the reference: the filter's support [start, 1 - start] around the coordinate.
      int64_t start =
          static_cast<int64_t>(std::floor((p.mode == "cubic" ? -2.0 : -1.0) / scale[d])) + 1;
      a.taps = 2 - 2 * start;
      a.antialias = true;
    }
    p.axes.push_back(a);
  }
  return p;
}

} // namespace

void emit_resize(const GroupEmitContext& ctx, CodeWriter& out) {
  const Node& node = ctx.node();
  ResizeParams p = read_resize(ctx);
  const Tensor& input = ctx.tensor(node.inputs[0]);
  const Tensor& result = ctx.tensor(node.outputs[0]);
  const Shape& in = input.shape;
  // Over symbolic dims every extent is the run's: coordinates from the output's extents, the
  // input read at offsets of its own.
  const bool symbolic = input.is_dynamic() || result.is_dynamic();
  const SymShape in_dims = symbolic ? input.sym_shape() : sym_shape_of(in);
  const SymShape in_strides = sym_row_major_strides(in_dims);
  auto offset = [&](const std::vector<std::string>& coords, const SymShape& strides) {
    if (symbolic) return symbolic_offset(ctx, coords, strides);
    Shape fixed;
    for (const DimExpr& stride : strides)
      fixed.push_back(stride.constant_value());
    return linear_index(coords, fixed);
  };
  const std::string type = ctype(input.dtype, ctx);
  const bool wide = input.dtype == DType::Float64 ||
                    (dtype_size(input.dtype) >= 4 && input.dtype != DType::Float32);
  const std::string acc = wide ? "double" : "float";
  const bool nearest = p.mode == "nearest";
  const bool crop = p.coordinates == "tf_crop_and_resize";

  std::string kernel = ctx.kernel_name();
  std::vector<KernelArg> args = {input_arg(ctx, node.inputs[0], "in"),
                                 output_arg(ctx, node.outputs[0], "out")};
  if (p.runtime_roi) args.push_back(input_arg(ctx, node.inputs[1], "roi"));
  std::vector<std::string> resized;
  for (const ResizeAxis& a : p.axes)
    resized.push_back(a.run_scale ? fmt::format("{} (scale of the run)", a.axis)
                                  : fmt::format("{} (scale {})", a.axis, a.scale));
  std::vector<std::string> notes = {fmt::format(
      "Resize {} -> {}: {} mode, {} coordinates{}; resized axes {}.", sym_shape_to_string(in_dims),
      sym_shape_to_string(result.sym_shape()), p.mode, p.coordinates,
      p.mode == "nearest" ? ", nearest " + p.nearest_mode : std::string(),
      resized.empty() ? "none" : fmt::format("{}", fmt::join(resized, ", ")))};
  open_kernel(ctx, out, kernel, args, notes);
  // The run's extents and scales of the resized axes, once per thread.
  const SymShape out_dims = result.sym_shape();
  for (ResizeAxis& a : p.axes) {
    const auto d = static_cast<size_t>(a.axis);
    const DimExpr& in_extent = in_dims[d];
    const DimExpr& out_extent = out_dims[d];
    if (!in_extent.is_constant()) {
      out.linef("const int64_t in_extent{} = {}; // {}", d, a.in_size, in_extent.to_string());
      a.in_size = fmt::format("in_extent{}", d);
    }
    if (!out_extent.is_constant()) {
      out.linef("const int64_t out_extent{} = {}; // {}", d, a.out_size, out_extent.to_string());
      a.out_size = fmt::format("out_extent{}", d);
    }
    if (a.run_scale) {
      out.linef("const double scale{} = double({}) / double({}); // sizes over the run's extent", d,
                a.out_size, a.in_size);
      a.scale_code = fmt::format("scale{}", d);
    }
  }
  if (ctx.group().launch.work_per_block > 0)
    open_symbolic_loop(ctx, out);
  else
    open_grid_stride_loop(out, result.elements());
  std::vector<std::string> coords;
  if (symbolic) {
    emit_run_coordinates(ctx, out, result.sym_shape());
    coords = coordinate_names(result.shape.size(), "c");
  } else {
    emit_coordinates(out, result.shape, "i");
    coords = coordinate_names(result.shape);
  }
  std::vector<std::string> outside;
  for (const ResizeAxis& a : p.axes) {
    out.linef("const double x{} = stitch::movement::resize_coordinate(c{}, "
              "stitch::movement::ResizeCoordinates::{}, {}, {}, {}, {}, {});",
              a.axis, a.axis, coordinates_enum(ctx, p.coordinates), a.scale_code, a.in_size,
              a.out_size, a.roi_start, a.roi_end);
    if (crop)
      outside.push_back(
          fmt::format("stitch::movement::resize_outside(x{}, {})", a.axis, a.in_size));
  }
  if (!outside.empty())
    out.linef("if ({}) {{ out[i] = {}; continue; }}", fmt::join(outside, " || "),
              typed_literal(input.dtype, p.extrapolation, ctx));

  if (nearest || p.axes.empty()) {
    for (const ResizeAxis& a : p.axes) {
      out.linef("const int64_t k{} = stitch::movement::resize_nearest(x{}, "
                "stitch::movement::ResizeNearest::{}, {});",
                a.axis, a.axis, nearest_enum(ctx, p.nearest_mode), a.in_size);
      coords[static_cast<size_t>(a.axis)] = fmt::format("k{}", a.axis);
    }
    out.linef("out[i] = in[{}];", offset(coords, in_strides));
    out.close();
    finish_kernel(ctx, out, kernel, args);
    return;
  }

  for (const ResizeAxis& a : p.axes) {
    out.linef("int64_t k{}[{}];", a.axis, a.taps);
    out.linef("{} w{}[{}];", acc, a.axis, a.taps);
    if (a.antialias)
      out.linef("stitch::movement::resize_antialias_taps(x{0}, {1}, {2}, {3}, {4}, {5}, {6}, k{0}, "
                "w{0});",
                a.axis, a.in_size, double_literal(a.scale), p.mode == "cubic" ? "true" : "false",
                double_literal(p.cubic_a), p.exclude_outside ? "true" : "false", a.taps);
    else if (p.mode == "linear")
      out.linef("stitch::movement::resize_linear_taps(x{0}, {1}, k{0}, w{0});", a.axis, a.in_size);
    else
      out.linef("stitch::movement::resize_cubic_taps(x{0}, {1}, {2}, {3}, k{0}, w{0});", a.axis,
                a.in_size, double_literal(p.cubic_a), p.exclude_outside ? "true" : "false");
  }
  // The unresized axes' part of the input offset, then one loop per resized axis.
  std::vector<std::string> fixed = coords;
  for (const ResizeAxis& a : p.axes)
    fixed[static_cast<size_t>(a.axis)] = "0";
  out.linef("const int64_t base = {};", offset(fixed, in_strides));
  out.linef("{} sum = 0;", acc);
  std::vector<std::string> weight_terms, offset_terms = {"base"};
  for (const ResizeAxis& a : p.axes) {
    out.open(fmt::format("for (int t{0} = 0; t{0} < {1}; ++t{0})", a.axis, a.taps));
    weight_terms.push_back(fmt::format("w{0}[t{0}]", a.axis));
    offset_terms.push_back(
        offset({fmt::format("k{0}[t{0}]", a.axis)}, {in_strides[static_cast<size_t>(a.axis)]}));
  }
  out.linef("sum += {} * {}(in[{}]);", fmt::join(weight_terms, " * "), acc,
            fmt::join(offset_terms, " + "));
  for (size_t j = 0; j < p.axes.size(); ++j)
    out.close();
  out.linef("out[i] = stitch::movement::saturate_round<{}>(sum);", type);
  out.close();
  finish_kernel(ctx, out, kernel, args);
}

} // namespace stitch
