"""Error cases about nodes: attributes, axes, and the shape rules' checks of operands.
"""

import onnx
from onnx import TensorProto, helper

from corpus_lib import F, I64, case, vi, model, floats, ints


# ---- attributes ------------------------------------------------------------------------

@case("node 'tr0' (Transpose): attribute 'perm' must be a list of ints, got int")
def attr_perm_is_int(d):
    """Transpose's perm given as a single INT is refused as the wrong kind."""
    return model([helper.make_node("Transpose", ["x"], ["y"], name="tr0", perm=1)],
                 [vi("x", [2, 3])], [vi("y", [3, 2])])


@case("node 'sm0' (Softmax): attribute 'axis' must be an int, got ints")
def attr_axis_is_ints(d):
    """Softmax's axis given as INTS is refused as the wrong kind."""
    return model([helper.make_node("Softmax", ["x"], ["y"], name="sm0", axis=[1])],
                 [vi("x", [2, 3])], [vi("y", [2, 3])])


@case("node 'sm0' (Softmax): attribute 'axis' has no value")
def attr_no_value(d):
    """An attribute with no type and no value is refused."""
    node = helper.make_node("Softmax", ["x"], ["y"], name="sm0")
    node.attribute.add(name="axis")
    return model([node], [vi("x", [2, 3])], [vi("y", [2, 3])])


@case("node 'relu0' (Relu): an attribute has an empty name")
def attr_empty_name(d):
    """An attribute without a name is refused."""
    node = helper.make_node("Relu", ["x"], ["y"], name="relu0")
    node.attribute.append(helper.make_attribute("unnamed", 1))
    node.attribute[0].name = ""
    return model([node], [vi("x", [2])], [vi("y", [2])])


@case("node 'relu0' (Relu): attribute 'body' has an unsupported kind (GRAPH)")
def attr_graph_kind(d):
    """A graph-valued attribute is refused by kind."""
    body = helper.make_graph([], "body", [], [])
    node = helper.make_node("Relu", ["x"], ["y"], name="relu0", body=body)
    return model([node], [vi("x", [2])], [vi("y", [2])])


@case("node 'elu0' (Elu): attribute 'alpha' refers to a function attribute")
def attr_ref_attr_name(d):
    """An attribute referring to a function's attribute (ref_attr_name) is refused."""
    node = helper.make_node("Elu", ["x"], ["y"], name="elu0")
    ref = node.attribute.add(name="alpha", type=onnx.AttributeProto.FLOAT)
    ref.ref_attr_name = "alpha"
    return model([node], [vi("x", [2])], [vi("y", [2])])


@case("node 'const0' (Constant): tensor 'value': raw_data holds 4 bytes, but shape [2] of "
      "float32 needs 8")
def attr_tensor_raw_data_short(d):
    """A tensor attribute's data is checked like an initializer's, naming the node."""
    t = TensorProto(name="value", data_type=F, dims=[2], raw_data=b"\0" * 4)
    return model([helper.make_node("Constant", [], ["y"], name="const0", value=t)], [],
                 [vi("y", [2])])


@case("node 'const0' (Constant): tensor 'const0.value': raw_data holds 4 bytes, but shape [2] "
      "of float32 needs 8")
def attr_tensor_unnamed_raw_data_short(d):
    """A tensor attribute without a name (as exporters write Constant values) is named in
    errors as NODE.ATTRIBUTE, the name stitchc gives it."""
    t = TensorProto(data_type=F, dims=[2], raw_data=b"\0" * 4)
    return model([helper.make_node("Constant", [], ["y"], name="const0", value=t)], [],
                 [vi("y", [2])])


@case("node 'cat0' (Concat): missing required attribute 'axis'")
def attr_required_missing(d):
    """A required attribute that is absent is refused by name."""
    return model([helper.make_node("Concat", ["x", "x"], ["y"], name="cat0")],
                 [vi("x", [2, 3])], [vi("y", [4, 3])])


@case("node 'tr0' (Transpose): attribute 'perm' [0,0] is not a permutation of the 2 axes")
def attr_perm_not_permutation(d):
    """A Transpose perm that repeats an axis is refused."""
    return model([helper.make_node("Transpose", ["x"], ["y"], name="tr0", perm=[0, 0])],
                 [vi("x", [2, 3])], [vi("y", [2, 2])])


