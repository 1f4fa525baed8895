"""CUDA-target tensors: device memory read by pointer, never copied.

A tensor is read from ``__cuda_array_interface__`` where it has one (torch and CuPy CUDA
tensors do), else from ``__dlpack__`` (torch's bfloat16 tensors have no
__cuda_array_interface__). Either way the library gets the data pointer, and the shape, dtype,
strides and device are checked here first: a tensor must be C-contiguous and 16-byte aligned,
since nothing here can copy device memory.

DLPack: ``__dlpack__(stream=...)`` returns a PyCapsule named "dltensor" holding a
DLManagedTensor. It is read in place and left unconsumed (neither renamed "used_dltensor" nor
its deleter called): the capsule stays referenced until the run is enqueued, and when it is
released its producer's destructor calls the deleter, as the DLPack protocol has it for a
capsule nobody consumed.
"""

import ctypes
from dataclasses import dataclass

import numpy as np

from . import _dtypes, _shapes
from ._capi import TENSOR_ALIGNMENT as ALIGNMENT

_KDL_CUDA = 2
_KDL_CUDA_MANAGED = 13

# DLPack's (type code, bits) -> stitch_dtype. Codes: 0 int, 1 uint, 2 float, 4 bfloat, 6 bool.
_CODE_OF_DLPACK = {
    (2, 32): 1, (1, 8): 2, (0, 8): 3, (1, 16): 4, (0, 16): 5, (0, 32): 6, (0, 64): 7,
    (6, 8): 9, (2, 16): 10, (2, 64): 11, (1, 32): 12, (1, 64): 13, (4, 16): 16,
}


class _DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class _DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class _DLTensor(ctypes.Structure):
    _fields_ = [
        ("data", ctypes.c_void_p),
        ("device", _DLDevice),
        ("ndim", ctypes.c_int32),
        ("dtype", _DLDataType),
        ("shape", ctypes.POINTER(ctypes.c_int64)),
        ("strides", ctypes.POINTER(ctypes.c_int64)),  # in elements; NULL: C-contiguous
        ("byte_offset", ctypes.c_uint64),
    ]


class DLManagedTensor(ctypes.Structure):
    _fields_ = [
        ("dl_tensor", _DLTensor),
        ("manager_ctx", ctypes.c_void_p),
        ("deleter", ctypes.c_void_p),
    ]


# A function object of our own (indexing makes a new one): others' argtypes stay theirs.
_capsule_pointer = ctypes.pythonapi["PyCapsule_GetPointer"]
_capsule_pointer.restype = ctypes.c_void_p
_capsule_pointer.argtypes = [ctypes.py_object, ctypes.c_char_p]


@dataclass
class DeviceTensor:
    """A tensor in device memory as its producer describes it."""

    data: int
    code: int  # stitch_dtype, None when the library has no such type
    type_name: str  # for messages
    shape: tuple
    strides: tuple  # in elements; None: C-contiguous
    device: int  # None when the producer does not say (__cuda_array_interface__)
    readonly: bool
    keepalive: object  # what must stay referenced until the run is enqueued


def stream_handle(stream):
    """A cudaStream_t as an int: None (the legacy default stream, 0), an int, or an object
    with .cuda_stream (torch) or .ptr (CuPy)."""
    if stream is None:
        return 0
    if isinstance(stream, int):
        return stream
    for attribute in ("cuda_stream", "ptr"):
        if hasattr(stream, attribute):
            return int(getattr(stream, attribute))
    raise TypeError(f"stream must be None, an int or an object with .cuda_stream or .ptr, "
                    f"not {type(stream).__name__}")


def cuda_array_interface(value):
    """value.__cuda_array_interface__, or None. torch raises TypeError for the dtypes the
    interface cannot spell (bfloat16): those are read through DLPack."""
    try:
        return value.__cuda_array_interface__
    except (AttributeError, TypeError):
        return None


