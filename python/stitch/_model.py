"""Model and Context: a loaded library, its stitch_model and the stitch_contexts runs use.

Ownership. A _NativeModel owns the stitch_model and the stitch_contexts created from it (it
keeps a registry of them), and destroys the contexts before the model, whichever of close(),
a Context's garbage collection or its own comes first. Model and every Context reference the
_NativeModel, so it outlives them unless all are dropped together.

Threads. A stitch_model may be used by many threads, a stitch_context by one at a time.
Model.run uses one Context per calling thread (created on its first run, destroyed with its
thread); a Context held by the caller serializes its runs with a lock. Locks: a context's lock
is held around its C calls only (no Python code runs under it but ctypes' argument passing), so
that a finalizer never waits for a lock its own thread holds; the model's lock is held around
creating and registering a context and around close(), which takes each registered context's
lock in turn, so it waits for runs in flight. A context leaves the registry only once it is
destroyed, so close() never destroys the model before a context another thread is closing.
A run's stitch_model_output_shapes call (symbolic dims) is made under its context's lock too:
while the context lives, so does the model.
"""

import ctypes
import operator
import os
import re
import threading
from collections.abc import Mapping

from . import _capi, _cuda, _host, _shapes


def _in_model_order(kind, infos, values, optional=False):
    """`values`, a mapping by name or a sequence in model order, as a list in model order;
    where `optional`, a name left out is None."""
    names = [info.name for info in infos]
    if values is None:
        values = {}
    if not isinstance(values, Mapping):
        values = list(values)
        if len(values) != len(infos):
            raise ValueError(f"{len(values)} {kind}s given but the model has {len(infos)}: "
                             f"{names}")
        return values
    unknown = [name for name in values if name not in names]
    missing = [] if optional else [name for name in names if name not in values]
    if unknown or missing:
        problems = [f"unknown {kind} {name!r}" for name in unknown]
        problems += [f"missing {kind} {name!r}" for name in missing]
        raise ValueError(f"{'; '.join(problems)} (the model's {kind}s: {names})")
    return [values.get(name) for name in names]


class _NativeModel:
    """The library's functions, its stitch_model and the registry of its live contexts."""

    def __init__(self, library, symbol_prefix, path):
        self.api = _capi.CApi(library, symbol_prefix, path)
        self.path = path
        self.symbol_prefix = symbol_prefix
        self.lock = threading.Lock()
        self.contexts = set()  # the _ContextHandles not destroyed yet
        self.pointer = None
        handle = ctypes.c_void_p()
        self.api.check(self.api.model_create(ctypes.byref(handle)))
        self.pointer = handle.value
        self.target = self.api.target().decode()
        # The CUDA target takes device tensors by pointer, the host target numpy arrays. Tests
        # set it on a host library to drive the CUDA paths with host memory.
        self.device_tensors = self.target == "cuda"
        self.device = None
        if self.api.model_device is not None:
            device = ctypes.c_int()
            self.api.check(self.api.model_device(self.pointer, ctypes.byref(device)))
            self.device = device.value
        self.inputs = self._infos(self.api.model_num_inputs, self.api.model_input)
        self.outputs = self._infos(self.api.model_num_outputs, self.api.model_output)
        self.symbols = _shapes.read_symbols(self.api, self.pointer)
        if self.symbols:
            self.inputs = [_shapes.name_input_dims(self.api, self.pointer, index, info,
                                                   self.symbols)
                           for index, info in enumerate(self.inputs)]
            self.outputs = _shapes.name_output_dims(self.api, self.pointer, self.inputs,
                                                    self.outputs, self.symbols)

    def _infos(self, count_function, info_function):
        count = ctypes.c_size_t()
        self.api.check(count_function(self.pointer, ctypes.byref(count)))
        infos = []
        for index in range(count.value):
            info = _capi.stitch_tensor_info()
            self.api.check(info_function(self.pointer, index, ctypes.byref(info)))
            infos.append(_shapes.read_info(info))
        return infos

    def maxima(self, max_dims):
        """max_dims (a dict symbol name -> the most it may be, naming every symbol) as the C
        API's array in symbol order."""
        if self.api.context_create_for is None:
            raise ValueError(f"{self.path} has stitch API version {self.api.api_version()}; "
                             "contexts for part of the range need version 5")
        names = [symbol.name for symbol in self.symbols]
        unknown = sorted(set(max_dims) - set(names))
        missing = [name for name in names if name not in max_dims]
        if unknown or missing:
            raise ValueError(f"max_dims must give every symbolic dim of the model ({names}); "
                             f"unknown: {unknown}, missing: {missing}")
        values = (ctypes.c_int64 * max(len(names), 1))()
        for index, name in enumerate(names):
            values[index] = operator.index(max_dims[name])
        return values, len(names)

    def context_memory(self, max_dims=None):
        size = ctypes.c_uint64()
        with self.lock:
            if self.pointer is None:
                raise ValueError(f"the model of {self.path} is closed")
            if max_dims is None:
                if self.api.model_context_memory is None:
                    raise ValueError(f"{self.path} does not report its context memory "
                                     "(stitch API version 3 and later do)")
                status = self.api.model_context_memory(self.pointer, ctypes.byref(size))
            else:
                values, count = self.maxima(max_dims)
                status = self.api.model_context_memory_for(self.pointer, values, count,
                                                           ctypes.byref(size))
        self.api.check(status)
        return size.value

    def create_context(self, max_dims=None):
        with self.lock:
            if self.pointer is None:
                raise ValueError(f"the model of {self.path} is closed")
            handle = ctypes.c_void_p()
            if max_dims is None:
                status = self.api.context_create(self.pointer, ctypes.byref(handle))
            else:
                values, count = self.maxima(max_dims)
                status = self.api.context_create_for(self.pointer, values, count, None, 0,
                                                     ctypes.byref(handle))
            self.api.check(status)
            context = _ContextHandle(self.api, handle.value)
            self.contexts.add(context)
            return context

    def destroy_context(self, context):
        context.destroy()
        self.contexts.discard(context)

    def close(self):
        with self.lock:
            if self.pointer is None:
                return
            for context in list(self.contexts):
                self.destroy_context(context)
            pointer, self.pointer = self.pointer, None
            self.api.check(self.api.model_destroy(pointer))

    def __del__(self):
        if getattr(self, "pointer", None) is not None:
            self.close()


