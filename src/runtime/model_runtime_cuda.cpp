// model_runtime_cuda.cpp: the CUDA target's launcher, which runs each context's work as one
// CUDA Graph.
//
// Capture. The first run of a context captures the generated enqueue into a CUDA Graph on a
// stream the context owns (non-blocking; cudaStreamCaptureModeThreadLocal, so a call the enqueue
// must not make during capture fails here, without disturbing other threads' captures),
// instantiates it, and launches the executable graph on the caller's stream. Capturing executes
// nothing, so capturing on the context's stream and launching on the caller's puts the work
// exactly where enqueueing it directly would: behind the caller's earlier work on that stream.
//
// Shapes. A model with symbolic dims keeps one executable graph per shape (the symbols' values)
// it ran at, at most State::kMaxGraphs; a new shape past them takes the least recently used
// one's slot, its executable graph updated in place where CUDA allows. Each is captured,
// replayed and updated as below.
//
// Replay. A run with the input and output pointers the graph was captured for launches it again
// (cudaGraphLaunch, one call however many kernels the model has). A run with other pointers
// captures again and updates the executable graph in place (cudaGraphExecUpdate); when the
// update is refused (the topology changed, say a library chose another algorithm for the new
// pointers' alignment), the new graph is instantiated and replaces the old one.
//
// The legacy default stream. A capture cannot begin on the NULL stream (or cudaStreamLegacy),
// but an executable graph can be launched on it like on any stream. Since capture always uses
// the context's own stream, NULL needs no special path: the graph is launched on the legacy
// stream, with that stream's usual implicit synchronization with other blocking streams.
// cudaStreamPerThread is an ordinary stream here too.
//
// Ordering between runs. Every run of a context reuses its arena, so its runs must not overlap
// even when the caller changes streams between them. CUDA serializes the launches of one
// executable graph; besides, each run first waits for the context's `finished` event and records
// it after its launch. That also orders a freshly instantiated graph behind its predecessor, and
// lets stitch_context_destroy wait for exactly the context's last run before freeing the arena.
//
// Pointer checks. Before capturing for new pointers, each of the caller's buffers is checked
// with cudaPointerGetAttributes: device memory of the model's device, managed memory, or
// page-locked host memory mapped at the same address. Anything else (plain host memory) would
// fault on the device and leave the CUDA context unusable, so it is an argument error instead.
// Replays, which reuse checked pointers, skip this.
//
// Limitation: the caller's stream must not itself be under stream capture during stitch_run
// (the event wait refers to work outside that capture); CUDA reports such a call, as
// STITCH_ERROR_CUDA.
#include "model_runtime.h"

#if defined(STITCH_HOST_TARGET)
#error "model_runtime_cuda.cpp is the CUDA target's launcher; build it without STITCH_HOST_TARGET"
#endif

#include <algorithm>
#include <cstdio>

namespace stitch::runtime {

const char* const kRuntimeTarget = "cuda";

int current_device() {
  int device = 0;
  check_cuda(cudaGetDevice(&device), "cudaGetDevice");
  return device;
}

DeviceScope::DeviceScope(int device) {
  const int current = current_device();
  if (current == device) return;
  check_cuda(cudaSetDevice(device), "cudaSetDevice(" + std::to_string(device) + ")");
  previous_ = current;
}

DeviceScope::~DeviceScope() {
  if (previous_ >= 0) (void)cudaSetDevice(previous_);
}

namespace {

// A captured graph, destroyed when it has been instantiated or updated from.
class CapturedGraph {
public:
  CapturedGraph() = default;
  CapturedGraph(const CapturedGraph&) = delete;
  CapturedGraph& operator=(const CapturedGraph&) = delete;
  ~CapturedGraph() {
    if (graph_ != nullptr) (void)cudaGraphDestroy(graph_);
  }
  cudaGraph_t* out() { return &graph_; }
  cudaGraph_t get() const { return graph_; }

private:
  cudaGraph_t graph_ = nullptr;
};

std::string describe_buffer(const char* kind, int32_t index, const stitch_abi_tensor& tensor,
                            const void* data) {
  char pointer[32];
  std::snprintf(pointer, sizeof(pointer), "%p", data);
  return std::string(kind) + " " + std::to_string(index) + " ('" + tensor.name + "') at " + pointer;
}

// Throws STITCH_ERROR_INVALID_ARGUMENT unless the device of `model` can read and write `data`.
void check_buffer_location(const Model& model, const char* kind, int32_t index,
                           const stitch_abi_tensor& tensor, void* data) {
  if (data == nullptr || tensor.bytes == 0) return;
  const std::string label = describe_buffer(kind, index, tensor, data);
  cudaPointerAttributes attributes{};
  check_cuda(cudaPointerGetAttributes(&attributes, data), "cudaPointerGetAttributes for " + label);
  switch (attributes.type) {
  case cudaMemoryTypeDevice:
    if (attributes.device != model.device)
      fail(STITCH_ERROR_INVALID_ARGUMENT,
           label + " is memory of device " + std::to_string(attributes.device) +
               " but the model lives on device " + std::to_string(model.device));
    return;
  case cudaMemoryTypeManaged:
    return;
  case cudaMemoryTypeHost:
    if (attributes.devicePointer != data)
      fail(STITCH_ERROR_INVALID_ARGUMENT,
           label + " is page-locked host memory that the device sees at another address; pass "
                   "the device pointer (cudaHostGetDevicePointer)");
    return;
  default:
    fail(STITCH_ERROR_INVALID_ARGUMENT,
         label + " is not device memory (host memory unknown to CUDA); the CUDA target reads "
                 "and writes tensors on the device");
  }
}

} // namespace

// One executable graph: the shape (symbol values) and the pointers it was captured for.
struct ShapeGraph {
  std::vector<int64_t> shape;      // the symbols' values; empty for a model of fixed shapes
  cudaGraphExec_t exec = nullptr;  // null until captured
  std::vector<void*> captured_for; // the inputs, then the outputs, `exec` was captured with
  uint64_t last_used = 0;
};

struct Launcher::State {
  // A model with symbolic dims keeps one graph per shape it ran at, the least recently used
  // replaced past this many (a graph holds no memory of its own: every shape runs in the
  // context's arena, sized for the maxima).
  static constexpr std::size_t kMaxGraphs = 8;

