"""Run libraries compiled by stitchc from Python.

    import numpy as np, stitch
    with stitch.load("libmodel.so") as model:
        print(model.inputs, model.outputs, model.target)
        outputs = model.run({"x": np.random.rand(2, 3).astype(np.float32)})

The binding calls the library's C API (include/stitch/stitch.h) through ctypes; nothing is
compiled. See README.md beside this package.
"""

from ._capi import Error, ShapeError
from ._model import Context, Model, load
from ._shapes import Symbol, TensorInfo

__version__ = "0.9.0"
__all__ = ["Context", "Error", "Model", "ShapeError", "Symbol", "TensorInfo", "load"]
