"""The error corpus's building blocks: the case registry and small model builders.

Case modules (cases_*.py) register cases with @case; make_corpus.py writes them out.
"""

import os

import onnx
from onnx import TensorProto, helper

# The file one level above every case folder that the symlink case points at.
OUTSIDE_FILE = "outside.bin"
# A [2,2] float32 tensor's worth of bytes, for external data files.
W_BYTES = bytes(range(16))

F = TensorProto.FLOAT
I64 = TensorProto.INT64

# (name, function, expected message substring, extra stitchc arguments), in definition order.
CASES = []


def case(expected, args=()):
    """Registers a case: the function writes the model into its folder (or returns the
    model, or its bytes); `expected` is the substring stitchc's message must contain."""

    def register(fn):
        assert fn.__doc__, f"case {fn.__name__} needs a docstring saying what it proves"
        assert expected.strip() and "\n" not in expected, fn.__name__
        CASES.append((fn.__name__, fn, expected, list(args)))
        return fn

    return register


# ---- helpers ---------------------------------------------------------------------------

def vi(name, dims, elem=F):
    return helper.make_tensor_value_info(name, elem, dims)


def model(nodes, inputs, outputs, initializers=(), opset=17, extra_opsets=(), **graph_kw):
    graph = helper.make_graph(nodes, "error_case", inputs, outputs, list(initializers), **graph_kw)
    opsets = [helper.make_opsetid("", opset)] if opset is not None else []
    opsets += [helper.make_opsetid(d, v) for d, v in extra_opsets]
    return helper.make_model(graph, opset_imports=opsets, ir_version=8)


def relu_model(**kw):
    """x[2,3] -> Relu 'relu0' -> y: the smallest valid model."""
    return model([helper.make_node("Relu", ["x"], ["y"], name="relu0")], [vi("x", [2, 3])],
                 [vi("y", [2, 3])], **kw)


def floats(name, dims, values):
    return helper.make_tensor(name, F, dims, values)


def ints(name, values):
    return helper.make_tensor(name, I64, [len(values)], values)


def external(name, dims, location, offset=None, length=None, elem=F):
    """An initializer whose data lies in `location` beside the model."""
    t = TensorProto(name=name, data_type=elem, dims=dims, data_location=TensorProto.EXTERNAL)
    for key, value in (("location", location), ("offset", offset), ("length", length)):
        if value is not None:
            t.external_data.add(key=key, value=str(value))
    return t


def model_with_initializer(init):
    """y = x + init, where init has the shape of x ([2,2] float unless the tensor says)."""
    dims = list(init.dims) if all(0 <= d < 100 for d in init.dims) else [2, 2]
    return model([helper.make_node("Add", ["x", init.name], ["y"], name="add0")],
                 [vi("x", dims)], [vi("y", dims)], [init])


def write(folder, name, data):
    with open(os.path.join(folder, name), "wb") as f:
        f.write(data)


def serialize(m):
    return m.SerializeToString(deterministic=True)


def parses(data):
    try:
        onnx.ModelProto().ParseFromString(data)
        return True
    except Exception:  # protobuf's DecodeError
        return False
