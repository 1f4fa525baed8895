// Shape rules of the Movement ops that rearrange or resample the spatial axes of an image
// tensor: DepthToSpace and SpaceToDepth ([N, C, H, W] only), and Resize, whose output size
// comes from constant scales or sizes.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "graph/error.h"
#include "graph/shape_rules.h"

namespace stitch {

void rule_depth_to_space(InferContext& ctx) {
  ctx.expect_inputs(1, 1);
  if (ctx.rank(0) != 4)
    ctx.fail("input must have rank 4 ([N, C, H, W]), got shape {}", shape_to_string(ctx.shape(0)));
  int64_t block = ctx.req_int("blocksize");
  if (block <= 0) ctx.fail("attribute 'blocksize' must be positive, got {}", block);
  std::string mode = ctx.attr_string("mode", "DCR");
  if (mode != "DCR" && mode != "CRD")
    ctx.fail("attribute 'mode' must be DCR or CRD, got \"{}\"", mode);
  const Shape& in = ctx.shape(0);
  int64_t block_area = ctx.checked_mul(block, block, "blocksize squared");
  if (in[1] % block_area != 0)
    ctx.fail("the channel count {} is not divisible by blocksize squared ({})", in[1], block_area);
  ctx.set_output(0, ctx.dtype(0),
                 {in[0], in[1] / block_area, ctx.checked_mul(in[2], block, "output height"),
                  ctx.checked_mul(in[3], block, "output width")});
}

void rule_space_to_depth(InferContext& ctx) {
  ctx.expect_inputs(1, 1);
  if (ctx.rank(0) != 4)
    ctx.fail("input must have rank 4 ([N, C, H, W]), got shape {}", shape_to_string(ctx.shape(0)));
  int64_t block = ctx.req_int("blocksize");
  if (block <= 0) ctx.fail("attribute 'blocksize' must be positive, got {}", block);
  const Shape& in = ctx.shape(0);
  if (in[2] % block != 0 || in[3] % block != 0)
    ctx.fail("height {} and width {} must be divisible by blocksize {}", in[2], in[3], block);
  int64_t block_area = ctx.checked_mul(block, block, "blocksize squared");
  ctx.set_output(
      0, ctx.dtype(0),
      {in[0], ctx.checked_mul(in[1], block_area, "output channels"), in[2] / block, in[3] / block});
}

void rule_resize(InferContext& ctx) {
  ctx.require_opset(10);
  // Opset 10: (X, scales). From 11: (X, roi, scales, sizes); an empty tensor stands for an
  // omitted one.
  int scales_input = ctx.opset() < 11 ? 1 : 2, sizes_input = ctx.opset() < 11 ? -1 : 3;
  ctx.expect_inputs(ctx.opset() < 11 ? 2 : 1, ctx.opset() < 11 ? 2 : 4);
  auto given = [&](int i) { return ctx.has_input(i) && ctx.input(i).elements() > 0; };
  bool has_scales = given(scales_input), has_sizes = sizes_input > 0 && given(sizes_input);
  if (has_scales == has_sizes) ctx.fail("exactly one of scales and sizes must be given");

  std::string mode = ctx.attr_string("mode", "nearest");
  if (mode != "nearest" && mode != "linear" && mode != "cubic")
    ctx.fail("attribute 'mode' must be nearest, linear or cubic, got \"{}\"", mode);
  int64_t rank = ctx.rank(0);
  std::vector<int64_t> axes;
  std::string policy = "stretch";
  if (ctx.opset() >= 18) {
    for (int64_t d = 0; d < rank; ++d)
      axes.push_back(d);
    axes = ctx.normalize_axes(ctx.attr_ints("axes", axes), rank, "axes");
    policy = ctx.attr_string("keep_aspect_ratio_policy", "stretch");
    if (policy != "stretch" && policy != "not_larger" && policy != "not_smaller")
      ctx.fail("attribute 'keep_aspect_ratio_policy' must be stretch, not_larger or not_smaller, "
               "got \"{}\"",
               policy);
  } else {
    if (ctx.has_attr("axes")) ctx.fail("attribute 'axes' of Resize exists from opset 18");
    for (int64_t d = 0; d < rank; ++d)
      axes.push_back(d);
  }

  const Shape& in = ctx.shape(0);
  Shape out = in;
  if (has_scales) {
    std::vector<double> scales = ctx.const_floats(scales_input, "scales");
    if (scales.size() != axes.size())
      ctx.fail("scales has {} entries for {} axes", scales.size(), axes.size());
    for (size_t i = 0; i < axes.size(); ++i) {
      if (!(scales[i] > 0) || !std::isfinite(scales[i]))
        ctx.fail("scales must be positive and finite, got {}", scales[i]);
      double size = std::floor(static_cast<double>(in[axes[i]]) * scales[i]);
      if (!(size < 9.0e18)) ctx.fail("the scaled size of axis {} is too large", axes[i]);
      out[axes[i]] = static_cast<int64_t>(size);
    }
    ctx.set_output(0, ctx.dtype(0), std::move(out));
    return;
  }
  std::vector<int64_t> sizes = ctx.const_int_vector(sizes_input, "sizes");
  if (sizes.size() != axes.size())
    ctx.fail("sizes has {} entries for {} axes", sizes.size(), axes.size());
  for (int64_t s : sizes)
    if (s < 0) ctx.fail("sizes has the negative entry {}", s);
  if (policy == "stretch") {
    for (size_t i = 0; i < axes.size(); ++i)
      out[axes[i]] = sizes[i];
    ctx.set_output(0, ctx.dtype(0), std::move(out));
    return;
  }
  // Keep the aspect ratio: one scale for every resized axis, the smallest (not_larger) or
  // largest (not_smaller) of the per-axis ratios; sizes round half up.
  double scale = policy == "not_larger" ? INFINITY : 0.0;
  for (size_t i = 0; i < axes.size(); ++i) {
    if (in[axes[i]] == 0) ctx.fail("cannot keep the aspect ratio of the empty axis {}", axes[i]);
    double ratio = static_cast<double>(sizes[i]) / static_cast<double>(in[axes[i]]);
    scale = policy == "not_larger" ? std::min(scale, ratio) : std::max(scale, ratio);
  }
  for (int64_t a : axes) {
    double size = std::floor(scale * static_cast<double>(in[a]) + 0.5);
    if (!(size < 9.0e18)) ctx.fail("the scaled size of axis {} is too large", a);
    out[a] = static_cast<int64_t>(size);
  }
  ctx.set_output(0, ctx.dtype(0), std::move(out));
}

} // namespace stitch
