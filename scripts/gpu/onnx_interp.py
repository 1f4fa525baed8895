"""A small ONNX interpreter over a numpy-like module: with jax.numpy under jax.jit it is the XLA
peer of docs/benchmarks.md (the same graph stitchc compiles, traced once into one XLA
computation); with numpy it runs on the CPU, which is how it is checked without jax (the host dry
run compares it with PyTorch's outputs too).

Values that are numpy arrays are static: initializers that are integer, boolean or small, and
everything computed only from them (shapes, masks, indices) is evaluated with numpy at trace
time, so Reshape targets and Gather indices are concrete under jax.jit. Float weights are
arguments of the traced function (never baked-in constants).

Only the ops of the benchmark models (and a few neighbours) are implemented; an unknown op
raises NotImplementedError naming it.
"""
import math

import numpy as np
import onnx
from onnx import numpy_helper

_NP_DTYPES = {1: np.float32, 2: np.uint8, 3: np.int8, 5: np.int16, 6: np.int32, 7: np.int64,
              9: np.bool_, 10: np.float16, 11: np.float64, 12: np.uint32, 13: np.uint64}


class NumpyBackend:
    """The operations that differ between numpy and jax."""
    xp = np

    @staticmethod
    def erf(x):
        return np.vectorize(math.erf, otypes=[x.dtype])(x)

    @staticmethod
    def conv(x, w, strides, pads, dilations, group):
        n, c, h, wd = x.shape
        o, cg, kh, kw = w.shape
        x = np.pad(x, ((0, 0), (0, 0), (pads[0], pads[2]), (pads[1], pads[3])))
        eh, ew = (kh - 1) * dilations[0] + 1, (kw - 1) * dilations[1] + 1
        win = np.lib.stride_tricks.sliding_window_view(x, (eh, ew), axis=(2, 3))
        win = win[:, :, ::strides[0], ::strides[1], ::dilations[0], ::dilations[1]]
        outs = []
        og = o // group
        for g in range(group):
            xs = win[:, g * cg:(g + 1) * cg]
            ws = w[g * og:(g + 1) * og]
            outs.append(np.einsum("nchwij,ocij->nohw", xs, ws, optimize=True))
        return np.concatenate(outs, axis=1).astype(x.dtype)

    @staticmethod
    def maxpool(x, kernel, strides, pads):
        x = np.pad(x, ((0, 0), (0, 0), (pads[0], pads[2]), (pads[1], pads[3])),
                   constant_values=-np.inf)
        win = np.lib.stride_tricks.sliding_window_view(x, tuple(kernel), axis=(2, 3))
        return win[:, :, ::strides[0], ::strides[1]].max(axis=(-2, -1))

    @staticmethod
    def asarray(x):
        return np.asarray(x)


class JaxBackend:
    """conv_precision: "highest" (Precision.HIGHEST: float32, no TF32) or None (the precision
    jax_default_matmul_precision sets, e.g. "tensorfloat32")."""

    def __init__(self, conv_precision="highest"):
        import jax
        import jax.numpy as jnp
        from jax import lax
        import jax.scipy.special as jsp
        self.xp, self._lax, self._jsp, self._jnp = jnp, lax, jsp, jnp
        self._hi = lax.Precision.HIGHEST if conv_precision == "highest" else None

    def erf(self, x):
        return self._jsp.erf(x)

    def conv(self, x, w, strides, pads, dilations, group):
        return self._lax.conv_general_dilated(
            x, w, window_strides=tuple(strides), padding=[(pads[0], pads[2]), (pads[1], pads[3])],
            rhs_dilation=tuple(dilations), feature_group_count=group,
            dimension_numbers=("NCHW", "OIHW", "NCHW"), precision=self._hi)

    def maxpool(self, x, kernel, strides, pads):
        return self._lax.reduce_window(
            x, -self._jnp.inf, self._lax.max, (1, 1) + tuple(kernel), (1, 1) + tuple(strides),
            [(0, 0), (0, 0), (pads[0], pads[2]), (pads[1], pads[3])])

    def asarray(self, x):
        return self._jnp.asarray(x)


