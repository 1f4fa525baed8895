"""The stitch Python package on a library of symbolic dims (stitchc --dim NAME=MIN..MAX, API
version 4), compiled once from gated_mlp (x, g [batch,seq,8] -> y [batch,seq,16], gated
[batch,seq,8]; batch in 1..4, seq in 1..16): its symbols and infos, runs at several shapes of
one library compared with ONNX Runtime, the outputs' shapes for given inputs, the errors for
dims out of range, inputs disagreeing on a symbol and wrong fixed dims; and that libraries of
fixed shapes, and of API versions before 4, have no symbols and run as before.

    STITCHC=build/stitchc PYTHONPATH=<installed package> python test_stitch_symbols.py -v
"""

import ctypes
import re
import threading
import unittest
from unittest import mock

import numpy as np
import onnxruntime

import stitch
import stitch_test_support as support

# (batch, seq): the minima, a shape of neither powers of two nor the planned seq 5, the maxima,
# the planned shape; then the minima again, after the maxima, on the same context.
SHAPES = [(1, 1), (3, 7), (4, 16), (2, 5), (1, 1)]


def ort_outputs(inputs):
    session = onnxruntime.InferenceSession(support.onnx_path("gated_mlp"),
                                           providers=["CPUExecutionProvider"])
    names = [output.name for output in session.get_outputs()]
    return dict(zip(names, session.run(names, inputs)))


