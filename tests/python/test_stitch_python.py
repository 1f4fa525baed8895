"""The stitch Python package on host-target libraries compiled by stitchc: metadata, runs
compared with ONNX Runtime (or numpy for 16-bit types) on random inputs, the checks made before
calling C, errors from C, symbol prefixes, contexts and threads, closing.

    STITCHC=build/stitchc PYTHONPATH=<installed package> python test_stitch_python.py -v
"""

import gc
import hashlib
import os
import subprocess
import sys
import threading
import unittest

import ml_dtypes
import numpy as np
import onnxruntime

import stitch
import stitch_test_support as support


def ort_outputs(name, inputs):
    session = onnxruntime.InferenceSession(support.onnx_path(name),
                                           providers=["CPUExecutionProvider"])
    names = [output.name for output in session.get_outputs()]
    return dict(zip(names, session.run(names, inputs)))


class RunTest(unittest.TestCase):
    """Runs give what ONNX Runtime (float32, int64) or numpy (16-bit floats) computes."""

    def setUp(self):
        self.rng = np.random.default_rng(support.SEED)

    def check_against_ort(self, name):
        with stitch.load(support.library(name)) as model:
            inputs = support.random_inputs(model, self.rng)
            got = model.run(inputs)
            expected = ort_outputs(name, inputs)
            self.assertEqual(list(got), [info.name for info in model.outputs])
            for key, value in expected.items():
                self.assertEqual(got[key].dtype, value.dtype, key)
                np.testing.assert_allclose(got[key], value, rtol=1e-5, atol=1e-6, err_msg=key)

    def test_add_relu_matches_onnxruntime(self):
        """A broadcast Add and a Relu, inputs by name."""
        self.check_against_ort("add_relu")

    def test_two_inputs_two_outputs_match_onnxruntime(self):
        """Several inputs and outputs, one a row reduction."""
        self.check_against_ort("two_in_two_out")

    def test_int64_matches_onnxruntime(self):
        """An int64 input and output (exact)."""
        self.check_against_ort("int64")

    def test_list_inputs_in_model_order(self):
        """Inputs as a list in model order give what the same inputs by name give."""
        with stitch.load(support.library("two_in_two_out")) as model:
            inputs = support.random_inputs(model, self.rng)
            by_name = model.run(inputs)
            by_position = model.run([inputs["a"], inputs["b"]])
            for key in by_name:
                np.testing.assert_array_equal(by_name[key], by_position[key])

    def test_float16(self):
        """float16 in and out: each result rounded once from float32, as numpy rounds it."""
        with stitch.load(support.library("add_relu_fp16")) as model:
            self.assertEqual(model.inputs[0].dtype, np.float16)
            inputs = support.random_inputs(model, self.rng)
            y = model.run(inputs)["y"]
            self.assertEqual(y.dtype, np.float16)
            expected = np.maximum(inputs["x"].astype(np.float32) + inputs["b"], 0)
            np.testing.assert_array_equal(y, expected.astype(np.float16))

    def test_bfloat16_as_ml_dtypes_and_as_uint16_bits(self):
        """bfloat16 outputs are ml_dtypes.bfloat16 arrays (ml_dtypes installed); inputs may be
        ml_dtypes arrays or their uint16 bit patterns."""
        bf16 = np.dtype(ml_dtypes.bfloat16)
        with stitch.load(support.library("add_relu_bf16")) as model:
            self.assertEqual((model.inputs[0].dtype, model.inputs[0].dtype_name),
                             (bf16, "bfloat16"))
            inputs = support.random_inputs(model, self.rng)
            y = model.run(inputs)["y"]
            self.assertEqual(y.dtype, bf16)
            expected = np.maximum(inputs["x"].astype(np.float32) + inputs["b"], 0).astype(bf16)
            np.testing.assert_array_equal(y.view(np.uint16), expected.view(np.uint16))
            bits = model.run({k: v.view(np.uint16) for k, v in inputs.items()})["y"]
            np.testing.assert_array_equal(bits.view(np.uint16), expected.view(np.uint16))

    def test_bfloat16_without_ml_dtypes(self):
        """Without ml_dtypes, bfloat16 tensors are uint16 bit patterns (a fresh interpreter
        that cannot import ml_dtypes)."""
        script = (
            "import sys; sys.modules['ml_dtypes'] = None\n"
            "import numpy as np, stitch\n"
            f"model = stitch.load({support.library('add_relu_bf16')!r})\n"
            "info = model.inputs[0]\n"
            "assert (info.dtype, info.dtype_name) == (np.uint16, 'bfloat16'), info\n"
            "one, half = np.uint16(0x3F80), np.uint16(0xBF00)\n"  # 1.0 and -0.5
            "x = np.full((3, 8), one); b = np.full(8, half)\n"
            "y = model.run({'x': x, 'b': b})['y']\n"
            "assert y.dtype == np.uint16 and (y == 0x3F00).all(), y\n"  # 0.5
        )
        subprocess.run([sys.executable, "-c", script], check=True)

    def test_strided_and_misaligned_inputs_are_copied(self):
        """A non-contiguous view and an array off the library's 16-byte alignment give the
        same results as contiguous copies."""
        with stitch.load(support.library("add_relu")) as model:
            inputs = support.random_inputs(model, self.rng)
            expected = model.run(inputs)["y"]
            wide = np.empty((2, 3, 8), np.float32)
            wide[:, :, ::2] = inputs["x"]
            strided = wide[:, :, ::2]
            raw = np.empty(inputs["b"].nbytes + 4, np.uint8)
            misaligned = raw[4:] if raw.ctypes.data % 16 == 0 else raw[:-4]
            misaligned = misaligned.view(np.float32)
            misaligned[...] = inputs["b"]
            self.assertFalse(strided.flags.c_contiguous)
            self.assertNotEqual(misaligned.ctypes.data % 16, 0)
            got = model.run({"x": strided, "b": misaligned})["y"]
            np.testing.assert_array_equal(got, expected)

    def test_run_without_the_context_graph(self):
        """graph=False (STITCH_RUN_NO_GRAPH) computes what a run through the context's graph
        computes, bitwise."""
        with stitch.load(support.library("two_in_two_out")) as model:
            inputs = support.random_inputs(model, self.rng)
            through_graph = model.run(inputs)
            direct = model.run(inputs, graph=False)
            for key in through_graph:
                np.testing.assert_array_equal(direct[key], through_graph[key], err_msg=key)

    def test_outputs_written_in_place(self):
        """Given output arrays are written and returned; outputs not named are made."""
        with stitch.load(support.library("two_in_two_out")) as model:
            inputs = support.random_inputs(model, self.rng)
            expected = model.run(inputs)
            prod = np.full((4, 8), np.nan, np.float32)
            got = model.run(inputs, outputs={"prod": prod})
            self.assertIs(got["prod"], prod)
            np.testing.assert_array_equal(prod, expected["prod"])
            np.testing.assert_array_equal(got["mean"], expected["mean"])

    def test_host_dlpack_objects_are_read(self):
        """An object with only __dlpack__ in host memory (numpy's own, wrapped) is an input."""

        class HostDLPack:
            def __init__(self, array):
                self.array = array

            def __dlpack__(self, **kwargs):
                return self.array.__dlpack__(**kwargs)

            def __dlpack_device__(self):
                return self.array.__dlpack_device__()

        with stitch.load(support.library("add_relu")) as model:
            inputs = support.random_inputs(model, self.rng)
            got = model.run({k: HostDLPack(v) for k, v in inputs.items()})["y"]
            np.testing.assert_array_equal(got, model.run(inputs)["y"])

    def test_fresh_inputs_give_fresh_results(self):
        """A second run on the same context computes from its own inputs."""
        with stitch.load(support.library("add_relu")) as model:
            first = support.random_inputs(model, self.rng)
            second = support.random_inputs(model, self.rng)
            model.run(first)
            got = model.run(second)["y"]
            np.testing.assert_allclose(got, ort_outputs("add_relu", second)["y"], rtol=1e-6)