def _attrs(node):
    return {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}


class OnnxGraph:
    def __init__(self, path, static_max_elements=4096):
        self.model = onnx.load(path)
        g = self.model.graph
        self.graph = g
        self.weights = {}   # float initializers: arguments of the function
        self.static = {}    # numpy constants
        for t in g.initializer:
            a = numpy_helper.to_array(t)
            if a.dtype.kind == "f" and a.size > static_max_elements:
                self.weights[t.name] = a
            else:
                self.static[t.name] = a
        init = {t.name for t in g.initializer}
        self.input_names = [i.name for i in g.input if i.name not in init]
        self.output_names = [o.name for o in g.output]

    def run(self, backend, weights, inputs):
        """Evaluates the graph: weights {name: array} (backend arrays), inputs in graph order.
        Returns the outputs in graph order."""
        env = dict(self.static)
        env.update(weights)
        for name, v in zip(self.input_names, inputs):
            env[name] = v
        for node in self.graph.node:
            args = [env[i] if i else None for i in node.input]
            static = all(a is None or isinstance(a, np.ndarray) for a in args)
            be = NumpyBackend if static else backend
            outs = _eval(node.op_type, be, args, _attrs(node), node)
            if not isinstance(outs, (list, tuple)):
                outs = [outs]
            for name, v in zip(node.output, outs):
                if name:
                    env[name] = v
        return [env[o] for o in self.output_names]


def _axes_arg(args, attrs, index=1):
    if "axes" in attrs:
        return list(attrs["axes"])
    if len(args) > index and args[index] is not None:
        return [int(a) for a in np.asarray(args[index]).reshape(-1)]
    return None