  cudaStream_t capture_stream = nullptr;
  cudaEvent_t finished = nullptr; // recorded after every run's launch
  std::vector<ShapeGraph> graphs;
  uint64_t runs = 0;

  ~State() {
    for (ShapeGraph& graph : graphs)
      if (graph.exec != nullptr) (void)cudaGraphExecDestroy(graph.exec);
    if (finished != nullptr) (void)cudaEventDestroy(finished);
    if (capture_stream != nullptr) (void)cudaStreamDestroy(capture_stream);
  }

  // The graph captured at this run's shape, or null.
  ShapeGraph* find(const Model& model, const stitch_abi_buffers& buffers) {
    const auto num_symbols = static_cast<std::size_t>(model.abi->num_symbols);
    for (ShapeGraph& graph : graphs)
      if (num_symbols == 0 || (graph.shape.size() == num_symbols &&
                               std::equal(graph.shape.begin(), graph.shape.end(), buffers.symbols)))
        return &graph;
    return nullptr;
  }

  // Where a new shape's graph goes: a free slot, else the least recently used one, whose
  // executable graph install() then updates in place where CUDA allows (one model's graphs
  // differ between shapes in kernel parameters and grids, rarely in topology).
  ShapeGraph& slot_for_new_shape() {
    if (graphs.size() < kMaxGraphs) return graphs.emplace_back();
    return *std::min_element(
        graphs.begin(), graphs.end(),
        [](const ShapeGraph& a, const ShapeGraph& b) { return a.last_used < b.last_used; });
  }

  static bool captured_for_pointers(const Model& model, const ShapeGraph& graph,
                                    const stitch_abi_buffers& buffers) {
    const auto num_inputs = static_cast<std::size_t>(model.abi->num_inputs);
    const auto num_outputs = static_cast<std::size_t>(model.abi->num_outputs);
    if (graph.exec == nullptr || graph.captured_for.size() != num_inputs + num_outputs)
      return false;
    return std::equal(buffers.inputs, buffers.inputs + num_inputs, graph.captured_for.begin()) &&
           std::equal(buffers.outputs, buffers.outputs + num_outputs,
                      graph.captured_for.begin() + static_cast<std::ptrdiff_t>(num_inputs));
  }

  void capture(const Model& model, stitch_abi_buffers buffers, CapturedGraph& graph) {
    buffers.stream = capture_stream;
    check_cuda(cudaStreamBeginCapture(capture_stream, cudaStreamCaptureModeThreadLocal),
               "cudaStreamBeginCapture on the context's capture stream");
    try {
      enqueue_model(*model.abi, buffers);
    } catch (...) {
      // End the capture so the stream is usable again; its own failure is not the caller's.
      (void)cudaStreamEndCapture(capture_stream, graph.out());
      (void)cudaGetLastError();
      throw;
    }
    check_cuda(cudaStreamEndCapture(capture_stream, graph.out()),
               "cudaStreamEndCapture (the model's work, captured as a CUDA Graph)");
  }

