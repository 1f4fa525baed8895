"""The C API of include/stitch/stitch.h, declared for ctypes.

A library built by stitchc exports every function as ``stitch_<name>``, or as
``<prefix>_<name>`` when it was built with ``stitchc --symbol-prefix <prefix>``; the types keep
their ``stitch_`` names, so only the function names change. ``CApi`` binds one loaded library's
functions under a prefix and turns failed statuses into ``Error``.
"""

import ctypes
import os

STITCH_MAX_RANK = 8
STITCH_OK = 0
STITCH_ERROR_SHAPE_MISMATCH = 2
STITCH_RUN_NO_GRAPH = 1  # stitch_run_options.flags: enqueue directly, no context graph
# Every tensor's data must be this aligned (generated kernels use 16-byte vector accesses).
TENSOR_ALIGNMENT = 16


class Error(RuntimeError):
    """A call into the library failed: ``status`` is the stitch_status (an int),
    ``status_name`` its name ("STITCH_ERROR_SHAPE_MISMATCH"), ``message`` what
    stitch_last_error() said."""

    def __init__(self, status, status_name, message):
        super().__init__(f"{status_name}: {message}")
        self.status = status
        self.status_name = status_name
        self.message = message


class ShapeError(Error, ValueError):
    """The library refused a tensor's shape (STITCH_ERROR_SHAPE_MISMATCH): a symbolic dim out of
    its range, inputs disagreeing on a symbol, outputs of the wrong shape. Also a ValueError, as
    the shape errors found before the library is called are."""


# The structs of stitch.h, under their C names.


class stitch_tensor_info(ctypes.Structure):
    _fields_ = [
        ("name", ctypes.c_char_p),
        ("dtype", ctypes.c_int),
        ("rank", ctypes.c_int32),
        ("dims", ctypes.c_int64 * STITCH_MAX_RANK),
        ("bytes", ctypes.c_uint64),
    ]


class stitch_tensor(ctypes.Structure):
    _fields_ = [
        ("data", ctypes.c_void_p),
        ("dtype", ctypes.c_int),
        ("rank", ctypes.c_int32),
        ("dims", ctypes.POINTER(ctypes.c_int64)),
        ("bytes", ctypes.c_uint64),
    ]


class stitch_build_info(ctypes.Structure):  # API version 3
    _fields_ = [
        (name, ctypes.c_char_p)
        for name in ("stitchc_version", "model_sha256", "model_file", "target", "archs",
                     "planner", "precision", "flags", "symbol_prefix")
    ]


class stitch_run_options(ctypes.Structure):  # API version 3
    _fields_ = [("flags", ctypes.c_uint32)]


class stitch_symbol_info(ctypes.Structure):  # API version 4
    _fields_ = [("name", ctypes.c_char_p), ("min", ctypes.c_int64), ("max", ctypes.c_int64)]


_status = ctypes.c_int
_handle = ctypes.c_void_p  # stitch_model* and stitch_context*, opaque
_size_p = ctypes.POINTER(ctypes.c_size_t)
_info_p = ctypes.POINTER(stitch_tensor_info)
_tensors = ctypes.POINTER(stitch_tensor)

# name (without the prefix) -> (restype, argtypes). Every library has these (API version 1).
_REQUIRED = {
    "target": (ctypes.c_char_p, []),
    "api_version": (ctypes.c_int, []),
    "status_name": (ctypes.c_char_p, [_status]),
    "last_error": (ctypes.c_char_p, []),
    "model_create": (_status, [ctypes.POINTER(_handle)]),
    "model_destroy": (_status, [_handle]),
    "model_num_inputs": (_status, [_handle, _size_p]),
    "model_num_outputs": (_status, [_handle, _size_p]),
    "model_input": (_status, [_handle, ctypes.c_size_t, _info_p]),
    "model_output": (_status, [_handle, ctypes.c_size_t, _info_p]),
    "context_create": (_status, [_handle, ctypes.POINTER(_handle)]),
    "context_destroy": (_status, [_handle]),
    "run": (_status, [_handle, _tensors, ctypes.c_size_t, _tensors, ctypes.c_size_t,
                      ctypes.c_void_p]),
}

# Added by API versions 3 to 5; bound only where the library exports them.
_OPTIONAL = {
    "library_build_info": (_status, [ctypes.POINTER(stitch_build_info)]),
    "model_device": (_status, [_handle, ctypes.POINTER(ctypes.c_int)]),
    "run_with_options": (_status, [_handle, _tensors, ctypes.c_size_t, _tensors, ctypes.c_size_t,
                                   ctypes.c_void_p, ctypes.POINTER(stitch_run_options)]),
    # API version 4: symbolic dims.
    "model_num_symbols": (_status, [_handle, _size_p]),
    "model_symbol": (_status, [_handle, ctypes.c_size_t, ctypes.POINTER(stitch_symbol_info)]),
    "model_input_symbols": (_status, [_handle, ctypes.c_size_t, ctypes.POINTER(ctypes.c_int32)]),
    "model_output_symbols": (_status, [_handle, ctypes.c_size_t, ctypes.POINTER(ctypes.c_int32)]),
    "model_output_shapes": (_status, [_handle, _tensors, ctypes.c_size_t, _info_p,
                                      ctypes.c_size_t]),
    "model_context_memory": (_status, [_handle, ctypes.POINTER(ctypes.c_uint64)]),
    # API version 5: contexts for part of the symbols' range.
    "model_context_memory_for": (_status, [_handle, ctypes.POINTER(ctypes.c_int64),
                                           ctypes.c_size_t, ctypes.POINTER(ctypes.c_uint64)]),
    "context_create_for": (_status, [_handle, ctypes.POINTER(ctypes.c_int64), ctypes.c_size_t,
                                     ctypes.c_void_p, ctypes.c_uint64, ctypes.POINTER(_handle)]),
}


class CApi:
    """One library's C API under one symbol prefix: ``api.model_create(...)`` calls
    ``<prefix>_model_create``. Functions of ``_OPTIONAL`` the library lacks are None."""

    def __init__(self, library, prefix, path):
        if not hasattr(library, f"{prefix}_model_create"):
            raise OSError(f"{path} exports no {prefix}_model_create: "
                          + _prefix_hint(library, prefix, path))
        for name, (restype, argtypes) in {**_REQUIRED, **_OPTIONAL}.items():
            symbol = f"{prefix}_{name}"
            if name in _OPTIONAL and not hasattr(library, symbol):
                setattr(self, name, None)
                continue
            function = getattr(library, symbol)
            function.restype = restype
            function.argtypes = argtypes
            setattr(self, name, function)
        # The CDLL stays referenced for as long as the functions are.
        self.library = library

    def check(self, status):
        """Raises Error for a failed status. Call it on the thread that made the failed call:
        stitch_last_error() is per thread."""
        if status == STITCH_OK:
            return
        name = self.status_name(status).decode()
        kind = ShapeError if status == STITCH_ERROR_SHAPE_MISMATCH else Error
        raise kind(status, name, self.last_error().decode(errors="replace"))


def _prefix_hint(library, prefix, path):
    """What to tell a caller whose library lacks <prefix>_model_create: the prefix its file
    name suggests (libNAME.so, as stitch-run guesses) when the library exports that one."""
    base = os.path.basename(path)
    guess = base[3:].split(".")[0] if base.startswith("lib") else ""
    if guess and guess != prefix and hasattr(library, f"{guess}_model_create"):
        return f"it exports {guess}_model_create: load it with symbol_prefix={guess!r}"
    return ("not a library stitchc compiled, or one built with another --symbol-prefix "
            "(pass symbol_prefix=...)")
