"""ONNX Runtime's values of named tensors of a model, for `stitch-run --taps-onnx`.

stitch-run embeds this script and runs it with the Python given by --python (one with numpy,
onnx and onnxruntime). Its one argument is a request that stitch-run writes (JSON):

    {"model": "model.onnx",
     "inputs": [{"name": "x", "file": "input_0.npy"}, ...],
     "tensors": [{"name": "t", "elem_type": 1, "file": "reference_0.npy"}, ...],
     "result": "reference.json"}

It makes every requested tensor the model computes a graph output, runs the model once in ONNX
Runtime on the CPU with graph optimizations off (so each tensor is computed as the model
writes it, not as a fused kernel would), and saves each value to its file. Tensors the model
does not have (stitchc made them while lowering) are listed as missing in the result:

    {"found": ["t", ...], "missing": ["u", ...], "onnxruntime": "1.23.2"}
"""

import json
import sys

import numpy as np
import onnx
import onnxruntime as ort


def tensor_types(model):
    """elem_type of every tensor onnx's shape inference knows, by name."""
    types = {}
    try:
        inferred = onnx.shape_inference.infer_shapes(model, strict_mode=False)
    except Exception:  # a model shape inference cannot handle still runs in ONNX Runtime
        inferred = model
    graph = inferred.graph
    for info in list(graph.value_info) + list(graph.input) + list(graph.output):
        if info.type.HasField("tensor_type") and info.type.tensor_type.elem_type:
            types[info.name] = info.type.tensor_type.elem_type
    return types


def main():
    with open(sys.argv[1], encoding="utf-8") as f:
        request = json.load(f)
    model = onnx.load(request["model"])
    graph = model.graph
    produced = {name for node in graph.node for name in node.output if name}
    inputs = {info.name for info in graph.input}
    outputs = {info.name for info in graph.output}
    types = tensor_types(model)

    found, missing = [], []
    for tensor in request["tensors"]:
        name = tensor["name"]
        if name in produced or name in inputs:
            found.append(tensor)
        else:
            missing.append(name)
    for tensor in found:
        name = tensor["name"]
        if name in outputs or name in inputs:
            continue
        elem_type = types.get(name, tensor["elem_type"])
        graph.output.append(onnx.helper.make_tensor_value_info(name, elem_type, None))
        outputs.add(name)

    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    session = ort.InferenceSession(model.SerializeToString(), options,
                                   providers=["CPUExecutionProvider"])
    feed = {item["name"]: np.load(item["file"]) for item in request["inputs"]}
    wanted_outputs = [t["name"] for t in found if t["name"] not in inputs]
    values = dict(zip(wanted_outputs, session.run(wanted_outputs, feed))) if wanted_outputs else {}
    for tensor in found:
        name = tensor["name"]
        value = feed[name] if name in inputs else values[name]
        np.save(tensor["file"], np.ascontiguousarray(value))

    with open(request["result"], "w", encoding="utf-8") as f:
        json.dump({"found": [t["name"] for t in found], "missing": missing,
                   "onnxruntime": ort.__version__}, f)


if __name__ == "__main__":
    main()
