"""Host-target tensors: numpy arrays in host memory.

Inputs are taken as they are when they already are C-contiguous and 16-byte aligned arrays of
the model's dtype and shape (any value of a symbolic dim), else copied once into such an array;
a wrong dtype or shape is a ValueError, never a conversion. Outputs are new aligned arrays, or
the caller's arrays, written in place, of the shape the run's inputs give them.
"""

import numpy as np

from . import _dtypes, _shapes
from ._capi import TENSOR_ALIGNMENT as ALIGNMENT
from ._cuda import cuda_array_interface

# DLPack's device type of host memory.
_KDL_CPU = 1


def aligned_empty(shape, dtype):
    """An uninitialized C-contiguous array whose data is ALIGNMENT-byte aligned."""
    dtype = np.dtype(dtype)
    nbytes = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    raw = np.empty(nbytes + ALIGNMENT, np.uint8)
    offset = -raw.ctypes.data % ALIGNMENT
    return raw[offset : offset + nbytes].view(dtype).reshape(shape)


def _is_usable(array):
    return array.flags.c_contiguous and array.ctypes.data % ALIGNMENT == 0


def _as_host_array(value, label, path):
    """`value` as a numpy array without a copy where numpy can: arrays, objects with
    __array_interface__ or __array__, and objects whose __dlpack__ is in host memory."""
    if isinstance(value, np.ndarray):
        return value
    if cuda_array_interface(value) is not None:
        raise ValueError(f"{label} is CUDA memory (__cuda_array_interface__) but {path} was "
                         f"built for the host target: pass a host array")
    if hasattr(value, "__dlpack__") and not hasattr(value, "__array_interface__"):
        if hasattr(value, "__dlpack_device__") and value.__dlpack_device__()[0] != _KDL_CPU:
            raise ValueError(f"{label} is on DLPack device {value.__dlpack_device__()} but "
                             f"{path} was built for the host target: pass a host array")
        return np.from_dlpack(value)
    return np.asarray(value)


def check_type(array_dtype, shape, info, label):
    """Raises ValueError unless a tensor of numpy `array_dtype` and `shape` fits `info`."""
    code = _dtypes.code_of_numpy(array_dtype)
    if code is None or not _dtypes.accepts(_dtypes.CODES[info.dtype_name], code):
        raise ValueError(f"{label} has dtype {np.dtype(array_dtype)} but the model expects "
                         f"{info.describe()}")
    _shapes.check_shape(shape, info, label)


def input_array(value, info, label, path):
    """An input as an array the library can read: the model's dtype and shape (its symbolic
    dims are the library's to check), C-contiguous, aligned."""
    array = _as_host_array(value, label, path)
    check_type(array.dtype, array.shape, info, label)
    if _is_usable(array):
        return array
    copy = aligned_empty(array.shape, array.dtype)
    copy[...] = array
    return copy


def output_array(value, info, label):
    """A caller's output array, checked, or a new one: the library writes it in place, so it
    is never copied and must already be what the library writes. `info` has the output's
    actual shape."""
    if value is None:
        return aligned_empty(info.shape, info.dtype)
    if not isinstance(value, np.ndarray):
        raise ValueError(f"{label} is a {type(value).__name__}, not a numpy array")
    check_type(value.dtype, value.shape, info, label)
    if not value.flags.writeable:
        raise ValueError(f"{label} is read-only")
    if not _is_usable(value):
        raise ValueError(f"{label} must be C-contiguous and {ALIGNMENT}-byte aligned to be "
                         f"written in place")
    return value