class _ContextHandle:
    """One stitch_context and the lock its C calls are made under."""

    def __init__(self, api, pointer):
        self.api = api
        self.pointer = pointer
        self.lock = threading.Lock()

    def destroy(self):
        """Destroys the stitch_context, once."""
        with self.lock:
            pointer, self.pointer = self.pointer, None
            status = _capi.STITCH_OK if pointer is None else self.api.context_destroy(pointer)
        self.api.check(status)


class Context:
    """A stitch_context: what one run needs (the intermediate arena; on the CUDA target the
    captured CUDA Graph). Make one per thread with Model.context(), or let Model.run keep one
    per thread. Closing the model closes its contexts."""

    def __init__(self, native, max_dims=None):
        self._native = native
        self._handle = native.create_context(max_dims)

    @property
    def closed(self):
        return self._handle.pointer is None

    def run(self, inputs=None, outputs=None, stream=None, graph=True):
        """Runs the model; see Model.run."""
        native = self._native
        if not graph and native.api.run_with_options is None:
            raise ValueError(f"{native.path} has stitch API version {native.api.api_version()}; "
                             "graph=False needs version 3")
        inputs = _in_model_order("input", native.inputs, inputs)
        outputs = _in_model_order("output", native.outputs, outputs, optional=True)
        stream = _cuda.stream_handle(stream)
        device = native.device_tensors
        # keepalive (host copies, DLPack capsules) stays referenced until the run returns.
        prepare = self._device_inputs if device else self._host_inputs
        c_inputs, keepalive = prepare(inputs, stream)
        input_array = (_capi.stitch_tensor * len(c_inputs))(*c_inputs)
        output_infos = self._output_infos(input_array)
        prepare = self._device_outputs if device else self._host_outputs
        c_outputs, results, kept = prepare(outputs, output_infos, stream)
        keepalive += kept
        output_array = (_capi.stitch_tensor * len(c_outputs))(*c_outputs)
        with self._handle.lock:
            pointer = self._handle.pointer
            if pointer is None:
                status = None
            elif graph:
                status = native.api.run(pointer, input_array, len(c_inputs), output_array,
                                        len(c_outputs), stream)
            else:
                options = _capi.stitch_run_options(_capi.STITCH_RUN_NO_GRAPH)
                status = native.api.run_with_options(pointer, input_array, len(c_inputs),
                                                     output_array, len(c_outputs), stream,
                                                     ctypes.byref(options))
        if status is None:
            raise ValueError(f"the context of {native.path} is closed")
        native.api.check(status)  # on this thread: stitch_last_error() is per thread
        return {info.name: result for info, result in zip(native.outputs, results)}

    def _output_infos(self, input_array):
        """The outputs' infos for the inputs of `input_array`: as compiled, or for a model of
        symbolic dims, as stitch_model_output_shapes gives them (it checks the inputs' dims
        against the symbols' ranges, as the run would)."""
        native = self._native
        if not native.symbols:
            return native.outputs
        query = _shapes.OutputShapesCall(input_array, len(native.outputs))
        with self._handle.lock:
            status = None if self._handle.pointer is None else query.call(native.api,
                                                                           native.pointer)
        if status is None:
            raise ValueError(f"the context of {native.path} is closed")
        native.api.check(status)
        return query.infos(native.outputs)

    def _host_inputs(self, inputs, stream):
        native = self._native
        arrays = [_host.input_array(value, info, f"input {info.name!r}", native.path)
                  for info, value in zip(native.inputs, inputs)]
        c_inputs = [_shapes.c_tensor(array.ctypes.data, info, array.shape)
                    for array, info in zip(arrays, native.inputs)]
        return c_inputs, arrays

    def _host_outputs(self, outputs, infos, stream):
        results = [_host.output_array(value, info, f"output {info.name!r}")
                   for info, value in zip(infos, outputs)]
        c_outputs = [_shapes.c_tensor(array.ctypes.data, info, array.shape)
                     for array, info in zip(results, infos)]
        return c_outputs, results, []

    def _device_inputs(self, inputs, stream):
        return self._device_tensors("input", self._native.inputs, inputs, stream)

    def _device_outputs(self, outputs, infos, stream):
        device = self._native.device
        outputs = [_cuda.torch_empty(info, device) if value is None else value
                   for info, value in zip(infos, outputs)]
        c_outputs, keepalive = self._device_tensors("output", infos, outputs, stream)
        return c_outputs, outputs, keepalive

    def _device_tensors(self, kind, infos, values, stream):
        """The stitch_tensors of CUDA tensors `values` (inputs or outputs, by `kind`), checked
        against `infos`, and what must stay referenced until the run is enqueued."""
        c_tensors, keepalive = [], []
        for info, value in zip(infos, values):
            label = f"{kind} {info.name!r}"
            tensor = _cuda.device_tensor(value, stream, label)
            _cuda.check_device_tensor(tensor, info, self._native.device, label,
                                      kind == "output")
            keepalive.append(tensor.keepalive)
            c_tensors.append(_shapes.c_tensor(tensor.data, info, tensor.shape))
        return c_tensors, keepalive

    def close(self):
        """Destroys the stitch_context (also done when the Context is garbage collected)."""
        self._native.destroy_context(self._handle)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        if hasattr(self, "_handle"):
            self.close()


