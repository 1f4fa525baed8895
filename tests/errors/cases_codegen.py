"""Error cases: models that are valid ONNX but ask for something code generation does not do.

check_code_generation refuses each before any planner runs, as a user error naming the node, so
that a plan (and a --report describing it) never exists for a model that cannot compile.
"""

from onnx import TensorProto, helper

from corpus_lib import case, floats, ints, model, vi


@case("node 'resize0' (Resize): unsupported in code generation: Resize "
      "coordinate_transformation_mode \"tf_half_pixel_for_nn\"", args=("--report", "/dev/null"))
def resize_unsupported_coordinate_mode(d):
    """Resize in opset 11's tf_half_pixel_for_nn mode is refused before planning, also when only
    a report is asked for."""
    return model([helper.make_node("Resize", ["x", "roi", "scales"], ["y"], name="resize0",
                                   mode="nearest",
                                   coordinate_transformation_mode="tf_half_pixel_for_nn")],
                 [vi("x", [1, 1, 2, 2])], [vi("y", [1, 1, 4, 4])],
                 [floats("roi", [0], []), floats("scales", [4], [1, 1, 2, 2])], opset=11)


@case("node 'topk0' (TopK): unsupported in code generation: TopK without both its values and "
      "indices outputs")
def topk_values_only(d):
    """A TopK whose indices output is omitted is refused."""
    return model([helper.make_node("TopK", ["x", "k"], ["v", ""], name="topk0")],
                 [vi("x", [6])], [vi("v", [2])], [ints("k", [2])])


@case("node 'mm0' (MatMul): unsupported in code generation: MatMul on int32: the GEMM library "
      "call takes float32, float16 and bfloat16")
def matmul_int32(d):
    """An integer MatMul is refused: the GEMM library call takes the float types only."""
    return model([helper.make_node("MatMul", ["a", "b"], ["y"], name="mm0")],
                 [vi("a", [2, 3], TensorProto.INT32), vi("b", [3, 4], TensorProto.INT32)],
                 [vi("y", [2, 4], TensorProto.INT32)])


@case("node 'pad0' (Pad): pads [-4, 2] crop every element of axis 0 and then pad it in reflect "
      "mode")
def pad_reflect_of_nothing(d):
    """A reflect Pad whose negative pad crops the whole axis has nothing to reflect."""
    return model([helper.make_node("Pad", ["x", "pads"], ["y"], name="pad0", mode="reflect")],
                 [vi("x", [4])], [vi("y", [2])], [ints("pads", [-4, 2])])
