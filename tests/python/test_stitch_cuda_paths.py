"""The CUDA target's tensor paths of the stitch package, without a GPU: a host-target library
is told to take its tensors as the CUDA target does (Model._native.device_tensors), and is given
fake CUDA tensors whose memory is host memory, which the library cannot tell from device
memory. Proves: __cuda_array_interface__ and DLPack tensors are read by pointer, without a copy,
outputs written in place; dtype, shape, strides, alignment and device are checked; a DLPack
capsule is read but never consumed (its producer's destructor deletes it, once); streams are
passed as handles; symbolic dims take tensors of any shape in range. What it cannot prove:
anything about real device memory, torch or CuPy.

    STITCHC=build/stitchc PYTHONPATH=<installed package> python test_stitch_cuda_paths.py -v
"""

import ctypes
import gc
import importlib.util
import unittest

import ml_dtypes
import numpy as np

import stitch
import stitch_test_support as support

_KDL_CUDA = 2

_Destructor = ctypes.CFUNCTYPE(None, ctypes.c_void_p)
_Deleter = ctypes.CFUNCTYPE(None, ctypes.c_void_p)
# Function objects of our own (indexing makes new ones), so as not to touch the package's.
_capsule_new = ctypes.pythonapi["PyCapsule_New"]
_capsule_new.restype = ctypes.py_object
_capsule_new.argtypes = [ctypes.c_void_p, ctypes.c_char_p, _Destructor]
_capsule_name = ctypes.pythonapi["PyCapsule_GetName"]
_capsule_name.restype = ctypes.c_char_p
_capsule_name.argtypes = [ctypes.c_void_p]
_capsule_pointer = ctypes.pythonapi["PyCapsule_GetPointer"]
_capsule_pointer.restype = ctypes.c_void_p
_capsule_pointer.argtypes = [ctypes.c_void_p, ctypes.c_char_p]


class FakeCudaArray:
    """A numpy array presented as a CUDA tensor through __cuda_array_interface__."""

    def __init__(self, array, strides=None, readonly=False):
        self.array = array
        self.__cuda_array_interface__ = {
            "shape": array.shape, "typestr": array.dtype.str, "version": 3,
            "data": (array.ctypes.data, readonly), "strides": strides,
        }


class FakeDLPackTensor:
    """A numpy array presented as a CUDA tensor through __dlpack__ only, as a producer does
    it: each call makes a DLManagedTensor and a capsule named "dltensor" whose destructor calls
    the DLManagedTensor's deleter unless a consumer renamed the capsule "used_dltensor"."""

    def __init__(self, array, dtype_code, bits, device_id=0):
        self.array = array
        self.dtype = (dtype_code, bits)
        self.device_id = device_id
        self.streams = []  # the stream argument of each __dlpack__ call
        self.deleted = 0  # calls of the deleter
        self.consumed = 0  # capsules released renamed
        self._managed = []  # what each capsule points into, kept alive with this object
        self._deleter = _Deleter(self._delete)
        self._destructor = _Destructor(self._destroy)

    def _delete(self, managed_address):
        self.deleted += 1

    def _destroy(self, capsule_address):
        if _capsule_name(capsule_address) == b"dltensor":
            managed = stitch._cuda.DLManagedTensor.from_address(
                _capsule_pointer(capsule_address, b"dltensor"))
            ctypes.cast(managed.deleter, _Deleter)(ctypes.addressof(managed))
        else:
            self.consumed += 1

    def __dlpack_device__(self):
        return (_KDL_CUDA, self.device_id)

    def __dlpack__(self, stream=None):
        self.streams.append(stream)
        shape = (ctypes.c_int64 * self.array.ndim)(*self.array.shape)
        managed = stitch._cuda.DLManagedTensor()
        tensor = managed.dl_tensor
        tensor.data = self.array.ctypes.data
        tensor.device.device_type, tensor.device.device_id = _KDL_CUDA, self.device_id
        tensor.ndim = self.array.ndim
        tensor.dtype.code, tensor.dtype.bits, tensor.dtype.lanes = *self.dtype, 1
        tensor.shape = shape
        managed.deleter = ctypes.cast(self._deleter, ctypes.c_void_p)
        self._managed.append((managed, shape))
        return _capsule_new(ctypes.addressof(managed), b"dltensor", self._destructor)