@case("node 'cast0' (Cast): unsupported Cast target type STRING")
def attr_cast_to_unsupported(d):
    """A Cast to a data type stitchc cannot compile is refused with the type's name."""
    return model([helper.make_node("Cast", ["x"], ["y"], name="cast0", to=TensorProto.STRING)],
                 [vi("x", [2])], [vi("y", [2], TensorProto.STRING)])


# ---- axes ------------------------------------------------------------------------------

@case("node 'sm0' (Softmax): axis 5 is out of range for a tensor of rank 2")
def axis_softmax_out_of_range(d):
    """Softmax axis=5 on a rank-2 input is refused."""
    return model([helper.make_node("Softmax", ["x"], ["y"], name="sm0", axis=5)],
                 [vi("x", [2, 3])], [vi("y", [2, 3])])


@case("node 'cat0' (Concat): axis -3 is out of range for a tensor of rank 2")
def axis_concat_out_of_range(d):
    """A negative Concat axis past the rank is refused."""
    return model([helper.make_node("Concat", ["x", "x"], ["y"], name="cat0", axis=-3)],
                 [vi("x", [2, 3])], [vi("y", [4, 3])])


@case("node 'rs0' (ReduceSum): axes names axis 1 twice")
def axis_reduce_repeated(d):
    """A reduction naming one axis twice (1 and -1 on a rank-2 input) is refused."""
    nodes = [helper.make_node("ReduceSum", ["x", "axes"], ["y"], name="rs0")]
    return model(nodes, [vi("x", [2, 3])], [vi("y", [2, 1])], [ints("axes", [1, -1])])


# ---- shape rules that need constants or consistent shapes ------------------------------

@case("node 'reshape0' (Reshape): shape (input 'target') must be a constant: stitchc compiles "
      "static shapes, and this value is computed at run time")
def reshape_shape_not_constant(d):
    """A Reshape whose target shape is a graph input (known only at run time) is refused."""
    return model([helper.make_node("Reshape", ["x", "target"], ["y"], name="reshape0")],
                 [vi("x", [2, 3]), vi("target", [2], I64)], [vi("y", [3, 2])])


@case("node 'reshape0' (Reshape): cannot reshape [2,3] (6 elements) to [4] (4 elements)")
def reshape_element_count_differs(d):
    """A Reshape to a different element count is refused."""
    return model([helper.make_node("Reshape", ["x", "target"], ["y"], name="reshape0")],
                 [vi("x", [2, 3])], [vi("y", [4])], [ints("target", [4])])


@case("node 'reshape0' (Reshape): shape must be an integer tensor, got float32")
def reshape_shape_not_integer(d):
    """A Reshape target shape of floats is refused."""
    return model([helper.make_node("Reshape", ["x", "target"], ["y"], name="reshape0")],
                 [vi("x", [2, 3])], [vi("y", [6])], [floats("target", [1], [6])])


@case("node 'gather0' (Gather): index 5 in indices is out of range for axis 0 of size 3")
def gather_index_out_of_range(d):
    """A constant Gather index past the axis is refused at compile time."""
    return model([helper.make_node("Gather", ["x", "idx"], ["y"], name="gather0", axis=0)],
                 [vi("x", [3, 4])], [vi("y", [1, 4])], [ints("idx", [5])])


@case("node 'gather0' (Gather): index -4 in indices is out of range for axis 0 of size 3")
def gather_index_out_of_range_folded(d):
    """A Gather of constants (which constant folding would evaluate) with an index below
    -size is refused instead of folded."""
    nodes = [helper.make_node("Gather", ["table", "idx"], ["g"], name="gather0", axis=0),
             helper.make_node("Add", ["x", "g"], ["y"], name="add0")]
    return model(nodes, [vi("x", [1])], [vi("y", [1])],
                 [floats("table", [3], [1, 2, 3]), ints("idx", [-4])])


@case("node 'add0' (Add): input shapes [2,3], [4] do not broadcast together")
def broadcast_mismatch(d):
    """Operands whose shapes do not broadcast are refused with both shapes."""
    return model([helper.make_node("Add", ["x", "z"], ["y"], name="add0")],
                 [vi("x", [2, 3]), vi("z", [4])], [vi("y", [2, 3])])


@case("node (Add) writing 'y': input shapes [2,3], [4] do not broadcast together")
def unnamed_node_named_by_output(d):
    """A node the exporter left unnamed (NodeProto.name empty, as many exporters write) is
    named in a shape rule's error by the value it writes."""
    return model([helper.make_node("Add", ["x", "z"], ["y"])],
                 [vi("x", [2, 3]), vi("z", [4])], [vi("y", [2, 3])])