class MetadataTest(unittest.TestCase):
    """What a loaded model says about itself."""

    def test_inputs_outputs(self):
        """Names, numpy dtypes, shapes and byte sizes, in model order."""
        with stitch.load(support.library("int64")) as model:
            self.assertEqual(
                [(i.name, i.dtype, i.shape, i.nbytes, i.dtype_name) for i in model.inputs],
                [("ids", np.int64, (2, 5), 80, "int64"), ("x", np.float32, (2, 5), 40, "float32")])
            self.assertEqual([(o.name, o.shape) for o in model.outputs],
                             [("y", (2, 5)), ("sq", (2, 5))])

    def test_target_version_device(self):
        with stitch.load(support.library("add_relu")) as model:
            self.assertEqual(model.target, "host")
            self.assertGreaterEqual(model.api_version, 3)
            self.assertEqual(model.device, 0)
            self.assertEqual(model.symbol_prefix, "stitch")

    def test_build_info(self):
        """stitch_library_build_info as a dict: the model file's name and SHA-256, the target,
        the planner, the precision and the prefix."""
        with stitch.load(support.library("add_relu")) as model:
            info = model.build_info
            with open(support.onnx_path("add_relu"), "rb") as file:
                sha256 = hashlib.sha256(file.read()).hexdigest()
            self.assertEqual(info["model_sha256"], sha256)
            self.assertEqual(info["model_file"], "add_relu.onnx")
            self.assertEqual((info["target"], info["archs"]), ("host", ""))
            self.assertEqual((info["planner"], info["precision"]), ("ilp", "fp32"))
            self.assertEqual(info["symbol_prefix"], "stitch")
            self.assertIn("--target host", info["flags"])
            self.assertRegex(info["stitchc_version"], r"^\d+\.\d+\.\d+")