def device_model(name):
    """A host-target library that takes its tensors as the CUDA target does."""
    model = stitch.load(support.library(name))
    model._native.device_tensors = True
    return model


class CudaArrayInterfaceTest(unittest.TestCase):
    def setUp(self):
        self.rng = np.random.default_rng(support.SEED)
        self.model = device_model("two_in_two_out")
        self.inputs = support.random_inputs(self.model, self.rng)
        with stitch.load(support.library("two_in_two_out")) as host:
            self.expected = host.run(self.inputs)

    def tearDown(self):
        self.model.close()

    def outputs(self):
        return {o.name: FakeCudaArray(np.full(o.shape, np.nan, o.dtype))
                for o in self.model.outputs}

    def test_read_and_written_by_pointer(self):
        """Inputs are read, outputs written in place and returned as given."""
        outputs = self.outputs()
        got = self.model.run({k: FakeCudaArray(v) for k, v in self.inputs.items()}, outputs)
        for key, value in self.expected.items():
            self.assertIs(got[key], outputs[key])
            np.testing.assert_array_equal(outputs[key].array, value)

    def test_explicit_contiguous_strides_are_accepted(self):
        a = self.inputs["a"]
        inputs = {"a": FakeCudaArray(a, strides=a.strides), "b": FakeCudaArray(self.inputs["b"])}
        outputs = self.outputs()
        self.model.run(inputs, outputs)
        np.testing.assert_array_equal(outputs["prod"].array, self.expected["prod"])

    def test_refusals(self):
        """Nothing can be copied on the device: a strided, misaligned, mistyped or host tensor,
        or a read-only output, is a ValueError naming it."""
        wide = np.repeat(self.inputs["a"], 2, axis=1)
        strided = FakeCudaArray(wide[:, ::2], strides=wide[:, ::2].strides)
        raw = np.empty(self.inputs["a"].nbytes + 4, np.uint8)
        misaligned = (raw[4:] if raw.ctypes.data % 16 == 0 else raw[:-4]).view(np.float32)
        cases = [
            ({"a": strided}, r"input 'a' has strides \(16, 2\) \(elements\): it must be C-contig"),
            ({"a": FakeCudaArray(misaligned.reshape(4, 8))}, r"input 'a'.s data .* not 16-byte"),
            ({"a": FakeCudaArray(self.inputs["a"].astype(np.float16))},
             r"input 'a' has dtype <f2 but the model expects float32\[4, 8\]"),
            ({"a": self.inputs["a"]}, r"input 'a' is on DLPack device type 1, not CUDA memory"),
            ({"a": [1.0]}, r"input 'a' is a list, not a CUDA tensor"),
        ]
        for change, pattern in cases:
            inputs = {k: FakeCudaArray(v) for k, v in self.inputs.items()}
            with self.subTest(pattern=pattern), self.assertRaisesRegex(ValueError, pattern):
                self.model.run({**inputs, **change}, self.outputs())
        read_only = FakeCudaArray(np.empty(4, np.float32), readonly=True)
        with self.assertRaisesRegex(ValueError, "output 'mean' is read-only"):
            self.model.run({k: FakeCudaArray(v) for k, v in self.inputs.items()},
                           {**self.outputs(), "mean": read_only})

    @unittest.skipIf(importlib.util.find_spec("torch"), "torch is installed")
    def test_outputs_needed_without_torch(self):
        inputs = {k: FakeCudaArray(v) for k, v in self.inputs.items()}
        with self.assertRaisesRegex(ValueError, r"output 'prod' not given: .* outputs=\.\.\."):
            self.model.run(inputs)

    def test_streams(self):
        """A stream is None, an int, or an object with .cuda_stream (torch) or .ptr (CuPy)."""

        class TorchStream:
            cuda_stream = 0x1234

        class CupyStream:
            ptr = 0x5678

        inputs = {k: FakeCudaArray(v) for k, v in self.inputs.items()}
        for stream in (None, 7, TorchStream(), CupyStream()):
            outputs = self.outputs()
            self.model.run(inputs, outputs, stream=stream)
            np.testing.assert_array_equal(outputs["mean"].array, self.expected["mean"])
        with self.assertRaisesRegex(TypeError, "stream must be"):
            self.model.run(inputs, self.outputs(), stream="default")


