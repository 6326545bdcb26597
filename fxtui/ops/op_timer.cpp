// fxtui's native per-op timer: a thread-local RecordFunction callback that writes one row of int64 per ATen op
// that a TorchDispatchMode would see (the outermost op that is not CompositeImplicitAutograd, outside the regions
// where torch excludes the Python key), into buffers the Python side preallocated. Built by
// fxtui/ops/native_build.py, read by fxtui/ops/native_recorder.py.
//
// Row layout (COLUMNS int64s): name id, t0, t1 (CLOCK_MONOTONIC ns: time.perf_counter_ns's clock), the address of
// the autograd node running the op (0 in forward), that node's sequence number, the parameter's TensorImpl address
// for an AccumulateGrad node (else 0), and the offset of the op's tensor flow in the flow buffer (-1: none).
// A flow is [n, n input TensorImpl addresses, m, m output addresses]: noted only while no module call is in
// progress (the loss rule of the namer reads it).
#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/record_function.h>
#include <c10/core/impl/LocalDispatchKeySet.h>
#include <time.h>
#include <torch/csrc/autograd/function.h>
#include <torch/csrc/autograd/functions/accumulate_grad.h>

#include <cstdint>
#include <mutex>
#include <string>
#include <typeinfo>
#include <unordered_map>
#include <vector>