class Model:
    """A library stitchc compiled, loaded, and its stitch_model created. Use stitch.load."""

    def __init__(self, path, symbol_prefix="stitch"):
        if not isinstance(symbol_prefix, str) or not re.fullmatch(r"[A-Za-z_]\w*",
                                                                 symbol_prefix, re.ASCII):
            raise ValueError(f"symbol_prefix {symbol_prefix!r} is not a C identifier")
        path = os.fspath(path)
        # A path, not a name for the dynamic loader to search for.
        library = ctypes.CDLL(os.path.abspath(path))
        self._native = _NativeModel(library, symbol_prefix, path)
        self._local = threading.local()

    @property
    def path(self):
        return self._native.path

    @property
    def inputs(self):
        """The inputs, in model order (a list of TensorInfo; a symbolic dim is None in its
        shape, named in its symbols)."""
        return list(self._native.inputs)

    @property
    def outputs(self):
        """The outputs, in model order (a list of TensorInfo, as inputs)."""
        return list(self._native.outputs)

    @property
    def symbols(self):
        """The symbolic dims of a library compiled with `stitchc --dim NAME=MIN..MAX`: a dict
        name -> Symbol(name, min, max), in model order; empty for a library of fixed shapes or
        of an API version before 4."""
        return {symbol.name: symbol for symbol in self._native.symbols}

    def output_shapes(self, inputs):
        """The outputs' shapes for inputs of the given shapes, a dict name -> tuple in model
        order. inputs: a dict name -> shape, or a sequence in model order; a tensor (anything
        with .shape) stands for its shape. Checked as a run checks them: a wrong fixed dim is a
        ValueError; a symbolic dim out of its range, or inputs disagreeing on a symbol, a
        stitch.ShapeError with the library's message. A library of fixed shapes gives its
        outputs' shapes as compiled."""
        native = self._native
        shapes = [tuple(getattr(value, "shape", value))
                  for value in _in_model_order("input", native.inputs, inputs)]
        for info, shape in zip(native.inputs, shapes):
            _shapes.check_shape(shape, info, f"input {info.name!r}")
        if not native.symbols:
            return {info.name: info.shape for info in native.outputs}
        query = _shapes.OutputShapesCall.for_shapes(native.inputs, shapes, len(native.outputs))
        with native.lock:  # keeps close() from destroying the model during the call
            status = None if native.pointer is None else query.call(native.api, native.pointer)
        if status is None:
            raise ValueError(f"the model of {native.path} is closed")
        native.api.check(status)
        return {info.name: info.shape for info in query.infos(native.outputs)}

    @property
    def target(self):
        """The library's target: "host" or "cuda"."""
        return self._native.target

    @property
    def api_version(self):
        return self._native.api.api_version()

    @property
    def symbol_prefix(self):
        return self._native.symbol_prefix

    @property
    def device(self):
        """The CUDA device the model lives on (0 on the host target); None for libraries of
        API versions before 3, which do not say."""
        return self._native.device

    @property
    def build_info(self):
        """How the library was built (stitch_library_build_info: stitchc_version,
        model_sha256, model_file, target, archs, planner, precision, flags, symbol_prefix), or
        None for libraries of API versions before 3."""
        api = self._native.api
        if api.library_build_info is None:
            return None
        info = _capi.stitch_build_info()
        api.check(api.library_build_info(ctypes.byref(info)))
        return {name: (getattr(info, name) or b"").decode()
                for name, _ in _capi.stitch_build_info._fields_}

    @property
    def closed(self):
        return self._native.pointer is None

    def context(self, max_dims=None):
        """A new Context of this model, for one thread at a time.

        max_dims (API version 5): a dict naming every symbolic dim with the most it will be in
        this context's runs (within its range): the context's memory is laid out for those
        maxima instead of the symbols' (see context_memory), and a run above them raises
        stitch.ShapeError."""
        return Context(self._native, max_dims)

    def context_memory(self, max_dims=None):
        """The device memory (host memory on the host target) of one Context in bytes: its
        arena of intermediates, the library workspace and its debug taps. max_dims: that of a
        context(max_dims=...), its arena laid out for those maxima; with a run's own dims,
        what a context for that one shape needs."""
        return self._native.context_memory(max_dims)

    def run(self, inputs=None, outputs=None, stream=None, graph=True):
        """Runs the model through the calling thread's Context.

        inputs: a dict name -> tensor, or a sequence in model order.
        outputs: optional, the same (a dict may name some outputs only): tensors to write in
            place; the others are made.
        Returns a dict name -> output tensor, in model order.

        Host target: tensors are numpy arrays (or objects numpy reads without a copy) of the
        model's dtype and shape, exactly; misaligned or non-contiguous inputs are copied once,
        outputs given are written in place. The run is done when it returns.

        Symbolic dims (see symbols): inputs may have any shape in range, and the outputs the
        shapes output_shapes gives for them (those given must have them). A dim out of its
        range, or inputs disagreeing on a symbol, raise stitch.ShapeError with the library's
        message.

        CUDA target: tensors are CUDA tensors (__cuda_array_interface__ or __dlpack__: torch,
        CuPy), C-contiguous and 16-byte aligned, read and written by pointer; outputs not
        given are made as torch tensors on the model's device. The run is enqueued on
        `stream` (an int cudaStream_t, an object with .cuda_stream or .ptr; None: the legacy
        default stream) and not waited for.

        graph=False (API version 3) enqueues the model's work on `stream` directly instead of
        through the context's own CUDA Graph, so that a capture of `stream` by the caller
        (torch.cuda.graph, cudaStreamBeginCapture) takes the run in; the caller then orders the
        context's runs. The host target runs the same either way.
        """
        context = getattr(self._local, "context", None)
        if context is None or context.closed:
            context = self._local.context = Context(self._native)
        return context.run(inputs, outputs, stream, graph)

    def close(self):
        """Destroys every context of the model, then the stitch_model (also done when the
        Model and its Contexts are garbage collected). Later runs raise ValueError."""
        self._native.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __repr__(self):
        state = "closed" if self.closed else f"target={self.target!r}"
        return f"<stitch.Model {self.path!r} {state}>"


def load(path, symbol_prefix="stitch"):
    """Loads a library stitchc compiled. `symbol_prefix` is the --symbol-prefix it was built
    with ("stitch" unless one was given): its C API functions are <symbol_prefix>_run, ..."""
    return Model(path, symbol_prefix)
