"""Error cases about the caps on a model's size (src/graph/limits.h): node count, constant
bytes, tensor elements (initializers, graph inputs, inferred outputs) and attribute entries.
Each case lowers the cap with its stitchc flag, so that the model stays tiny.
"""

from onnx import helper

from corpus_lib import case, floats, ints, model, vi


@case("the graph has 4 nodes, more than the limit of 3 (--max-nodes)",
      args=("--max-nodes", "3"))
def limit_nodes(d):
    """A graph with more nodes than --max-nodes is refused before any node is converted."""
    nodes = [helper.make_node("Relu", [f"t{i}"], [f"t{i + 1}"], name=f"relu{i}") for i in range(4)]
    return model(nodes, [vi("t0", [2])], [vi("t4", [2])])


@case("tensor 'w2': its 16 bytes bring the model's constants to 32 bytes, more than the limit "
      "of 20 (--max-weight-bytes)", args=("--max-weight-bytes", "20"))
def limit_weight_bytes(d):
    """Constants whose bytes together pass --max-weight-bytes are refused, naming the tensor
    that crosses the cap, before its data is read."""
    nodes = [helper.make_node("Add", ["x", "w1"], ["s"], name="add0"),
             helper.make_node("Add", ["s", "w2"], ["y"], name="add1")]
    inits = [floats("w1", [2, 2], [1, 2, 3, 4]), floats("w2", [2, 2], [5, 6, 7, 8])]
    return model(nodes, [vi("x", [2, 2])], [vi("y", [2, 2])], inits)


@case("tensor 'w': shape [10] has 10 elements, more than the limit of 8 (--max-tensor-elements)",
      args=("--max-tensor-elements", "8"))
def limit_initializer_elements(d):
    """An initializer with more elements than --max-tensor-elements is refused."""
    init = floats("w", [10], [float(i) for i in range(10)])
    return model([helper.make_node("Add", ["x", "w"], ["y"], name="add0")], [vi("x", [10])],
                 [vi("y", [10])], [init])


@case("graph input 'x' shape [4,4] has 16 elements, more than the limit of 10 "
      "(--max-tensor-elements)", args=("--max-tensor-elements", "10"))
def limit_input_elements(d):
    """A graph input with more elements than --max-tensor-elements is refused."""
    return model([helper.make_node("Relu", ["x"], ["y"], name="relu0")], [vi("x", [4, 4])],
                 [vi("y", [4, 4])])


@case("node 'expand0' (Expand): output 0 [4,4] has 16 elements, more than the limit of 10 "
      "(--max-tensor-elements)", args=("--max-tensor-elements", "10"))
def limit_inferred_elements(d):
    """An op whose inferred output has more elements than --max-tensor-elements is refused,
    naming the node."""
    return model([helper.make_node("Expand", ["x", "shape"], ["y"], name="expand0")],
                 [vi("x", [1])], [vi("y", [4, 4])], [ints("shape", [4, 4])])


@case("attribute 'perm' has 5 entries (list elements and string bytes), more than the limit "
      "of 4 (--max-attribute-elements)", args=("--max-attribute-elements", "4"))
def limit_attribute_list(d):
    """An attribute list with more entries than --max-attribute-elements is refused."""
    node = helper.make_node("Transpose", ["x"], ["y"], name="transpose0", perm=[4, 3, 2, 1, 0])
    return model([node], [vi("x", [1, 1, 1, 1, 2])], [vi("y", [2, 1, 1, 1, 1])])


@case("attribute 'auto_pad' has 10 entries (list elements and string bytes), more than the "
      "limit of 4 (--max-attribute-elements)", args=("--max-attribute-elements", "4"))
def limit_attribute_string(d):
    """A string attribute longer than --max-attribute-elements bytes is refused."""
    node = helper.make_node("MaxPool", ["x"], ["y"], name="pool0", kernel_shape=[1, 1],
                            auto_pad="SAME_UPPER")
    return model([node], [vi("x", [1, 1, 2, 2])], [vi("y", [1, 1, 2, 2])])
