"""Tensor infos and symbolic dims.

A library compiled with ``stitchc --dim NAME=MIN..MAX`` (API version 4) serves every shape in
range: each such dim of an input is a symbol, given any value in [min, max] by a run, the same
wherever the symbol appears, and the outputs' shapes follow (stitch_model_output_shapes says
how). Here a symbolic dim is None in TensorInfo.shape, with its symbol's name in
TensorInfo.symbols. Libraries of fixed shapes, and those of API versions before 4, have no
symbols: every dim is an int.

The C API says which symbol each input and output dim is (stitch_model_input_symbols,
stitch_model_output_symbols); an output dim computed from the symbols (a product such as
batch*seq) has no name. A library without stitch_model_output_symbols gets its output dims
named after the one symbol each follows, found by asking the outputs' shapes with every symbol
at its maximum, then with each lowered to its minimum in turn: a dim that equals the symbol's
value at both ends and moves with no other symbol is that symbol.
"""

import ctypes
from dataclasses import dataclass, replace

import numpy as np

from . import _capi, _dtypes


@dataclass(frozen=True)
class Symbol:
    """A symbolic dim of the model: a run may give it any value in [min, max]."""

    name: str
    min: int
    max: int


@dataclass(frozen=True)
class TensorInfo:
    """A model input or output as the library was compiled for it, or an output's actual shape
    for given inputs (Model.output_shapes, runs)."""

    name: str
    dtype: np.dtype  # numpy dtype of its arrays; bfloat16: see dtype_name
    shape: tuple  # a symbolic dim is None
    nbytes: int  # with symbolic dims: the size at the symbols' maxima
    dtype_name: str  # the library's name of the type: "float32", "bfloat16", ...
    symbols: tuple  # per dim, the name of its symbol; None for a fixed dim (or unnamed)

    @property
    def symbolic(self):
        return None in self.shape

    def describe(self):
        """The type as messages spell it: "float32[batch, seq, 8]"."""
        dims = [str(dim) if dim is not None else (symbol or "?")
                for dim, symbol in zip(self.shape, self.symbols)]
        return f"{self.dtype_name}[{', '.join(dims)}]"

    def matches(self, shape):
        """Whether a tensor of `shape` may stand for this one: its rank, and each fixed dim
        (symbolic dims are checked by the library, against the symbols' ranges)."""
        return len(shape) == len(self.shape) and all(
            expected is None or expected == dim for expected, dim in zip(self.shape, shape))


def check_shape(shape, info, label):
    """Raises ValueError unless a tensor of `shape` may stand for `info`."""
    if not info.matches(tuple(shape)):
        raise ValueError(f"{label} has shape {tuple(shape)} but the model expects "
                         f"{info.describe()}")


def read_info(info, symbols=None):
    """The TensorInfo of a stitch_tensor_info (a dim of -1 is symbolic)."""
    shape = tuple(None if info.dims[d] < 0 else info.dims[d] for d in range(info.rank))
    return TensorInfo(
        name=info.name.decode(),
        dtype=_dtypes.numpy_dtype(info.dtype),
        shape=shape,
        nbytes=info.bytes,
        dtype_name=_dtypes.NAMES[info.dtype],
        symbols=tuple(symbols) if symbols is not None else (None,) * len(shape),
    )


def c_tensor(data, info, shape):
    """The stitch_tensor of `info`'s tensor of `shape` at address `data`: the bytes of that
    shape, which are the info's own unless it is symbolic."""
    code = _dtypes.CODES[info.dtype_name]
    count = 1
    for dim in shape:
        count *= int(dim)
    return _capi.stitch_tensor(data, code, len(shape),
                               (ctypes.c_int64 * len(shape))(*(int(d) for d in shape)),
                               count * _dtypes.itemsize(code))


def read_symbols(api, model):
    """The model's symbols, in model order; none where the library predates API version 4."""
    if api.model_num_symbols is None:
        return []
    count = ctypes.c_size_t()
    api.check(api.model_num_symbols(model, ctypes.byref(count)))
    symbols = []
    for index in range(count.value):
        info = _capi.stitch_symbol_info()
        api.check(api.model_symbol(model, index, ctypes.byref(info)))
        symbols.append(Symbol(info.name.decode(), info.min, info.max))
    return symbols


def name_input_dims(api, model, index, info, symbols):
    """Input `index`'s info with each symbolic dim named after its symbol."""
    indices = (ctypes.c_int32 * _capi.STITCH_MAX_RANK)()
    api.check(api.model_input_symbols(model, index, indices))
    names = [symbols[indices[d]].name if indices[d] >= 0 else None
             for d in range(len(info.shape))]
    return replace(info, symbols=tuple(names))


class OutputShapesCall:
    """One stitch_model_output_shapes call: its arguments built before it, so that it can be
    made under a lock that runs nothing else, and the outputs' infos read after it."""

    def __init__(self, input_array, num_outputs):
        self.inputs = input_array  # a ctypes array of stitch_tensor; dims are read, not data
        self.outputs = (_capi.stitch_tensor_info * num_outputs)()

    @classmethod
    def for_shapes(cls, inputs, shapes, num_outputs):
        """The call for inputs (TensorInfos) of `shapes`, without data."""
        tensors = [c_tensor(None, info, shape) for info, shape in zip(inputs, shapes)]
        return cls((_capi.stitch_tensor * len(tensors))(*tensors), num_outputs)

    def call(self, api, model):
        """The call's status; check it with api.check on the same thread."""
        return api.model_output_shapes(model, self.inputs, len(self.inputs), self.outputs,
                                       len(self.outputs))

    def infos(self, outputs):
        """The outputs' infos as the call gave them, their dims' names those of `outputs`."""
        return [read_info(self.outputs[i], outputs[i].symbols) for i in range(len(outputs))]


def name_output_dims(api, model, inputs, outputs, symbols):
    """`outputs` with each symbolic dim named after its symbol where it is one symbol: as the
    library says (stitch_model_output_symbols), or, from a library without that function, the
    one symbol it follows (see the module's comment). `inputs` have their dims named."""
    if api.model_output_symbols is not None:
        named = []
        for index, info in enumerate(outputs):
            indices = (ctypes.c_int32 * _capi.STITCH_MAX_RANK)()
            api.check(api.model_output_symbols(model, index, indices))
            named.append(replace(info, symbols=tuple(
                symbols[indices[d]].name if indices[d] >= 0 else None
                for d in range(len(info.shape)))))
        return named

    def shapes_at(values):
        shapes = [tuple(values[name] if dim is None else dim
                        for dim, name in zip(info.shape, info.symbols)) for info in inputs]
        query = OutputShapesCall.for_shapes(inputs, shapes, len(outputs))
        api.check(query.call(api, model))
        return [info.shape for info in query.infos(outputs)]

    top = {symbol.name: symbol.max for symbol in symbols}
    at_top = shapes_at(top)
    lowered = {symbol.name: (symbol, shapes_at({**top, symbol.name: symbol.min}))
               for symbol in symbols if symbol.min < symbol.max}
    named = []
    for index, info in enumerate(outputs):
        names = []
        for d, dim in enumerate(info.shape):
            moved = [(symbol, shapes[index][d]) for symbol, shapes in lowered.values()
                     if shapes[index][d] != at_top[index][d]]
            follows = (dim is None and len(moved) == 1 and moved[0][1] == moved[0][0].min
                       and at_top[index][d] == moved[0][0].max)
            names.append(moved[0][0].name if follows else None)
        named.append(replace(info, symbols=tuple(names)))
    return named