class ErrorTest(unittest.TestCase):
    """Mistakes are reported before any C call, naming the tensor; the library's own
    refusals raise stitch.Error."""

    @classmethod
    def setUpClass(cls):
        cls.model = stitch.load(support.library("two_in_two_out"))
        cls.inputs = support.random_inputs(cls.model, np.random.default_rng(support.SEED))

    @classmethod
    def tearDownClass(cls):
        cls.model.close()

    def assert_value_error(self, pattern, inputs, outputs=None):
        with self.assertRaisesRegex(ValueError, pattern):
            self.model.run(inputs, outputs)

    def test_unknown_and_missing_names(self):
        self.assert_value_error(r"unknown input 'c'.*the model's inputs: \['a', 'b'\]",
                                {**self.inputs, "c": self.inputs["a"]})
        self.assert_value_error(r"missing input 'b'", {"a": self.inputs["a"]})
        self.assert_value_error(r"unknown output 'sum'", self.inputs,
                                {"sum": np.empty((4, 8), np.float32)})
        self.assert_value_error(r"1 inputs given but the model has 2", [self.inputs["a"]])

    def test_wrong_shape(self):
        self.assert_value_error(r"input 'b' has shape \(8, 4\) but the model expects "
                                r"float32\[4, 8\]", {**self.inputs, "b": self.inputs["b"].T.copy()})

    def test_wrong_dtype(self):
        """No silent conversion: float64 and big-endian float32 are refused."""
        self.assert_value_error(r"input 'a' has dtype float64 but the model expects float32",
                                {**self.inputs, "a": self.inputs["a"].astype(np.float64)})
        self.assert_value_error(r"input 'a' has dtype >f4",
                                {**self.inputs, "a": self.inputs["a"].astype(">f4")})

    def test_unusable_outputs(self):
        """An output array that cannot be written in place as it is."""
        self.assert_value_error(r"output 'mean' has dtype float64",
                                self.inputs, {"mean": np.empty(4, np.float64)})
        read_only = np.empty(4, np.float32)
        read_only.flags.writeable = False
        self.assert_value_error(r"output 'mean' is read-only", self.inputs, {"mean": read_only})
        self.assert_value_error(r"output 'mean' must be C-contiguous",
                                self.inputs, {"mean": np.empty(8, np.float32)[::2]})

    def test_cuda_memory_refused_by_host_library(self):
        """An object claiming CUDA memory is not read as host memory."""

        class FakeCuda:
            __cuda_array_interface__ = {"shape": (4, 8), "typestr": "<f4", "data": (0, False),
                                        "version": 3}

        self.assert_value_error(r"input 'a' is CUDA memory .* built for the host target",
                                {**self.inputs, "a": FakeCuda()})

    def test_error_from_the_library(self):
        """An output overlapping an input passes every Python check; the library refuses it,
        and stitch.Error carries its status name and stitch_last_error()'s message."""
        a = self.inputs["a"].copy()
        with self.assertRaises(stitch.Error) as caught:
            self.model.run({"a": a, "b": self.inputs["b"]}, {"prod": a})
        error = caught.exception
        self.assertEqual((error.status, error.status_name), (1, "STITCH_ERROR_INVALID_ARGUMENT"))
        self.assertIn("overlaps input 0", error.message)
        self.assertTrue(str(error).startswith("STITCH_ERROR_INVALID_ARGUMENT: "))

    def test_bad_libraries(self):
        with self.assertRaises(OSError):
            stitch.load(os.path.join(support.work_dir(), "no_such_library.so"))
        with self.assertRaisesRegex(ValueError, "not a C identifier"):
            stitch.load(support.library("add_relu"), symbol_prefix="2x")
        with self.assertRaisesRegex(OSError, "exports no other_model_create"):
            stitch.load(support.library("add_relu"), symbol_prefix="other")


