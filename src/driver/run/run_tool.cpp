// stitch-run's job, step by step: check the options, load the library and its target,
// gather inputs and expected outputs (every file is read before the model runs), ask the
// library for the outputs' shapes at the inputs' (a library with symbolic dims), run once
// and copy the outputs back, write them, compare them, and time further runs last so that
// a mismatch is reported even when timing was asked for.
#include "driver/run/run_tool.h"

#include <algorithm>
#include <cmath>
#include <memory>

#include "driver/run/model_library.h"
#include "driver/run/output_files.h"
#include "driver/run/run_error.h"
#include "driver/run/run_target.h"
#include "driver/run/symbols.h"

namespace stitch::run {

namespace {

// Each output buffer is filled with this byte before the run, so an output the library never
// writes shows up as NaN or -1 rather than as plausible leftovers.
constexpr uint8_t kUnwrittenOutputByte = 0xff;

void check_options(const RunOptions& options) {
  const Tolerance& tolerance = options.tolerance;
  if (!std::isfinite(tolerance.rtol) || tolerance.rtol < 0)
    run_fail("--rtol must be a non-negative number");
  if (!std::isfinite(tolerance.atol) || tolerance.atol < 0)
    run_fail("--atol must be a non-negative number");
  if (tolerance.max_rel_l2 && (!std::isfinite(*tolerance.max_rel_l2) || *tolerance.max_rel_l2 < 0))
    run_fail("--max-rel-l2 must be a non-negative number");
  if (options.iters < 0) run_fail("--iters must not be negative");
  if (options.warmup < 0) run_fail("--warmup must not be negative");
  if (options.force_random && !options.sources.test_data_dir.empty())
    run_fail("--random and --test-data contradict each other: --test-data gives the inputs");
}

// The model's tensors on the target at one run's shape, and the stitch_tensor records that
// describe them. The records point into `input_dims` and `output_infos`, which are filled
// first and not changed after.
struct BoundTensors {
  std::vector<std::vector<int64_t>> input_dims;
  std::vector<TensorInfo> output_infos; // at the inputs' shape
  std::vector<TargetBuffer> input_buffers;
  std::vector<TargetBuffer> output_buffers;
  std::vector<stitch_tensor> inputs;
  std::vector<stitch_tensor> outputs;
};

stitch_tensor describe_buffer(stitch_dtype dtype, const std::vector<int64_t>& dims,
                              const TargetBuffer& buffer) {
  return stitch_tensor{buffer.data(), dtype, static_cast<int32_t>(dims.size()), dims.data(),
                       buffer.bytes()};
}

// Copies the inputs to the target, asks the library for the outputs' shapes and makes their
// buffers. Returned in a unique_ptr so the records' pointers stay valid.
std::unique_ptr<BoundTensors> bind_tensors(RunTarget& target, const ModelInstance& model,
                                           const std::vector<SourcedTensor>& inputs) {
  auto bound = std::make_unique<BoundTensors>();
  for (const SourcedTensor& input : inputs)
    bound->input_dims.push_back(input.tensor.dims);
  for (size_t i = 0; i < inputs.size(); ++i) {
    const HostTensor& tensor = inputs[i].tensor;
    bound->input_buffers.emplace_back(target, tensor.bytes.size());
    target.copy_to_target(bound->input_buffers.back().data(), tensor.bytes.data(),
                          tensor.bytes.size());
    bound->inputs.push_back(
        describe_buffer(tensor.dtype, bound->input_dims[i], bound->input_buffers.back()));
  }
  bound->output_infos = model.output_shapes(bound->inputs);
  for (const TensorInfo& info : bound->output_infos) {
    bound->output_buffers.emplace_back(target, info.bytes);
    std::vector<uint8_t> unwritten(info.bytes, kUnwrittenOutputByte);
    target.copy_to_target(bound->output_buffers.back().data(), unwritten.data(), info.bytes);
    bound->outputs.push_back(describe_buffer(info.dtype, info.dims, bound->output_buffers.back()));
  }
  target.synchronize();
  return bound;
}

std::vector<HostTensor> copy_outputs_back(RunTarget& target, const BoundTensors& bound) {
  std::vector<HostTensor> outputs;
  for (size_t i = 0; i < bound.output_infos.size(); ++i) {
    const TensorInfo& info = bound.output_infos[i];
    HostTensor tensor{info.dtype, info.dims, std::vector<uint8_t>(info.bytes)};
    target.copy_to_host(tensor.bytes.data(), bound.output_buffers[i].data(), info.bytes);
    outputs.push_back(std::move(tensor));
  }
  return outputs;
}

// The value of each symbol in a run on `inputs` (empty for a model without symbols).
SymbolValues run_symbols(const ModelInstance& model, const std::vector<SourcedTensor>& inputs) {
  if (!model.is_symbolic()) return {};
  std::vector<std::optional<std::vector<int64_t>>> dims;
  std::vector<std::string> origins;
  for (const SourcedTensor& input : inputs) {
    dims.emplace_back(input.tensor.dims);
    origins.push_back(input.origin);
  }
  std::vector<std::optional<int64_t>> none(model.symbols().size());
  return choose_symbol_values(model.symbols(), none, model.inputs(), dims, origins);
}

// --shape-context: the run again in a context laid out for this shape alone, its outputs
// bitwise those of the context for the model's maxima. Prints both contexts' memory; returns
// whether the outputs agree.
bool check_shape_context(RunTarget& target, ModelInstance& model,
                         const std::vector<SourcedTensor>& inputs, const BoundTensors& bound,
                         const std::vector<HostTensor>& outputs, std::ostream& out) {
  if (!model.is_symbolic()) run_fail("--shape-context needs a library with symbolic dims");
  const SymbolValues symbols = run_symbols(model, inputs);
  const uint64_t full = model.context_memory(), own = model.context_memory(&symbols);
  out << fmt::format("  context memory: {} bytes for the symbols' maxima, {} for this shape "
                     "alone ({:.1f}%)\n",
                     full, own, full > 0 ? 100.0 * static_cast<double>(own) / full : 100.0);
  for (size_t o = 0; o < bound.outputs.size(); ++o) { // overwrite what the first run wrote
    std::vector<uint8_t> unwritten(bound.output_infos[o].bytes, kUnwrittenOutputByte);
    target.copy_to_target(bound.output_buffers[o].data(), unwritten.data(), unwritten.size());
  }
  target.synchronize();
  model.run_in_context_for(symbols, bound.inputs, bound.outputs, target.stream());
  target.synchronize();
  const std::vector<HostTensor> again = copy_outputs_back(target, bound);
  bool same = true;
  for (size_t o = 0; o < outputs.size(); ++o) {
    if (again[o].bytes == outputs[o].bytes) continue;
    same = false;
    out << fmt::format("  output {}: the context for this shape gives other bytes: MISMATCH\n",
                       display_name(model.outputs()[o].name));
  }
  if (same)
    out << fmt::format("  the context for this shape gives the same bytes ({} output{}): OK\n",
                       outputs.size(), outputs.size() == 1 ? "" : "s");
  return same;
}

// --info's tensors: the symbolic dims with their ranges, then each input and output with its
// symbolic dims named ("x: float32[batch,seq,64]").
void print_info(const ModelInstance& model, std::ostream& out) {
  for (const SymbolInfo& symbol : model.symbols())
    out << fmt::format("  symbol {} in {}..{}\n", display_name(symbol.name), symbol.min,
                       symbol.max);
  for (const TensorInfo& info : model.inputs())
    out << fmt::format("  input  {}: {}\n", display_name(info.name),
                       describe_symbolic_type(info, model.symbols()));
  std::vector<std::string> output_types = describe_output_types(model);
  for (size_t o = 0; o < model.outputs().size(); ++o)
    out << fmt::format("  output {}: {}\n", display_name(model.outputs()[o].name), output_types[o]);
}

void print_signature(const ModelLibrary& library, const RunTarget& target,
                     const ModelInstance& model, const std::vector<SourcedTensor>& inputs,
                     const std::string& binding, std::ostream& out) {
  out << fmt::format("model {} (target {}, stitch API {})\n", library.path(), target.description(),
                     library.api_version());
  if (!binding.empty()) out << fmt::format("  dims   {}\n", binding);
  for (size_t i = 0; i < inputs.size(); ++i) {
    const TensorInfo& info = model.inputs()[i];
    out << fmt::format("  input  {}: {} <- {}\n", display_name(info.name),
                       describe_tensor(inputs[i].tensor), inputs[i].origin);
  }
}

// How many outputs were compared and how many of those mismatched.
struct Verdict {
  size_t compared = 0;
  size_t mismatched = 0;
};

// Prints each output and compares those that have an expected tensor.
Verdict report_outputs(const ModelInstance& model, const std::vector<HostTensor>& outputs,
                       const std::vector<std::optional<SourcedTensor>>& expected,
                       const Tolerance& tolerance, std::ostream& out) {
  Verdict verdict;
  for (size_t i = 0; i < outputs.size(); ++i) {
    const std::string name = display_name(model.outputs()[i].name);
    out << fmt::format("  output {}: {}: {}\n", name, describe_tensor(outputs[i]),
                       summarize_values(outputs[i]));
    if (!expected[i]) continue;
    ++verdict.compared;
    Comparison comparison = compare_tensors(outputs[i], expected[i]->tensor, tolerance);
    if (!comparison.matches()) ++verdict.mismatched;
    out << fmt::format("    vs {}: {}: {}\n", expected[i]->origin,
                       describe_comparison(comparison, outputs[i]),
                       comparison.matches() ? "OK" : "MISMATCH");
  }
  return verdict;
}

void print_verdict(const Verdict& verdict, const Tolerance& tolerance, std::ostream& out) {
  std::string tolerances = tolerance.describe();
  if (verdict.compared == 0) {
    out << "no expected outputs given; nothing compared\n";
  } else if (verdict.mismatched == 0) {
    out << fmt::format("PASS: all {} compared outputs match ({})\n", verdict.compared, tolerances);
  } else {
    out << fmt::format("FAIL: {} of {} compared outputs mismatch ({})\n", verdict.mismatched,
                       verdict.compared, tolerances);
  }
}

// Times runs at the bound shape; for a library with symbolic dims the line says which
// ("timing at batch=3 seq=12: ..."), so that a script can time several shapes.
void time_runs(const RunOptions& options, RunTarget& target, ModelInstance& model,
               const BoundTensors& bound, const std::string& binding, std::ostream& out) {
  auto enqueue_run = [&] { model.run(bound.inputs, bound.outputs, target.stream()); };
  for (int i = 0; i < options.warmup; ++i)
    enqueue_run();
  target.synchronize();
  std::vector<double> latencies;
  for (int i = 0; i < options.iters; ++i)
    latencies.push_back(target.timed_run_ms(enqueue_run));
  LatencyStats stats = latency_stats(latencies);
  out << fmt::format("timing{}: {} runs after {} warmup ({}): median {:.4f} ms, p90 {:.4f} ms, "
                     "min {:.4f} ms, mean {:.4f} ms\n",
                     binding.empty() ? "" : " at " + binding, options.iters, options.warmup,
                     target.description() == "host" ? "steady_clock" : "CUDA events",
                     stats.median_ms, stats.p90_ms, stats.min_ms, stats.mean_ms);
}

int run_checked(const RunOptions& options, std::ostream& out) {
  check_options(options);
  ModelLibrary library(options.library_path, options.symbol_prefix);
  if (options.info) {
    out << fmt::format("library {} (stitch API {}, C API prefix {})\n", library.path(),
                       library.api_version(), library.symbol_prefix());
    for (const auto& [label, value] : library.build_info())
      out << fmt::format("  {:<18} {}\n", label + ":", value);
    out.flush();
  }
  std::unique_ptr<RunTarget> target =
      library.is_cuda_target() ? make_cuda_target() : make_host_target();
  ModelInstance model(library);
  if (options.info) {
    print_info(model, out);
    return kExitAllMatch;
  }
  std::vector<SourcedTensor> inputs =
      gather_inputs(model.inputs(), model.symbols(), options.sources);
  std::vector<std::optional<SourcedTensor>> expected =
      gather_expected(model.outputs(), options.sources);
  const std::string binding =
      model.is_symbolic() ? describe_binding(model.symbols(), run_symbols(model, inputs)) : "";
  print_signature(library, *target, model, inputs, binding, out);
  out.flush();

  std::unique_ptr<BoundTensors> bound = bind_tensors(*target, model, inputs);
  model.run(bound->inputs, bound->outputs, target->stream());
  target->synchronize();
  std::vector<HostTensor> outputs = copy_outputs_back(*target, *bound);

  Verdict verdict = report_outputs(model, outputs, expected, options.tolerance, out);
  if (!options.output_dir.empty()) {
    std::vector<std::string> names;
    for (const TensorInfo& info : model.outputs())
      names.push_back(info.name);
    write_outputs(options.output_dir, names, outputs, out);
  }
  print_verdict(verdict, options.tolerance, out);
  bool same_in_shape_context = true;
  if (options.shape_context)
    same_in_shape_context = check_shape_context(*target, model, inputs, *bound, outputs, out);
  bool taps_match = true;
  if (options.taps.wanted()) {
    if (model.taps().empty())
      run_fail("{}: the library has no debug taps; build it with stitchc --debug-taps",
               library.path());
    std::vector<TapValue> taps = read_taps(model);
    if (!options.taps.dir.empty()) write_taps(options.taps.dir, taps, out);
    if (!options.taps.onnx_model.empty())
      taps_match =
          compare_taps_with_onnx(options.taps, model, inputs, taps, options.tolerance, out);
  }
  out.flush();
  if (options.iters > 0) time_runs(options, *target, model, *bound, binding, out);
  return verdict.mismatched == 0 && taps_match && same_in_shape_context ? kExitAllMatch
                                                                        : kExitMismatch;
}

} // namespace

LatencyStats latency_stats(std::vector<double> latencies_ms) {
  LatencyStats stats;
  if (latencies_ms.empty()) return stats;
  std::sort(latencies_ms.begin(), latencies_ms.end());
  size_t count = latencies_ms.size();
  stats.median_ms = count % 2 == 1 ? latencies_ms[count / 2]
                                   : (latencies_ms[count / 2 - 1] + latencies_ms[count / 2]) / 2;
  size_t p90_rank = (count * 9 + 9) / 10; // ceil(0.9 * count), 1-based
  stats.p90_ms = latencies_ms[p90_rank - 1];
  stats.min_ms = latencies_ms.front();
  double sum = 0.0;
  for (double latency : latencies_ms)
    sum += latency;
  stats.mean_ms = sum / static_cast<double>(count);
  return stats;
}

int run_tool(const RunOptions& options, std::ostream& out, std::ostream& err) {
  try {
    return run_checked(options, out);
  } catch (const RunError& error) {
    out.flush();
    err << "stitch-run: error: " << error.what() << "\n";
  } catch (const std::exception& error) {
    out.flush();
    err << "stitch-run: error: " << error.what() << "\n";
  }
  return kExitError;
}

} // namespace stitch::run