def _eval(op, be, a, at, node):
    xp = be.xp
    if op == "Identity":
        return a[0]
    if op == "Constant":
        return numpy_helper.to_array(at["value"]) if "value" in at else np.array(
            at.get("value_float", at.get("value_int")))
    binary = {"Add": lambda x, y: x + y, "Sub": lambda x, y: x - y, "Mul": lambda x, y: x * y,
              "Div": lambda x, y: x / y if np.issubdtype(np.asarray(x).dtype if isinstance(x, np.ndarray) else x.dtype, np.floating) else x // y,
              "Pow": lambda x, y: xp.power(x, y.astype(x.dtype) if hasattr(y, "astype") else y),
              "And": lambda x, y: xp.logical_and(x, y), "Or": lambda x, y: xp.logical_or(x, y),
              "Equal": lambda x, y: x == y, "Less": lambda x, y: x < y, "Greater": lambda x, y: x > y,
              "LessOrEqual": lambda x, y: x <= y, "GreaterOrEqual": lambda x, y: x >= y}
    if op in binary:
        return binary[op](a[0], a[1])
    unary = {"Neg": lambda x: -x, "Exp": xp.exp, "Log": xp.log, "Sqrt": xp.sqrt, "Tanh": xp.tanh,
             "Abs": xp.abs, "Not": xp.logical_not, "Reciprocal": lambda x: 1 / x,
             "Relu": lambda x: xp.maximum(x, 0), "Sigmoid": lambda x: 1 / (1 + xp.exp(-x)),
             "Erf": be.erf}
    if op in unary:
        return unary[op](a[0])
    if op == "Where":
        return xp.where(a[0], a[1], a[2])
    if op == "Cast":
        return a[0].astype(_NP_DTYPES[at["to"]])
    if op == "MatMul":
        return xp.matmul(a[0], a[1])
    if op == "Gemm":
        x, w = a[0], a[1]
        if at.get("transA", 0):
            x = x.T
        if at.get("transB", 0):
            w = w.T
        y = at.get("alpha", 1.0) * xp.matmul(x, w) if at.get("alpha", 1.0) != 1.0 else xp.matmul(x, w)
        if len(a) > 2 and a[2] is not None:
            y = y + (at.get("beta", 1.0) * a[2] if at.get("beta", 1.0) != 1.0 else a[2])
        return y
    if op == "Gather":
        axis = at.get("axis", 0)
        idx = np.asarray(a[1]) if isinstance(a[1], np.ndarray) else a[1]
        dim = a[0].shape[axis]
        idx = xp.where(idx < 0, idx + dim, idx) if not isinstance(idx, np.ndarray) else np.where(idx < 0, idx + dim, idx)
        return xp.take(a[0], idx, axis=axis)
    if op == "GatherND":
        data, idx, b = a[0], np.asarray(a[1]), at.get("batch_dims", 0)
        if b != 0:
            raise NotImplementedError("GatherND with batch_dims")
        k = idx.shape[-1]
        return data[tuple(idx[..., i] for i in range(k))]
    if op == "Reshape":
        shape = [int(s) for s in np.asarray(a[1]).reshape(-1)]
        if not at.get("allowzero", 0):
            shape = [a[0].shape[i] if s == 0 else s for i, s in enumerate(shape)]
        return a[0].reshape(shape)
    if op == "Flatten":
        axis = at.get("axis", 1) % max(a[0].ndim, 1)
        return a[0].reshape(int(np.prod(a[0].shape[:axis])), -1)
    if op == "Transpose":
        perm = at.get("perm", list(range(a[0].ndim))[::-1])
        return xp.transpose(a[0], perm)
    if op == "Unsqueeze":
        axes = _axes_arg(a, at)
        x = a[0]
        r = x.ndim + len(axes)
        for ax in sorted(d % r for d in axes):
            x = xp.expand_dims(x, ax)
        return x
    if op == "Squeeze":
        axes = _axes_arg(a, at)
        return xp.squeeze(a[0], axis=tuple(axes) if axes is not None else None)
    if op == "Concat":
        return xp.concatenate([v if isinstance(v, np.ndarray) or be is NumpyBackend else be.asarray(v)
                               for v in a], axis=at["axis"])
    if op == "Split":
        axis = at.get("axis", 0)
        if len(a) > 1 and a[1] is not None:
            sizes = [int(s) for s in np.asarray(a[1])]
        else:
            n = at.get("num_outputs", len(node.output))
            sizes = [-(-a[0].shape[axis] // n)] * n
            sizes[-1] = a[0].shape[axis] - sum(sizes[:-1])
        points = np.cumsum(sizes)[:-1].tolist()
        return xp.split(a[0], points, axis=axis)
    if op == "Slice":
        starts, ends = np.asarray(a[1]).reshape(-1), np.asarray(a[2]).reshape(-1)
        axes = np.asarray(a[3]).reshape(-1) if len(a) > 3 and a[3] is not None else range(len(starts))
        steps = np.asarray(a[4]).reshape(-1) if len(a) > 4 and a[4] is not None else [1] * len(starts)
        sl = [slice(None)] * a[0].ndim
        for s, e, ax, st in zip(starts, ends, axes, steps):
            dim = a[0].shape[int(ax)]
            s, e = int(max(min(s, 2**62), -2**62)), int(max(min(e, 2**62), -2**62))
            sl[int(ax)] = slice(*slice(s, e, int(st)).indices(dim))
        return a[0][tuple(sl)]
    if op == "Shape":
        return np.array(a[0].shape, np.int64)
    if op == "Size":
        return np.array(int(np.prod(a[0].shape)), np.int64)
    if op == "Expand":
        shape = [int(s) for s in np.asarray(a[1]).reshape(-1)]
        out = np.broadcast_shapes(tuple(a[0].shape), tuple(shape))
        return xp.broadcast_to(a[0], out)
    if op == "ConstantOfShape":
        v = numpy_helper.to_array(at["value"]) if "value" in at else np.zeros(1, np.float32)
        return np.full([int(s) for s in np.asarray(a[0]).reshape(-1)], v.reshape(-1)[0], v.dtype)
    if op == "Range":
        return np.arange(np.asarray(a[0]), np.asarray(a[1]), np.asarray(a[2])).astype(np.asarray(a[0]).dtype)
    if op == "Softmax":
        axis = at.get("axis", -1)
        x = a[0] - xp.max(a[0], axis=axis, keepdims=True)
        e = xp.exp(x)
        return e / xp.sum(e, axis=axis, keepdims=True)
    if op == "LayerNormalization":
        axis = at.get("axis", -1) % a[0].ndim
        axes = tuple(range(axis, a[0].ndim))
        eps = at.get("epsilon", 1e-5)
        mean = xp.mean(a[0], axis=axes, keepdims=True)
        d = a[0] - mean
        var = xp.mean(d * d, axis=axes, keepdims=True)
        y = d / xp.sqrt(var + eps) * a[1]
        if len(a) > 2 and a[2] is not None:
            y = y + a[2]
        return y
    if op in ("ReduceMean", "ReduceSum", "ReduceMax", "ReduceMin"):
        axes = _axes_arg(a, at)
        keep = bool(at.get("keepdims", 1))
        if axes is None or len(axes) == 0:
            if at.get("noop_with_empty_axes", 0):
                return a[0]
            axes = list(range(a[0].ndim))
        fn = {"ReduceMean": xp.mean, "ReduceSum": xp.sum, "ReduceMax": xp.max, "ReduceMin": xp.min}[op]
        return fn(a[0], axis=tuple(axes), keepdims=keep)
    if op == "GlobalAveragePool":
        return xp.mean(a[0], axis=tuple(range(2, a[0].ndim)), keepdims=True)
    if op == "Conv":
        w = a[1]
        k = list(w.shape[2:])
        if len(k) != 2:
            raise NotImplementedError("Conv other than 2-D")
        pads = list(at.get("pads", [0, 0, 0, 0]))
        if at.get("auto_pad", b"NOTSET") not in (b"NOTSET", "NOTSET"):
            raise NotImplementedError("Conv auto_pad")
        y = be.conv(a[0], w, list(at.get("strides", [1, 1])), pads,
                    list(at.get("dilations", [1, 1])), at.get("group", 1))
        if len(a) > 2 and a[2] is not None:
            y = y + a[2].reshape(1, -1, 1, 1)
        return y
    if op == "MaxPool":
        if at.get("ceil_mode", 0) or any(d != 1 for d in at.get("dilations", [1, 1])):
            raise NotImplementedError("MaxPool ceil_mode/dilations")
        return be.maxpool(a[0], list(at["kernel_shape"]), list(at.get("strides", [1, 1])),
                          list(at.get("pads", [0, 0, 0, 0])))
    raise NotImplementedError(f"onnx_interp: op {op} (node '{node.name}')")


def check_with_numpy(model_dir):
    """Runs OUT/NAME/model.onnx with numpy on input_<k>.npy; returns [(max abs err, max |ref|)]
    per output against ref_<k>.npy."""
    import glob
    import os
    g = OnnxGraph(os.path.join(model_dir, "model.onnx"))
    inputs = [np.load(os.path.join(model_dir, f"input_{k}.npy")) for k in range(len(g.input_names))]
    outs = g.run(NumpyBackend, g.weights, inputs)
    result = []
    for k, o in enumerate(outs):
        ref = np.load(os.path.join(model_dir, f"ref_{k}.npy"))
        result.append((float(np.max(np.abs(np.asarray(o, np.float64) - ref))), float(np.max(np.abs(ref)))))
    return result


if __name__ == "__main__":
    import sys
    for d in sys.argv[1:]:
        for k, (err, scale) in enumerate(check_with_numpy(d)):
            print(f"{d}: output {k}: numpy interpreter vs PyTorch max abs err {err:.3g} "
                  f"(max |ref| {scale:.3g})")