class SymbolPrefixTest(unittest.TestCase):
    """Libraries built with --symbol-prefix, and several libraries in one process."""

    def test_prefixed_library(self):
        """symbol_prefix selects <prefix>_run & co.; the default names what to pass."""
        path = support.library("add_relu", symbol_prefix="addrelu")
        with self.assertRaisesRegex(OSError, r"symbol_prefix='addrelu'"):
            stitch.load(path)
        rng = np.random.default_rng(support.SEED)
        with stitch.load(path, symbol_prefix="addrelu") as model:
            self.assertEqual(model.build_info["symbol_prefix"], "addrelu")
            inputs = support.random_inputs(model, rng)
            np.testing.assert_allclose(model.run(inputs)["y"], ort_outputs("add_relu", inputs)["y"],
                                       rtol=1e-6)
            # The library's errors name its functions as it exports them.
            with self.assertRaises(stitch.Error) as caught:
                model.run(inputs, {"y": inputs["x"]})
            self.assertRegex(caught.exception.message, r"^addrelu_run\w*: ")
            self.assertIn("overlaps input 0", caught.exception.message)

    def test_two_unprefixed_libraries(self):
        """Two libraries exporting the same stitch_* names each run their own model (ctypes
        loads them RTLD_LOCAL)."""
        rng = np.random.default_rng(support.SEED)
        with stitch.load(support.library("add_relu")) as first, \
                stitch.load(support.library("two_in_two_out")) as second:
            for model, name in ((first, "add_relu"), (second, "two_in_two_out")):
                inputs = support.random_inputs(model, rng)
                for key, value in ort_outputs(name, inputs).items():
                    np.testing.assert_allclose(model.run(inputs)[key], value, rtol=1e-5,
                                               atol=1e-6)


