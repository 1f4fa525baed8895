"""Element types: stitch_dtype codes (ONNX's TensorProto numbering) and numpy dtypes.

numpy has no bfloat16. A bfloat16 tensor is returned as an ``ml_dtypes.bfloat16`` array when
ml_dtypes is installed, else as a uint16 array of its bit patterns; an input of bfloat16 takes
either (uint16 is read as bit patterns, whatever is installed).
"""

import numpy as np

try:
    import ml_dtypes

    _BFLOAT16_NUMPY = np.dtype(ml_dtypes.bfloat16)
except ImportError:
    _BFLOAT16_NUMPY = None

UINT16 = 4
BFLOAT16 = 16

NAMES = {
    1: "float32",
    2: "uint8",
    3: "int8",
    4: "uint16",
    5: "int16",
    6: "int32",
    7: "int64",
    9: "bool",
    10: "float16",
    11: "float64",
    12: "uint32",
    13: "uint64",
    16: "bfloat16",
}
CODES = {name: code for code, name in NAMES.items()}

# Native byte order only: a '>f4' array is no float32 tensor to the library.
_CODE_OF_NUMPY = {np.dtype(name): code for code, name in NAMES.items() if code != BFLOAT16}
if _BFLOAT16_NUMPY is not None:
    _CODE_OF_NUMPY[_BFLOAT16_NUMPY] = BFLOAT16


def numpy_dtype(code):
    """The numpy dtype of arrays holding a tensor of stitch_dtype `code`."""
    if code == BFLOAT16:
        return _BFLOAT16_NUMPY if _BFLOAT16_NUMPY is not None else np.dtype(np.uint16)
    return np.dtype(NAMES[code])


def code_of_numpy(dtype):
    """The stitch_dtype of a numpy dtype, or None when the library has none."""
    return _CODE_OF_NUMPY.get(np.dtype(dtype))


def itemsize(code):
    return 2 if code == BFLOAT16 else np.dtype(NAMES[code]).itemsize


def accepts(expected, given):
    """Whether a tensor of stitch_dtype `given` may stand for one of `expected`: the same
    type, or uint16 bit patterns for bfloat16."""
    return given == expected or (expected == BFLOAT16 and given == UINT16)