@case("node (Add) writing 'y': input 'nowhere' is not defined by any node, initializer or "
      "graph input")
def unnamed_node_named_by_output_in_frontend(d):
    """The frontend names an unnamed node by its first output too."""
    return model([helper.make_node("Add", ["x", "nowhere"], ["y"])], [vi("x", [2])],
                 [vi("y", [2])])


@case("node 'add0' (Add): input 1 is int64 but input 0 is float32; they must have the same type")
def dtype_mismatch(d):
    """Operands of different dtypes are refused (ONNX does not promote)."""
    return model([helper.make_node("Add", ["x", "z"], ["y"], name="add0")],
                 [vi("x", [2]), vi("z", [2], I64)], [vi("y", [2])])


@case("node 'exp0' (Exp): input 0 must be a floating-point tensor, got int64")
def float_op_on_integers(d):
    """A float-only op on an integer tensor is refused."""
    return model([helper.make_node("Exp", ["x"], ["y"], name="exp0")], [vi("x", [2], I64)],
                 [vi("y", [2], I64)])


@case("node 'mm0' (MatMul): the inner dimensions of [2,3] and [4,5] differ (3 and 4)")
def matmul_inner_dims_differ(d):
    """A MatMul whose inner dimensions differ is refused with both shapes."""
    return model([helper.make_node("MatMul", ["a", "b"], ["y"], name="mm0")],
                 [vi("a", [2, 3]), vi("b", [4, 5])], [vi("y", [2, 5])])


@case("node 'add0' (Add): expects 2 inputs, got 1")
def node_too_few_inputs(d):
    """A node with fewer inputs than its op takes is refused."""
    return model([helper.make_node("Add", ["x"], ["y"], name="add0")], [vi("x", [2])],
                 [vi("y", [2])])


@case("node 'relu0' (Relu): has output 1 ('extra'), which this op does not produce")
def node_extra_output(d):
    """A node with more outputs than its op produces is refused."""
    return model([helper.make_node("Relu", ["x"], ["y", "extra"], name="relu0")],
                 [vi("x", [2])], [vi("y", [2])])


@case("node 'expand0' (Expand): output 0 [1099511627776,1099511627776] is too large")
def expand_output_overflow(d):
    """An op whose inferred output size overflows int64 is refused, naming the node."""
    big = 2 ** 40
    return model([helper.make_node("Expand", ["x", "shape"], ["y"], name="expand0")],
                 [vi("x", [1])], [vi("y", [big, big])], [ints("shape", [big, big])])


@case("node 'slice0' (Slice): steps has a 0 for axis 0")
def slice_step_zero(d):
    """A Slice step of 0 is refused."""
    consts = [ints(n, [v]) for n, v in (("starts", 0), ("ends", 4), ("axes", 0), ("steps", 0))]
    return model([helper.make_node("Slice", ["x", "starts", "ends", "axes", "steps"], ["y"],
                                   name="slice0")], [vi("x", [4])], [vi("y", [4])], consts)


@case("node 'split0' (Split): split sizes [3,3] sum to 6, but the axis has size 4")
def split_sizes_differ(d):
    """Split sizes that do not add up to the axis are refused."""
    return model([helper.make_node("Split", ["x", "sizes"], ["a", "b"], name="split0", axis=0)],
                 [vi("x", [4])], [vi("a", [3]), vi("b", [3])], [ints("sizes", [3, 3])])


@case("node 'conv0' (Conv): X has 3 channels but W [2,4,3,3] with group 1 expects 4")
def conv_channels_differ(d):
    """A Conv whose weight expects other input channels than X has is refused."""
    return model([helper.make_node("Conv", ["x", "w"], ["y"], name="conv0")],
                 [vi("x", [1, 3, 4, 4]), vi("w", [2, 4, 3, 3])], [vi("y", [1, 2, 2, 2])])


@case("node 'topk0' (TopK): k 9 is out of range for axis 0 of size 4")
def topk_k_out_of_range(d):
    """A constant TopK k larger than the axis is refused."""
    return model([helper.make_node("TopK", ["x", "k"], ["v", "i"], name="topk0")],
                 [vi("x", [4])], [vi("v", [9]), vi("i", [9], I64)], [ints("k", [9])])
