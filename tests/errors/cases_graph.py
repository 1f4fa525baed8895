"""Error cases about the model file, its opsets and ops, the graph's structure, and its
inputs and outputs (with --input-shape).
"""

import os

from onnx import TensorProto, helper

from corpus_lib import (
    F, I64, case, vi, model, relu_model, floats, ints, model_with_initializer, write, serialize,
    parses,
)


# ---- the file itself -------------------------------------------------------------------

@case("not a valid ONNX model: it has no graph")
def file_empty(d):
    """An empty file parses as an empty protobuf; it is refused for having no graph."""
    return b""


@case("not a valid ONNX model: the file does not parse as an ONNX protobuf")
def file_not_protobuf(d):
    """A text file is refused as not ONNX."""
    data = b"This is a text file, not an ONNX model.\n"
    assert not parses(data)
    return data


@case("not a valid ONNX model: the file does not parse as an ONNX protobuf")
def file_truncated(d):
    """A valid model cut in the middle is refused as truncated, not read in part."""
    whole = serialize(model_with_initializer(floats("w", [2, 2], [1, 2, 3, 4])))
    assert parses(whole)
    cut = whole[: len(whole) // 2]
    assert not parses(cut)
    return cut


@case("the model is not a regular file")
def file_is_folder(d):
    """A folder named model.onnx is refused before it is read."""
    os.mkdir(os.path.join(d, "model.onnx"))
    write(os.path.join(d, "model.onnx"), "README", b"model.onnx is a folder on purpose\n")


@case("cannot open the model: No such file or directory")
def file_missing(d):
    """A model path that does not exist is a user error naming the path."""


# ---- opsets and ops --------------------------------------------------------------------

@case("unsupported opset 26: newer than the newest stitchc knows (25)")
def opset_too_new(d):
    """A default-domain opset beyond the newest stitchc knows is refused, not guessed at."""
    return relu_model(opset=26)


@case("node 'tile0' (Tile): Tile of opset 5 (repeats given as 'tiles' and 'axis'): stitchc "
      "reads Tile from opset 6 on")
def opset_old_form_unknown(d):
    """An op whose form before opset 7 stitchc does not read is refused by name and version."""
    nodes = [helper.make_node("Tile", ["x", "tiles", "axis"], ["y"], name="tile0")]
    return model(nodes, [vi("x", [2, 3]), vi("tiles", [], I64), vi("axis", [], I64)],
                 [vi("y", [2, 6])], opset=5)


@case("node 'bn0' (BatchNormalization): is_test is 0 (training mode); stitchc compiles "
      "inference only")
def opset_old_training_batchnorm(d):
    """A BatchNormalization of opset 6 in training mode is refused, not run as inference."""
    params = [floats(n, [3], [1, 2, 3]) for n in ("scale", "bias", "mean", "var")]
    nodes = [helper.make_node("BatchNormalization", ["x", "scale", "bias", "mean", "var"], ["y"],
                              name="bn0", is_test=0)]
    return model(nodes, [vi("x", [2, 3, 4])], [vi("y", [2, 3, 4])], params, opset=6)


@case("node 'add0' (Add): broadcasts 'b' onto 'a' from axis 1 (opset 6), which needs both "
      "ranks, but the rank of 'a' is unknown")
def opset_old_broadcast_rank_unknown(d):
    """Legacy broadcasting from an axis needs both ranks; an input without a shape has none."""
    a = helper.make_tensor_value_info("a", F, None)
    nodes = [helper.make_node("Add", ["a", "b"], ["y"], name="add0", broadcast=1, axis=1)]
    return model(nodes, [a, vi("b", [3])], [vi("y", [2, 3, 4])], opset=6)


@case("unsupported opset 1099511627776: newer than the newest stitchc knows (25)")
def opset_huge(d):
    """An opset version past 32 bits is refused as too new, not truncated."""
    return relu_model(opset=2 ** 40)


@case("node 'gelu0' (Gelu): Gelu is an ONNX op from opset 20, but the model imports opset 17")
def op_newer_than_model_opset(d):
    """An op introduced after the opset the model imports is refused."""
    return model([helper.make_node("Gelu", ["x"], ["y"], name="gelu0")], [vi("x", [2])],
                 [vi("y", [2])], opset=17)


@case("the model imports no opset of the default ONNX domain")
def opset_missing(d):
    """Nodes of the default domain with no default-domain opset import are refused."""
    return relu_model(opset=None, extra_opsets=[("com.example", 1)])


@case("unsupported ops: FooBar x1 (first: 'mystery0')")
def op_unknown(d):
    """An op stitchc does not know is refused by name, with the node that uses it."""
    return model([helper.make_node("FooBar", ["x"], ["y"], name="mystery0")], [vi("x", [2])],
                 [vi("y", [2])])


@case("unsupported ops: FooBar x4 (first: 'foo0', 'foo1', 'foo2'); LSTM x2 (first: 'lstm0', "
      "'lstm1'); NonMaxSuppression x1 (first: 'nms0')")
def op_unknown_several(d):
    """Every unsupported op is listed at once, with its count and its first three nodes."""
    nodes = [helper.make_node("Relu", ["x"], ["r"], name="relu0")]
    prev = "r"
    for i in range(4):
        nodes.append(helper.make_node("FooBar", [prev], [f"f{i}"], name=f"foo{i}"))
        prev = f"f{i}"
    for i in range(2):
        nodes.append(helper.make_node("LSTM", [prev, "w", "r_w"], [f"l{i}"], name=f"lstm{i}",
                                      hidden_size=1))
        prev = f"l{i}"
    nodes.append(helper.make_node("NonMaxSuppression", [prev, "scores"], ["y"], name="nms0"))
    return model(nodes, [vi("x", [1, 1, 4]), vi("w", [1, 4, 4]), vi("r_w", [1, 4, 1]),
                         vi("scores", [1, 1, 1])], [vi("y", None, I64)])


@case("unsupported op domain: com.example x2 (first: 'custom0', 'custom1'); stitchc supports "
      "the default ONNX domain only")
def op_unknown_domain(d):
    """Nodes of a domain other than the default ONNX one are refused by domain."""
    nodes = [helper.make_node("Relu", ["x"], ["r"], name="relu0"),
             helper.make_node("Fancy", ["r"], ["s"], name="custom0", domain="com.example"),
             helper.make_node("Fancy", ["s"], ["y"], name="custom1", domain="com.example")]
    return model(nodes, [vi("x", [2])], [vi("y", [2])], extra_opsets=[("com.example", 1)])


@case("unsupported ops: View x1 (first: 'view0')")
def op_internal(d):
    """stitchc's internal View op cannot be named by a model."""
    return model([helper.make_node("View", ["x"], ["y"], name="view0", shape=[6])],
                 [vi("x", [2, 3])], [vi("y", [6])])


# ---- graph structure -------------------------------------------------------------------

@case("node 'add0' (Add): input 'ghost' is not defined by any node, initializer or graph input")
def input_undefined(d):
    """A node input that nothing defines is refused, naming the node and the input."""
    return model([helper.make_node("Add", ["x", "ghost"], ["y"], name="add0")],
                 [vi("x", [2])], [vi("y", [2])])


@case("node 'relu_a' (Relu): the graph has a cycle through this node (2 node(s) cannot be ordered)")
def graph_cycle(d):
    """Two nodes that feed each other are refused as a cycle, naming a node on it."""
    nodes = [helper.make_node("Relu", ["b"], ["a"], name="relu_a"),
             helper.make_node("Relu", ["a"], ["b"], name="relu_b")]
    return model(nodes, [], [vi("b", [2])])


@case("node 'loop0' (Add): the graph has a cycle through this node")
def graph_self_loop(d):
    """A node that reads its own output is refused as a cycle."""
    return model([helper.make_node("Add", ["x", "y"], ["y"], name="loop0")], [vi("x", [2])],
                 [vi("y", [2])])


@case("node 'second' (Relu): value 'y' is defined twice")
def value_two_producers(d):
    """Two nodes producing one value name are refused, naming the second."""
    nodes = [helper.make_node("Relu", ["x"], ["y"], name="first"),
             helper.make_node("Relu", ["x"], ["y"], name="second")]
    return model(nodes, [vi("x", [2])], [vi("y", [2])])


@case("node 'relu0' (Relu): value 'w' is defined twice")
def value_initializer_and_producer(d):
    """A node output that reuses an initializer's name is refused."""
    return model([helper.make_node("Relu", ["x"], ["w"], name="relu0")], [vi("x", [2])],
                 [vi("w", [2])], [floats("w", [2], [1, 2])])


@case("value 'x' is defined twice")
def value_graph_input_twice(d):
    """Two graph inputs of one name are refused."""
    return model([helper.make_node("Relu", ["x"], ["y"], name="relu0")],
                 [vi("x", [2]), vi("x", [2])], [vi("y", [2])])


@case("initializer 'w' is defined twice")
def value_initializer_twice(d):
    """Two initializers of one name are refused."""
    return model([helper.make_node("Add", ["x", "w"], ["y"], name="add0")], [vi("x", [2])],
                 [vi("y", [2])], [floats("w", [2], [1, 2]), floats("w", [2], [3, 4])])


@case("a value has an empty name")
def value_empty_name(d):
    """An initializer without a name is refused."""
    return model([helper.make_node("Relu", ["x"], ["y"], name="relu0")], [vi("x", [2])],
                 [vi("y", [2])], [floats("", [2], [1, 2])])


@case("graph output 'nowhere' is not defined by any node, initializer or input")
def output_undefined(d):
    """A graph output that nothing defines is refused by name."""
    return model([helper.make_node("Relu", ["x"], ["y"], name="relu0")], [vi("x", [2])],
                 [vi("y", [2]), vi("nowhere", [2])])


@case("the graph has no outputs")
def output_none(d):
    """A graph with no outputs computes nothing and is refused."""
    return model([helper.make_node("Relu", ["x"], ["y"], name="relu0")], [vi("x", [2])], [])


@case("graph output 'y' has an unsupported type: only tensors are supported")
def output_sequence_type(d):
    """A graph output declared as a sequence is refused."""
    return model([helper.make_node("Relu", ["x"], ["y"], name="relu0")], [vi("x", [2])],
                 [helper.make_tensor_sequence_value_info("y", F, [2])])


@case("graph output 'y' is declared INT64 but computes float32")
def output_declared_dtype_differs(d):
    """A graph output whose declared element type differs from the computed one is refused."""
    return model([helper.make_node("Relu", ["x"], ["y"], name="relu0")], [vi("x", [2, 3])],
                 [vi("y", [2, 3], I64)])


@case("graph output 'y' is declared with shape [2,4] but computes [2,3]")
def output_declared_shape_differs(d):
    """A graph output whose declared shape differs from the computed one is refused."""
    return model([helper.make_node("Relu", ["x"], ["y"], name="relu0")], [vi("x", [2, 3])],
                 [vi("y", [2, 4])])


# ---- graph inputs and --input-shape ----------------------------------------------------

@case("graph input 'seq' has an unsupported type: only tensors are supported")
def input_sequence_type(d):
    """A graph input of sequence type is refused."""
    return model([helper.make_node("Relu", ["x"], ["y"], name="relu0")],
                 [vi("x", [2]), helper.make_tensor_sequence_value_info("seq", F, [2])],
                 [vi("y", [2])])


@case("graph input 'words' has unsupported data type STRING")
def input_unsupported_dtype(d):
    """A graph input of a data type stitchc cannot compile is refused with the type's name."""
    return model([helper.make_node("Identity", ["words"], ["y"], name="id0")],
                 [vi("words", [2], TensorProto.STRING)], [vi("y", [2], TensorProto.STRING)])


@case("graph input 'x' has negative dim 1 = -3")
def input_negative_dim(d):
    """A graph input with a negative dim is refused."""
    return model([helper.make_node("Relu", ["x"], ["y"], name="relu0")], [vi("x", [2, -3])],
                 [vi("y", [2, 3])])


@case("graph input 'x' shape [1099511627776,1099511627776] is too large")
def input_dims_overflow(d):
    """A graph input whose element count overflows int64 is refused, not wrapped."""
    big = 2 ** 40
    return model([helper.make_node("Relu", ["x"], ["y"], name="relu0")], [vi("x", [big, big])],
                 [vi("y", [big, big])])


@case("graph input 'x' shape [4611686018427387904] is too large")
def input_bytes_overflow(d):
    """A graph input whose element count fits int64 but whose byte size does not is refused."""
    return model([helper.make_node("Relu", ["x"], ["y"], name="relu0")], [vi("x", [2 ** 62])],
                 [vi("y", [2 ** 62])])


@case("the model has symbolic dims to bind with --input-shape NAME=DxDx... or --dim "
      "NAME=VALUE, or to keep symbolic with --dim NAME=MIN..MAX: x[0] 'batch', x[1] 'seq', "
      "mask[0]")
def input_unbound_symbolic_dims(d):
    """Unbound symbolic dims are refused with the list of every one to bind."""
    nodes = [helper.make_node("Relu", ["x"], ["y"], name="relu0"),
             helper.make_node("Not", ["mask"], ["m"], name="not0")]
    return model(nodes, [vi("x", ["batch", "seq", 4]), vi("mask", [None, 4], TensorProto.BOOL)],
                 [vi("y", ["batch", "seq", 4]), vi("m", [None, 4], TensorProto.BOOL)])


def symbolic_relu(d):
    return model([helper.make_node("Relu", ["x"], ["y"], name="relu0")],
                 [vi("x", ["batch", "seq", 4])], [vi("y", ["batch", "seq", 4])])


@case("node 'best0' (TopK): cannot generate code over the symbolic dims batch (1..8), seq "
      "(1..16) here: TopK over symbolic dims needs fixed axes after the selected one, not "
      "[batch,seq] (axis 0)",
      ["--dim", "batch=1..8", "--dim", "seq=1..16@5"])
def dim_node_not_generated(d):
    """A node whose kernel cannot run over the symbols' whole range is refused by name, with the
    reason and what can."""
    nodes = [helper.make_node("TopK", ["x", "k"], ["values", "indices"], name="best0", axis=0)]
    return model(nodes, [vi("x", ["batch", "seq"])],
                 [vi("values", [1, "seq"]), vi("indices", [1, "seq"], TensorProto.INT64)],
                 [ints("k", [1])])


@case("node 'best0' (TopK): its k 2 may be larger than axis 1 (seq) for some values of the "
      "symbols", ["--dim", "batch=1..8", "--dim", "seq=1..16@5"])
def dim_topk_longer_than_axis(d):
    """A TopK taking more elements than its axis holds at some sizes is refused by name."""
    nodes = [helper.make_node("TopK", ["x", "k"], ["values", "indices"], name="best0", axis=1)]
    return model(nodes, [vi("x", ["batch", "seq"])],
                 [vi("values", ["batch", 2]), vi("indices", ["batch", 2], TensorProto.INT64)],
                 [ints("k", [2])])


@case("node 'view0' (Reshape): its target shape [0,-1] infers the -1 from the other dims, "
      "whose product batch may be 0", ["--dim", "batch=0..8@2"])
def dim_reshape_infers_from_zero(d):
    """A range starting at 0 (an empty batch) refuses a Reshape whose -1 would be inferred from
    dims that may be 0, which ONNX leaves undefined."""
    nodes = [helper.make_node("Reshape", ["x", "target"], ["y"], name="view0")]
    return model(nodes, [vi("x", ["batch", 4, 4])], [vi("y", ["batch", 16])],
                 [ints("target", [0, -1])])


@case("--dim names 'heads', which is no symbolic dim of the graph inputs",
      ["--dim", "batch=2", "--dim", "seq=3", "--dim", "heads=1..4"])
def dim_names_nothing(d):
    """A --dim naming no dim of the model is refused (a typo would otherwise pass unseen)."""
    return symbolic_relu(d)


@case("dims n and 7 broadcast together only where they are equal or one of them is 1",
      ["--dim", "n=7..9@7"])
def dim_broadcast_uncertain(d):
    """A broadcast that holds for some values of a symbol only is refused, naming the dims."""
    nodes = [helper.make_node("Add", ["x", "b"], ["y"], name="add0")]
    return model(nodes, [vi("x", ["n", 4])], [vi("y", ["n", 4])],
                 [floats("b", [7, 4], [1.0] * 28)])


@case("node 'add0' (Add): input shapes [batch,8], [seq,8] ([3,8], [12,8] at the planning "
      "binding) do not broadcast together",
      ["--dim", "batch=1..8@3", "--dim", "seq=1..64@12"])
def dim_broadcast_mismatch_planned(d):
    """Operands that do not broadcast at the planning binding are named by their symbolic dims,
    then by the planning values that failed."""
    nodes = [helper.make_node("Add", ["x", "z"], ["y"], name="add0")]
    return model(nodes, [vi("x", ["batch", 8]), vi("z", ["seq", 8])], [vi("y", ["batch", 8])])


@case("node 'attention0' (Attention): its heads and head sizes must be fixed (symbolic dims "
      "only in the batch and the sequences); its inputs depend on the symbolic dims (input 0 "
      "[2,heads,3,4]",
      ["--dim", "heads=1..8"])
def dim_op_not_symbolic(d):
    """An op whose shape stitchc cannot carry over some symbols names itself, why and its inputs."""
    nodes = [helper.make_node("Attention", ["q", "k", "v"], ["y"], name="attention0")]
    return model(nodes, [vi("q", [2, "heads", 3, 4]), vi("k", [2, "heads", 5, 4]),
                         vi("v", [2, "heads", 5, 4])], [vi("y", [2, "heads", 3, 4])], opset=23)


@case("graph input 'x' has no shape; give one with --input-shape x=...")
def input_no_shape(d):
    """A graph input with no shape at all must be given one on the command line."""
    return model([helper.make_node("Relu", ["x"], ["y"], name="relu0")], [vi("x", None)],
                 [vi("y", None)])


@case("--input-shape x gives dim 1 = 9, but the model fixes it to 8", ["--input-shape", "x=2x9"])
def input_shape_contradicts_model(d):
    """--input-shape cannot change a dim the model fixes."""
    return model([helper.make_node("Relu", ["x"], ["y"], name="relu0")], [vi("x", [2, 8])],
                 [vi("y", [2, 8])])


@case("--input-shape x has rank 3, but the model declares rank 2", ["--input-shape", "x=2x8x1"])
def input_shape_wrong_rank(d):
    """--input-shape must have the rank the model declares."""
    return model([helper.make_node("Relu", ["x"], ["y"], name="relu0")], [vi("x", ["n", 8])],
                 [vi("y", ["n", 8])])


@case("--input-shape names 'nope', which is not a graph input", ["--input-shape", "nope=2"])
def input_shape_unknown_input(d):
    """--input-shape for a name that is not a graph input is refused, not ignored."""
    return model([helper.make_node("Relu", ["x"], ["y"], name="relu0")], [vi("x", [2])],
                 [vi("y", [2])])


@case("symbolic dim 'n' is bound to both 2 and 5",
      ["--input-shape", "x=2x3", "--input-shape", "z=5x3"])
def input_shape_symbolic_conflict(d):
    """Two --input-shape flags that give one symbolic dim two values are refused."""
    nodes = [helper.make_node("Relu", ["x"], ["y"], name="relu0"),
             helper.make_node("Relu", ["z"], ["w"], name="relu1")]
    return model(nodes, [vi("x", ["n", 3]), vi("z", ["n", 3])],
                 [vi("y", ["n", 3]), vi("w", ["n", 3])])


@case("graph input 'x' shape [999999999999999,999999999999999] is too large",
      ["--input-shape", "x=999999999999999x999999999999999"])
def input_shape_overflow(d):
    """An --input-shape whose element count overflows int64 is refused."""
    return model([helper.make_node("Relu", ["x"], ["y"], name="relu0")], [vi("x", ["a", "b"])],
                 [vi("y", ["a", "b"])])