def _from_cuda_array_interface(interface, label):
    if interface.get("mask") is not None:
        raise ValueError(f"{label} has a mask (__cuda_array_interface__), which is not supported")
    typestr = interface["typestr"]
    # '<V2' is ml_dtypes' bfloat16, as stitch-run reads it from .npy files.
    code = _dtypes.BFLOAT16 if typestr == "<V2" else _dtypes.code_of_numpy(np.dtype(typestr))
    shape = tuple(int(d) for d in interface["shape"])
    strides = interface.get("strides")
    if strides is not None:
        size = np.dtype(typestr).itemsize
        if any(s % size for s in strides):
            raise ValueError(f"{label} has strides {tuple(strides)} (bytes) that are no "
                             f"multiple of its element size {size}")
        strides = tuple(s // size for s in strides)
    data, readonly = interface["data"]
    return DeviceTensor(data or 0, code, typestr, shape, strides, None, readonly, None)


def _from_dlpack(value, stream, label):
    if hasattr(value, "__dlpack_device__"):
        device_type = value.__dlpack_device__()[0]
        if device_type not in (_KDL_CUDA, _KDL_CUDA_MANAGED):
            raise ValueError(f"{label} is on DLPack device type {device_type}, not CUDA memory")
    # DLPack's stream argument on CUDA: 1 is the legacy default stream (0 is not allowed).
    capsule = value.__dlpack__(stream=stream or 1)
    # Raises ValueError when the capsule is no (longer an) unconsumed "dltensor".
    managed = DLManagedTensor.from_address(_capsule_pointer(capsule, b"dltensor"))
    tensor = managed.dl_tensor
    if tensor.device.device_type not in (_KDL_CUDA, _KDL_CUDA_MANAGED):
        raise ValueError(f"{label} is on DLPack device type {tensor.device.device_type}, not "
                         f"CUDA memory")
    kind = (tensor.dtype.code, tensor.dtype.bits)
    code = _CODE_OF_DLPACK.get(kind) if tensor.dtype.lanes == 1 else None
    type_name = f"DLPack type (code {kind[0]}, {kind[1]} bits, {tensor.dtype.lanes} lanes)"
    shape = tuple(tensor.shape[d] for d in range(tensor.ndim))
    strides = tuple(tensor.strides[d] for d in range(tensor.ndim)) if tensor.strides else None
    data = (tensor.data or 0) + tensor.byte_offset
    return DeviceTensor(data, code, type_name, shape, strides, tensor.device.device_id, False,
                        capsule)


def device_tensor(value, stream, label):
    """The DeviceTensor of a CUDA tensor object (see the module's comment)."""
    interface = cuda_array_interface(value)
    if interface is not None:
        return _from_cuda_array_interface(interface, label)
    if hasattr(value, "__dlpack__"):
        return _from_dlpack(value, stream, label)
    raise ValueError(f"{label} is a {type(value).__name__}, not a CUDA tensor (an object with "
                     f"__cuda_array_interface__ or __dlpack__, such as a torch or CuPy tensor)")


def _is_c_contiguous(shape, strides):
    expected = 1
    for size, stride in zip(reversed(shape), reversed(strides)):
        if size != 1 and stride != expected:
            return False
        expected *= size
    return True


def check_device_tensor(tensor, info, device, label, output):
    """Raises ValueError unless `tensor` can be passed as `info` (an output where `output`) to
    a model on `device`."""
    if tensor.code is None or not _dtypes.accepts(_dtypes.CODES[info.dtype_name], tensor.code):
        raise ValueError(f"{label} has dtype {tensor.type_name} but the model expects "
                         f"{info.describe()}")
    _shapes.check_shape(tensor.shape, info, label)
    if tensor.strides is not None and not _is_c_contiguous(tensor.shape, tensor.strides):
        raise ValueError(f"{label} has strides {tensor.strides} (elements): it must be "
                         f"C-contiguous (torch: .contiguous())")
    if tensor.data % ALIGNMENT:
        raise ValueError(f"{label}'s data {tensor.data:#x} is not {ALIGNMENT}-byte aligned")
    if output and tensor.readonly:
        raise ValueError(f"{label} is read-only")
    if tensor.device is not None and device is not None and tensor.device != device:
        raise ValueError(f"{label} is on CUDA device {tensor.device} but the model is on "
                         f"device {device}")


def torch_empty(info, device):
    """A new torch tensor for output `info` (of its actual shape) on CUDA device `device`
    (None: torch's current one)."""
    try:
        import torch
    except ImportError:
        raise ValueError(f"output {info.name!r} not given: the CUDA target needs outputs=... "
                         f"(CUDA tensors to write) when torch is not installed") from None
    return torch.empty(info.shape, dtype=getattr(torch, info.dtype_name),
                       device="cuda" if device is None else f"cuda:{device}")