  // Makes `target.exec` run `graph`: updated in place when CUDA allows it, else instantiated
  // anew.
  static void install(ShapeGraph& target, const CapturedGraph& graph) {
    if (target.exec != nullptr) {
      cudaGraphExecUpdateResultInfo result{};
      if (cudaGraphExecUpdate(target.exec, graph.get(), &result) == cudaSuccess) return;
      (void)cudaGetLastError(); // a refused update is expected; do not leave it behind
    }
    cudaGraphExec_t fresh = nullptr;
    check_cuda(cudaGraphInstantiate(&fresh, graph.get(), 0), "cudaGraphInstantiate");
    // CUDA defers destroying an executable graph that is still running until it completes.
    if (target.exec != nullptr) (void)cudaGraphExecDestroy(target.exec);
    target.exec = fresh;
  }
};

Launcher::Launcher(const Model& model) : state_(std::make_unique<State>()) {
  // Reserved so that neither a new shape's slot nor recording the captured pointers throws
  // after a graph is installed.
  state_->graphs.reserve(State::kMaxGraphs);
  check_cuda(cudaStreamCreateWithFlags(&state_->capture_stream, cudaStreamNonBlocking),
             "cudaStreamCreateWithFlags for the context's capture stream");
  check_cuda(cudaEventCreateWithFlags(&state_->finished, cudaEventDisableTiming),
             "cudaEventCreateWithFlags for the context's run event");
}

Launcher::~Launcher() = default;

void Launcher::run(const Model& model, stitch_abi_buffers buffers, void* caller_stream,
                   bool direct) {
  State& state = *state_;
  const auto stream = static_cast<cudaStream_t>(caller_stream);
  const stitch_abi_model& abi = *model.abi;
  const auto check_locations = [&] {
    for (int32_t i = 0; i < abi.num_inputs; ++i)
      check_buffer_location(model, "input", i, abi.inputs[i], buffers.inputs[i]);
    for (int32_t o = 0; o < abi.num_outputs; ++o)
      check_buffer_location(model, "output", o, abi.outputs[o], buffers.outputs[o]);
  };
  if (direct) {
    // The work goes onto the caller's stream as it is, captured there if the caller captures.
    // The caller orders runs of this context; the event is recorded only outside a capture
    // (for wait_idle), where recording cannot join the caller's graph.
    check_locations();
    buffers.stream = stream;
    enqueue_model(abi, buffers);
    cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
    check_cuda(cudaStreamIsCapturing(stream, &capture), "cudaStreamIsCapturing");
    if (capture == cudaStreamCaptureStatusNone)
      check_cuda(cudaEventRecord(state.finished, stream), "cudaEventRecord after the run");
    return;
  }
  ShapeGraph* shape_graph = state.find(model, buffers);
  if (shape_graph == nullptr || !State::captured_for_pointers(model, *shape_graph, buffers)) {
    // Captured before any slot changes: a capture that fails leaves every graph as it was.
    check_locations();
    CapturedGraph graph;
    state.capture(model, buffers, graph);
    ShapeGraph& slot = shape_graph != nullptr ? *shape_graph : state.slot_for_new_shape();
    slot.captured_for.clear(); // until the graph for these pointers and shape is installed
    State::install(slot, graph);
    slot.shape.assign(buffers.symbols, buffers.symbols + abi.num_symbols);
    slot.captured_for.reserve(static_cast<std::size_t>(abi.num_inputs + abi.num_outputs));
    slot.captured_for.assign(buffers.inputs, buffers.inputs + abi.num_inputs);
    slot.captured_for.insert(slot.captured_for.end(), buffers.outputs,
                             buffers.outputs + abi.num_outputs);
    shape_graph = &slot;
  }
  shape_graph->last_used = ++state.runs;
  check_cuda(cudaStreamWaitEvent(stream, state.finished, 0),
             "cudaStreamWaitEvent for the context's previous run");
  check_cuda(cudaGraphLaunch(shape_graph->exec, stream), "cudaGraphLaunch");
  check_cuda(cudaEventRecord(state.finished, stream), "cudaEventRecord after the run");
}

void Launcher::wait_idle() {
  check_cuda(cudaEventSynchronize(state_->finished),
             "cudaEventSynchronize for the context's last run");
}

void Launcher::release() {
  State& state = *state_;
  cudaError_t first = cudaSuccess;
  std::string first_call;
  const auto keep_first = [&](cudaError_t result, const char* call) {
    if (result != cudaSuccess && first == cudaSuccess) {
      first = result;
      first_call = call;
    }
  };
  for (ShapeGraph& graph : state.graphs) {
    if (graph.exec != nullptr) keep_first(cudaGraphExecDestroy(graph.exec), "cudaGraphExecDestroy");
    graph.exec = nullptr;
  }
  if (state.finished != nullptr) keep_first(cudaEventDestroy(state.finished), "cudaEventDestroy");
  state.finished = nullptr;
  if (state.capture_stream != nullptr)
    keep_first(cudaStreamDestroy(state.capture_stream), "cudaStreamDestroy");
  state.capture_stream = nullptr;
  check_cuda(first, first_call);
}

void release_idle_resources() {}

} // namespace stitch::runtime
