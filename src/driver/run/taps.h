// Debug taps after a run of a library built with `stitchc --debug-taps`: every tensor each
// fusion group wrote, read back in the order the groups ran. stitch-run writes them as .npy
// files with a manifest (--taps-dir), and compares them with ONNX Runtime's values of the same
// tensors on the same inputs (--taps-onnx): the first group whose tensor differs is the first
// wrong group, since everything before it was right. The reference runs in a Python with
// numpy, onnx and onnxruntime (--python), through a script embedded in stitch-run
// (ort_reference.py); nothing else in stitchc or its libraries needs Python.
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "driver/run/compare.h"
#include "driver/run/host_tensor.h"
#include "driver/run/model_library.h"
#include "driver/run/tensor_sources.h"

namespace stitch::run {

struct TapOptions {
  std::string dir;        // --taps-dir: write the taps (and the reference's files) here
  std::string onnx_model; // --taps-onnx: compare with ONNX Runtime's values on this model
  std::string python;     // --python: runs the reference; "" means $STITCH_PYTHON or python3

  bool wanted() const { return !dir.empty() || !onnx_model.empty(); }
};

struct TapValue {
  TapInfo info;
  HostTensor value;
};

// Every tap of the model's last run, in order.
std::vector<TapValue> read_taps(ModelInstance& model);

// Writes DIR/tap_NNN.npy for each tap and DIR/taps.json describing them.
void write_taps(const std::string& dir, const std::vector<TapValue>& taps, std::ostream& out);

// Runs the ONNX Runtime reference on `inputs` (in the model's input order), compares each tap
// with its tensor's reference value, prints one line per tap and names the first group that
// differs. Returns true when every tap with a reference matches.
bool compare_taps_with_onnx(const TapOptions& options, const ModelInstance& model,
                            const std::vector<SourcedTensor>& inputs,
                            const std::vector<TapValue>& taps, const Tolerance& tolerance,
                            std::ostream& out);

// The reference script stitch-run embeds (ort_reference.py).
extern const char* const kOrtReferenceScript;

} // namespace stitch::run