namespace {
constexpr int64_t COLUMNS = 7;

// Written only by the recording thread: the callbacks are thread-local, and `t_on` is set on that thread alone.
int64_t* g_rows = nullptr;
int64_t g_capacity = 0;
int64_t g_count = 0;
int64_t g_dropped = 0;
int64_t* g_flow = nullptr;
int64_t g_flow_capacity = 0;
int64_t g_flow_count = 0;
bool g_flow_on = false;

thread_local bool t_on = false;
thread_local int64_t t_depth = 0;      // FUNCTION-scope calls in progress
thread_local int64_t t_recording = 0;  // the depth of the recorded (or skipped) op in progress; 0: none
thread_local int64_t t_row = -1;       // its row (-1: skipped, not recorded)
thread_local int t_quiet = 0;          // how the inner ops of the op in progress are passed by now (QUIET_*)
thread_local int64_t t_lost = 0;       // ns of that op's time spent switching its inner ops off (INNER_LAZY)

// How a recorded op keeps its inner ops (the ops its kernel calls) out of the rows and out of its time; fx_inner
// chooses (the benchmark compares them).
//  INNER_RF_OFF: RecordFunction switched off on the thread until the op ends. torch copies the thread's callbacks
//    and rebuilds its cache of every scope (about ten) at each switch, two a recorded op.
//  INNER_CALLBACK: this callback alone disabled until the op ends (the cache of its one scope rebuilt): torch makes
//    no RecordFunction for the inner ops while no other callback is on.
//  INNER_LAZY: as INNER_CALLBACK, from the op's first inner op on (an op whose kernel calls no other op, as most
//    element-wise ones, switches nothing); the switch's own time is taken out of the op's, the first inner op's
//    RecordFunction stays in it.
constexpr int INNER_RF_OFF = 0;
constexpr int INNER_CALLBACK = 1;
constexpr int INNER_LAZY = 2;
constexpr int QUIET_NONE = 0;
constexpr int QUIET_RF = 1;
constexpr int QUIET_CALLBACK = 2;
int g_inner = INNER_CALLBACK;

at::CallbackHandle g_plain = 0;  // the callback registered now (with or without the ops' inputs and outputs)

// The inner ops of the op in progress pass by from here on, the callback not run for them.
inline void quiet() {
  if (g_inner == INNER_RF_OFF) {
    if (at::isRecordFunctionEnabled()) {
      at::enableRecordFunction(false);
      t_quiet = QUIET_RF;
    }
  } else {
    at::disableCallback(g_plain);
    t_quiet = QUIET_CALLBACK;
  }
}

// The ops inside a recorded (or skipped) op's kernel are part of its time, not rows (quiet(): they pay nothing for
// the callback, and the op's time is the time it takes without fxtui). The op's own end callback still runs (its
// RecordFunction exists).
inline void hold(int64_t depth, int64_t row) {
  t_recording = depth;
  t_row = row;
  t_lost = 0;
  if (g_inner != INNER_LAZY) quiet();
}

inline void release() {
  t_recording = 0;
  if (t_quiet == QUIET_RF) {
    at::enableRecordFunction(true);
  } else if (t_quiet == QUIET_CALLBACK) {
    at::reenableCallback(g_plain);
  }
  t_quiet = QUIET_NONE;
}

// Per operator (keyed by its name's address, stable per overload): its interned name id, -1 if a mode never sees it.
std::unordered_map<const void*, int64_t> g_ops;
std::unordered_map<std::string, int64_t> g_ids;
std::vector<std::string> g_names;
std::mutex g_names_lock;

inline int64_t now() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

int64_t classify(const at::RecordFunction& fn) {
  const char* name = fn.name();
  auto found = g_ops.find(name);
  if (found != g_ops.end()) return found->second;
  int64_t id = -1;
  auto op_name = fn.operator_name();
  bool visible = false;
  if (op_name.has_value()) {
    auto handle = c10::Dispatcher::singleton().findOp(*op_name);
    // A CompositeImplicitAutograd op decomposes above the Python key: a dispatch mode sees its parts, not it.
    visible = handle.has_value() && !handle->hasKernelForDispatchKey(c10::DispatchKey::CompositeImplicitAutograd);
  }
  if (visible) {
    std::lock_guard<std::mutex> lock(g_names_lock);
    std::string text(name);
    auto known = g_ids.find(text);
    if (known == g_ids.end()) {
      id = static_cast<int64_t>(g_names.size());
      g_ids.emplace(text, id);
      g_names.push_back(text);
    } else {
      id = known->second;
    }
  }
  g_ops.emplace(name, id);
  return id;
}

inline void note(const at::Tensor& t) {
  if (g_flow_count < g_flow_capacity) {
    g_flow[g_flow_count++] = t.defined() ? reinterpret_cast<int64_t>(t.unsafeGetTensorImpl()) : 0;
  }
}

void note_value(const c10::IValue& value) {
  if (value.isTensor()) {
    note(value.toTensor());
  } else if (value.isTensorList()) {
    for (const at::Tensor& t : value.toTensorVector()) note(t);
  }
}

// Notes the tensors of an op's inputs (or outputs); false when the flow buffer is full.
bool note_all(const at::RecordFunction& fn, bool inputs) {
  if (g_flow_count + 1 >= g_flow_capacity) return false;
  int64_t at = g_flow_count++;
  if (inputs) {
    for (const auto& value : fn.inputs()) note_value(value);
  } else {
    for (const auto& value : fn.outputs()) note_value(value);
  }
  g_flow[at] = g_flow_count - at - 1;
  return true;
}

std::unique_ptr<at::ObserverContext> enter(const at::RecordFunction& fn) {
  if (!t_on) return nullptr;
  ++t_depth;
  if (t_recording != 0) {  // inside a recorded op's kernel: part of its time
    if (t_quiet == QUIET_NONE && g_inner == INNER_LAZY) {  // its first inner op: the rest pass by
      int64_t t = now();
      quiet();
      t_lost += now() - t;
    }
    return nullptr;
  }
  // torch keeps the Python key out here (making a tensor from data): a dispatch mode sees none of it.
  if (c10::impl::tls_is_dispatch_key_excluded(c10::DispatchKey::Python)) {
    hold(t_depth, -1);
    return nullptr;
  }
  int64_t id = classify(fn);
  if (id < 0) return nullptr;
  if (g_count >= g_capacity) {
    ++g_dropped;
    hold(t_depth, -1);
    return nullptr;
  }
  int64_t* row = g_rows + g_count * COLUMNS;
  hold(t_depth, g_count++);
  row[0] = id;
  row[2] = 0;
  row[3] = 0;
  row[4] = -1;
  row[5] = 0;
  row[6] = -1;
  auto node = torch::autograd::get_current_node();
  if (node) {
    row[3] = reinterpret_cast<int64_t>(node.get());
    row[4] = static_cast<int64_t>(node->sequence_nr());
    // the exact type, not dynamic_cast (which walks the class's bases: ~0.1 µs a backward op); nothing derives from
    // AccumulateGrad
    if (typeid(*node) == typeid(torch::autograd::AccumulateGrad)) {
      auto* acc = static_cast<torch::autograd::AccumulateGrad*>(node.get());
      row[5] = reinterpret_cast<int64_t>(acc->variable.unsafeGetTensorImpl());
    }
  }
  if (g_flow_on && fn.needsInputs()) {
    int64_t at = g_flow_count;
    if (note_all(fn, true)) row[6] = at;
  }
  row[1] = now();  // last: the callback's own work stays out of the op's time
  return nullptr;
}

void leave(const at::RecordFunction& fn, at::ObserverContext*) {
  if (!t_on || t_depth == 0) return;
  if (t_recording == t_depth) {
    if (t_row >= 0) {
      int64_t* row = g_rows + t_row * COLUMNS;
      row[2] = now() - t_lost;
      if (row[6] >= 0 && (!fn.needsOutputs() || !note_all(fn, false))) row[6] = -1;
    }
    release();
  }
  --t_depth;
}

at::RecordFunctionCallback callback(bool flow) {
  return at::RecordFunctionCallback(enter, leave)
      .needsInputs(flow)
      .needsOutputs(flow)
      .needsIds(false)
      .scopes({at::RecordScope::FUNCTION});
}
}  // namespace