class SymbolicTest(unittest.TestCase):
    """One library serves every shape in range."""

    @classmethod
    def setUpClass(cls):
        cls.model = stitch.load(support.library("gated_mlp"))

    @classmethod
    def tearDownClass(cls):
        cls.model.close()

    def setUp(self):
        self.rng = np.random.default_rng(support.SEED)

    def inputs(self, batch, seq):
        return support.random_inputs(self.model, self.rng, {"batch": batch, "seq": seq})

    def test_symbols_and_infos(self):
        """The symbols with their ranges; symbolic dims are None in shapes, named by their
        symbols (outputs' too); byte sizes are the maxima's."""
        self.assertGreaterEqual(self.model.api_version, 4)
        self.assertEqual(self.model.symbols, {"batch": stitch.Symbol("batch", 1, 4),
                                              "seq": stitch.Symbol("seq", 1, 16)})
        infos = self.model.inputs + self.model.outputs
        self.assertEqual([(i.name, i.shape, i.symbols, i.nbytes) for i in infos], [
            ("x", (None, None, 8), ("batch", "seq", None), 4 * 16 * 8 * 4),
            ("g", (None, None, 8), ("batch", "seq", None), 4 * 16 * 8 * 4),
            ("y", (None, None, 16), ("batch", "seq", None), 4 * 16 * 16 * 4),
            ("gated", (None, None, 8), ("batch", "seq", None), 4 * 16 * 8 * 4)])
        self.assertTrue(all(info.symbolic for info in infos))
        self.assertEqual(self.model.outputs[0].describe(), "float32[batch, seq, 16]")

    def test_runs_at_every_shape_match_onnxruntime(self):
        """Each shape runs, on one context, into outputs of the inputs' shape, as ONNX
        Runtime computes them."""
        for batch, seq in SHAPES:
            with self.subTest(batch=batch, seq=seq):
                inputs = self.inputs(batch, seq)
                got = self.model.run(inputs)
                self.assertEqual({k: v.shape for k, v in got.items()},
                                 {"y": (batch, seq, 16), "gated": (batch, seq, 8)})
                for key, value in ort_outputs(inputs).items():
                    np.testing.assert_allclose(got[key], value, rtol=1e-4, atol=1e-5,
                                               err_msg=key)

    def test_held_context_and_outputs_in_place(self):
        """A held context runs shapes in any order; outputs given at the run's shape are
        written in place, the others made; results equal the thread's context's bitwise."""
        with self.model.context() as context:
            for batch, seq in reversed(SHAPES):
                inputs = self.inputs(batch, seq)
                y = np.full((batch, seq, 16), np.nan, np.float32)
                got = context.run([inputs["x"], inputs["g"]], {"y": y})
                self.assertIs(got["y"], y)
                expected = self.model.run(inputs)
                for key, value in expected.items():
                    np.testing.assert_array_equal(got[key], value, err_msg=key)

    def test_threads_at_different_shapes(self):
        """Threads running different shapes at once, each on its own context, get bitwise what
        serial runs get."""
        cases = [self.inputs(batch, seq) for batch, seq in SHAPES]
        serial = [self.model.run(inputs) for inputs in cases]
        failures = []

        def worker(offset):
            try:
                for round_ in range(10):
                    index = (offset + round_) % len(cases)
                    for key, value in self.model.run(cases[index]).items():
                        np.testing.assert_array_equal(value, serial[index][key])
            except Exception as error:  # reported by the main thread
                failures.append(error)

        threads = [threading.Thread(target=worker, args=(i,)) for i in range(3)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        self.assertEqual(failures, [])

    def test_output_shapes(self):
        """The outputs' shapes for given inputs' shapes, or for the arrays themselves."""
        self.assertEqual(self.model.output_shapes({"x": (3, 7, 8), "g": (3, 7, 8)}),
                         {"y": (3, 7, 16), "gated": (3, 7, 8)})
        inputs = self.inputs(4, 16)
        self.assertEqual(self.model.output_shapes([inputs["x"], inputs["g"]]),
                         {"y": (4, 16, 16), "gated": (4, 16, 8)})

    def assert_shape_error(self, pattern, inputs):
        """Both the run and output_shapes raise stitch.ShapeError (a stitch.Error and a
        ValueError) with the library's message."""
        for call in (self.model.run, self.model.output_shapes):
            with self.subTest(call=call.__name__):
                with self.assertRaisesRegex(stitch.ShapeError, pattern) as caught:
                    call(inputs)
                error = caught.exception
                self.assertIsInstance(error, stitch.Error)
                self.assertIsInstance(error, ValueError)
                self.assertEqual(error.status_name, "STITCH_ERROR_SHAPE_MISMATCH")
                self.assertRegex(error.message, pattern)

    def test_dim_out_of_range(self):
        """seq 17 and batch 0 lie outside the ranges; the message names the input, the dim,
        the symbol and its range."""
        self.assert_shape_error(r"input 0 \('x'\).*dim 1 \('seq'\) must be in 1\.\.16",
                                self.inputs(2, 17))
        self.assert_shape_error(r"input 0 \('x'\).*dim 0 \('batch'\) must be in 1\.\.4",
                                self.inputs(0, 3))

    def test_inputs_disagreeing_on_a_symbol(self):
        """x at seq 5 and g at seq 6: one run gives each symbol one value."""
        inputs = {"x": self.inputs(2, 5)["x"], "g": self.inputs(2, 6)["g"]}
        self.assert_shape_error(r"input 1 \('g'\).*'seq' is 6.*input 0 \('x'\)", inputs)

    def test_wrong_fixed_dim_or_rank(self):
        """A fixed dim or a rank the model does not have is refused before the library is
        called, naming the tensor and the symbolic type it must have."""
        inputs = self.inputs(2, 5)
        for x in (np.zeros((2, 5, 9), np.float32), np.zeros((2, 5), np.float32)):
            for call in (self.model.run, self.model.output_shapes):
                with self.subTest(shape=x.shape, call=call.__name__):
                    pattern = (rf"input 'x' has shape {re.escape(repr(x.shape))} but the "
                               r"model expects float32\[batch, seq, 8\]")
                    with self.assertRaisesRegex(ValueError, pattern):
                        call({**inputs, "x": x})

    def test_output_of_another_shape(self):
        """An output sized for the maxima is not one of a smaller run's."""
        with self.assertRaisesRegex(ValueError, r"output 'y' has shape \(4, 16, 16\) but the "
                                                r"model expects float32\[3, 7, 16\]"):
            self.model.run(self.inputs(3, 7), {"y": np.empty((4, 16, 16), np.float32)})

    def test_context_for_part_of_the_range(self):
        """A context for batch <= 2 and seq <= 5 (API version 5) needs no more memory than one
        for the maxima (gated_mlp keeps every intermediate on chip: no arena), runs every shape
        up to them bitwise as the thread's context does, and refuses a larger one; max_dims
        must name every symbol within its range."""
        small = {"batch": 2, "seq": 5}
        self.assertLessEqual(self.model.context_memory(small), self.model.context_memory())
        self.assertEqual(self.model.context_memory({"batch": 4, "seq": 16}),
                         self.model.context_memory())
        with self.model.context(max_dims=small) as context:
            for batch, seq in [(2, 5), (1, 1), (1, 4)]:
                inputs = self.inputs(batch, seq)
                got = context.run(inputs)
                for key, value in self.model.run(inputs).items():
                    np.testing.assert_array_equal(got[key], value, err_msg=key)
            with self.assertRaisesRegex(stitch.ShapeError,
                                        r"'seq' 7, above 5, the most this context serves"):
                context.run(self.inputs(1, 7))
        with self.assertRaisesRegex(ValueError, r"missing: \['seq'\]"):
            self.model.context(max_dims={"batch": 2})
        with self.assertRaisesRegex(stitch.Error, r"max_symbols\[1\] \('seq'\) is 17, outside "
                                                  r"its range 1\.\.16"):
            self.model.context_memory({"batch": 2, "seq": 17})


class FixedShapesTest(unittest.TestCase):
    """Libraries without symbolic dims."""

    def test_fixed_library_has_no_symbols(self):
        """Every dim fixed and unnamed; output_shapes gives the compiled shapes."""
        with stitch.load(support.library("two_in_two_out")) as model:
            self.assertEqual(model.symbols, {})
            self.assertEqual([(i.shape, i.symbols) for i in model.inputs],
                             [((4, 8), (None, None)), ((4, 8), (None, None))])
            self.assertFalse(any(info.symbolic for info in model.inputs + model.outputs))
            self.assertEqual(model.output_shapes({"a": (4, 8), "b": (4, 8)}),
                             {"prod": (4, 8), "mean": (4,)})
            with self.assertRaisesRegex(ValueError, r"input 'b' has shape \(4, 9\)"):
                model.output_shapes({"a": (4, 8), "b": (4, 9)})

    def test_library_before_api_version_4(self):
        """A library without the API version 4 functions (hidden here) loads with no symbols,
        answers output_shapes and runs."""
        version_4 = {f"stitch_{name}" for name in ("model_num_symbols", "model_symbol",
                                                   "model_input_symbols", "model_output_shapes")}

        class Api3Library:
            """A loaded library seen without its API version 4 functions."""

            def __init__(self, path):
                self.library = load_library(path)

            def __getattr__(self, name):
                if name in version_4:
                    raise AttributeError(name)
                return getattr(self.library, name)

        load_library = ctypes.CDLL
        with mock.patch.object(ctypes, "CDLL", Api3Library):
            model = stitch.load(support.library("add_relu"))
        with model:
            self.assertIsNone(model._native.api.model_output_shapes)
            self.assertEqual(model.symbols, {})
            self.assertEqual(model.output_shapes([(2, 3, 4), (4,)]), {"y": (2, 3, 4)})
            inputs = support.random_inputs(model, np.random.default_rng(support.SEED))
            np.testing.assert_array_equal(model.run(inputs)["y"],
                                          np.maximum(inputs["x"] + inputs["b"], 0))


if __name__ == "__main__":
    support.main()