class DLPackTest(unittest.TestCase):
    def setUp(self):
        self.rng = np.random.default_rng(support.SEED)

    def test_read_by_pointer_never_consumed(self):
        """Tensors with only __dlpack__ are read and written; each capsule is left to its
        producer, whose destructor deletes it exactly once; the stream goes to __dlpack__ (1
        for the legacy default stream)."""
        with device_model("add_relu") as model:
            inputs = support.random_inputs(model, self.rng)
            y = np.full((2, 3, 4), np.nan, np.float32)
            fakes = [FakeDLPackTensor(inputs["x"], 2, 32), FakeDLPackTensor(inputs["b"], 2, 32),
                     FakeDLPackTensor(y, 2, 32)]
            got = model.run(fakes[:2], [fakes[2]])
            model.run(fakes[:2], [fakes[2]], stream=99)
            gc.collect()
            self.assertIs(got["y"], fakes[2])
            np.testing.assert_array_equal(y, np.maximum(inputs["x"] + inputs["b"], 0))
            for fake in fakes:
                self.assertEqual((fake.streams, fake.deleted, fake.consumed), ([1, 99], 2, 0))

    def test_bfloat16(self):
        """DLPack's bfloat16 (type code 4) is the model's bfloat16."""
        with device_model("add_relu_bf16") as model:
            inputs = support.random_inputs(model, self.rng)
            y = np.zeros((3, 8), ml_dtypes.bfloat16)
            model.run([FakeDLPackTensor(inputs["x"], 4, 16), FakeDLPackTensor(inputs["b"], 4, 16)],
                      [FakeDLPackTensor(y, 4, 16)])
            expected = np.maximum(inputs["x"].astype(np.float32) + inputs["b"], 0)
            np.testing.assert_array_equal(y, expected.astype(ml_dtypes.bfloat16))

    def test_refusals(self):
        """A tensor on another device than the model's, or of another type."""
        with device_model("add_relu") as model:
            inputs = support.random_inputs(model, self.rng)
            y = FakeDLPackTensor(np.empty((2, 3, 4), np.float32), 2, 32)
            b = FakeDLPackTensor(inputs["b"], 2, 32)
            with self.assertRaisesRegex(ValueError, "input 'x' is on CUDA device 1 but the model "
                                                    "is on device 0"):
                model.run([FakeDLPackTensor(inputs["x"], 2, 32, device_id=1), b], [y])
            with self.assertRaisesRegex(ValueError, r"input 'x' has dtype DLPack type \(code 0, "
                                                    r"32 bits, 1 lanes\)"):
                model.run([FakeDLPackTensor(inputs["x"], 0, 32), b], [y])


class SymbolicDimsTest(unittest.TestCase):
    """A library of symbolic dims takes CUDA tensors of any shape in range: outputs are checked
    against the shapes the inputs give them."""

    def test_shapes_in_range(self):
        """At (3, 7), fake CUDA inputs give what the host path gives, into outputs of that
        shape; outputs sized for the maxima are refused, as is seq 17 (by the library)."""
        rng = np.random.default_rng(support.SEED)
        with device_model("gated_mlp") as model, \
                stitch.load(support.library("gated_mlp")) as host:
            inputs = support.random_inputs(model, rng, {"batch": 3, "seq": 7})
            expected = host.run(inputs)
            outputs = {k: FakeCudaArray(np.full(v.shape, np.nan, v.dtype))
                       for k, v in expected.items()}
            got = model.run({k: FakeCudaArray(v) for k, v in inputs.items()}, outputs)
            for key, value in expected.items():
                self.assertIs(got[key], outputs[key])
                np.testing.assert_array_equal(outputs[key].array, value)
            largest = {"y": FakeCudaArray(np.empty((4, 16, 16), np.float32)),
                       "gated": outputs["gated"]}
            with self.assertRaisesRegex(ValueError, r"output 'y' has shape \(4, 16, 16\) but "
                                                    r"the model expects float32\[3, 7, 16\]"):
                model.run({k: FakeCudaArray(v) for k, v in inputs.items()}, largest)
            too_long = support.random_inputs(model, rng, {"batch": 1, "seq": 17})
            with self.assertRaisesRegex(stitch.ShapeError, r"dim 1 \('seq'\) must be in 1\.\.16"):
                model.run({k: FakeCudaArray(v) for k, v in too_long.items()}, outputs)


if __name__ == "__main__":
    support.main()