extern "C" {
int64_t fx_columns() { return COLUMNS; }

// Begin recording on the calling thread into rows[capacity][COLUMNS] and flow[flow_capacity].
int fx_start(int64_t* rows, int64_t capacity, int64_t* flow, int64_t flow_capacity) {
  if (g_plain != 0) return -1;
  g_rows = rows;
  g_capacity = capacity;
  g_count = 0;
  g_dropped = 0;
  g_flow = flow;
  g_flow_capacity = flow_capacity;
  g_flow_count = 0;
  g_flow_on = false;
  t_depth = 0;
  t_recording = 0;
  t_on = true;
  g_plain = at::addThreadLocalCallback(callback(false));
  return 0;
}

// Note (or stop noting) the tensors each op reads and makes: on while no module call is in progress, outside the
// phases whose ops are named by phase, and outside autograd's engine (its nodes' ops are charged by node). The
// callback is swapped for one that asks torch for the ops' inputs and outputs (which costs every op, so only then).
// Never called inside the engine: it runs its nodes under a copy of the thread's callbacks, restored after.
void fx_flow(int on) {
  if (g_plain == 0 || (on != 0) == g_flow_on) return;
  g_flow_on = on != 0;
  at::removeCallback(g_plain);
  g_plain = at::addThreadLocalCallback(callback(g_flow_on));
  if (t_quiet == QUIET_CALLBACK) at::disableCallback(g_plain);  // inside an op passed by: the new one too
}

// Pause or resume on the recording thread (a compiled module's call: its kernels are timed apart).
void fx_pause(int paused) {
  release();
  t_on = paused == 0 && g_plain != 0;
  t_depth = 0;
}

// How a recorded op's inner ops are passed by (INNER_*), between steps; the one now.
int fx_inner(int how) {
  if (g_plain == 0 && how >= INNER_RF_OFF && how <= INNER_LAZY) g_inner = how;
  return g_inner;
}

int64_t fx_count() { return g_count; }
int64_t fx_dropped() { return g_dropped; }
int64_t fx_flow_count() { return g_flow_count; }

// Stop recording; the rows written.
int64_t fx_stop() {
  release();  // first: it re-enables the callback it disabled
  if (g_plain != 0) at::removeCallback(g_plain);
  g_plain = 0;
  t_on = false;
  t_depth = 0;
  return g_count;
}

int64_t fx_name_count() {
  std::lock_guard<std::mutex> lock(g_names_lock);
  return static_cast<int64_t>(g_names.size());
}

// Copies the name of id `id` ("aten::addmm") into out[size]; its length, or -1.
int64_t fx_name(int64_t id, char* out, int64_t size) {
  std::lock_guard<std::mutex> lock(g_names_lock);
  if (id < 0 || id >= static_cast<int64_t>(g_names.size())) return -1;
  const std::string& name = g_names[id];
  int64_t n = static_cast<int64_t>(name.size());
  if (n >= size) return -1;
  std::copy(name.begin(), name.end(), out);
  out[n] = 0;
  return n;
}
}