class ContextTest(unittest.TestCase):
    """Contexts: one per thread, held ones, and what closing destroys, in which order."""

    def record_destroys(self, model):
        """Wraps the model's destroy functions to record their calls, in order."""
        calls = []
        api = model._native.api
        for name in ("context_destroy", "model_destroy"):
            function = getattr(api, name)
            setattr(api, name, lambda pointer, f=function, n=name: calls.append(n) or f(pointer))
        return calls

    def test_threads_equal_serial_runs(self):
        """Four threads, each running through its own context, get bitwise what one thread
        gets, and each context is destroyed with its thread."""
        rng = np.random.default_rng(support.SEED)
        with stitch.load(support.library("two_in_two_out")) as model:
            cases = [support.random_inputs(model, rng) for _ in range(8)]
            serial = [model.run(inputs) for inputs in cases]
            live_before = len(model._native.contexts)
            failures = []

            def worker(offset):
                try:
                    for round_ in range(25):
                        index = (offset + round_) % len(cases)
                        got = model.run(cases[index])
                        for key, value in serial[index].items():
                            np.testing.assert_array_equal(got[key], value)
                except Exception as error:  # reported by the main thread
                    failures.append(error)

            threads = [threading.Thread(target=worker, args=(i,)) for i in range(4)]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
            self.assertEqual(failures, [])
            gc.collect()
            self.assertEqual(len(model._native.contexts), live_before)

    def test_held_contexts(self):
        """Two contexts of one model give equal results; closing one leaves the other."""
        rng = np.random.default_rng(support.SEED)
        with stitch.load(support.library("add_relu")) as model:
            inputs = support.random_inputs(model, rng)
            with model.context() as first, model.context() as second:
                np.testing.assert_array_equal(first.run(inputs)["y"], second.run(inputs)["y"])
                first.close()
                with self.assertRaisesRegex(ValueError, "closed"):
                    first.run(inputs)
                second.run(inputs)
            self.assertTrue(second.closed)

    def test_close_destroys_contexts_then_model(self):
        """close() destroys the thread's and the held contexts before the model, once;
        later runs and contexts raise ValueError."""
        model = stitch.load(support.library("add_relu"))
        inputs = support.random_inputs(model, np.random.default_rng(support.SEED))
        model.run(inputs)
        held = model.context()
        calls = self.record_destroys(model)
        model.close()
        model.close()
        self.assertEqual(calls, ["context_destroy", "context_destroy", "model_destroy"])
        self.assertTrue(model.closed and held.closed)
        with self.assertRaisesRegex(ValueError, "closed"):
            model.run(inputs)
        with self.assertRaisesRegex(ValueError, "closed"):
            held.run(inputs)
        with self.assertRaisesRegex(ValueError, "closed"):
            model.context()
        held.close()
        self.assertEqual(len(calls), 3)

    def test_close_while_threads_run(self):
        """close() during other threads' runs: each run completes or raises ValueError
        (closed); every context is destroyed, before the model."""
        model = stitch.load(support.library("two_in_two_out"))
        inputs = support.random_inputs(model, np.random.default_rng(support.SEED))
        calls = self.record_destroys(model)
        started = threading.Barrier(5)
        stop = threading.Event()  # ends the workers should close() fail
        errors = []

        def worker():
            started.wait()
            try:
                while not stop.is_set():
                    model.run(inputs)
            except Exception as error:  # checked by the main thread
                errors.append(error)

        threads = [threading.Thread(target=worker) for _ in range(4)]
        for thread in threads:
            thread.start()
        try:
            started.wait()
            model.run(inputs)
            model.close()
        finally:
            stop.set()
            for thread in threads:
                thread.join()
        self.assertTrue(all(isinstance(e, ValueError) and "closed" in str(e) for e in errors),
                        errors)
        self.assertEqual(calls[-1], "model_destroy")
        self.assertEqual(calls.count("model_destroy"), 1)
        self.assertEqual(len(model._native.contexts), 0)

    def test_garbage_collection_destroys(self):
        """A model dropped without close() is destroyed after its contexts; a held context
        keeps it alive until it goes too."""
        model = stitch.load(support.library("add_relu"))
        model.run(support.random_inputs(model, np.random.default_rng(support.SEED)))
        held = model.context()
        calls = self.record_destroys(model)
        del model
        gc.collect()
        self.assertEqual(calls, ["context_destroy"])  # the thread's context, with the Model
        del held
        gc.collect()
        self.assertEqual(calls, ["context_destroy", "context_destroy", "model_destroy"])


if __name__ == "__main__":
    support.main()
