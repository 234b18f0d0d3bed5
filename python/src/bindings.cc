// python/src/bindings.cc — the `_kvcg` extension module: a thin layer over
// kvcg::Store (include/kvcg/store.h) for the Pythonic package in kvcg/.
//
// Why pybind11: it is mature, already packaged for every Python we meet
// (2.x: one header-only wheel, CMake config shipped inside it), and its
// py::array / buffer-protocol support gives typed, zero-copy access to
// NumPy columns without depending on NumPy's C API at build time. nanobind
// would be slightly faster to call, but nothing here is bound per element:
// the hot path is one call per batch.
//
// What lives here, and what in kvcg/__init__.py:
//  * here: opening a store from keyword configuration, single ops, the two
//    batch paths and engine access. Every call that touches the store
//    releases the GIL around building, executing and copying the batch, so
//    Python threads can submit batches concurrently (the Store is
//    thread-safe);
//  * in Python: argument normalisation (str -> UTF-8 bytes), the dict
//    protocol, and turning per-op error codes into exceptions.
//
// Batch paths:
//  * bytes:  sequences of bytes in, a list of bytes|None out, plus codes;
//  * fixed8: 1-D C-contiguous uint64 NumPy arrays in (appended with
//    Batch::AppendBulk straight from the array buffers: no Python object
//    per element), new uint64/bool/uint8 arrays out, copied from the
//    Results columns while the GIL is released.
// Batch functions never raise for a per-op error: they return the codes
// column (uint8, kvcg::Code values) and let the Python layer decide.
//
// Lifetime: a Handle holds the store through a shared_ptr; every call takes
// its own reference under the GIL before releasing it, so close() while
// other threads are inside a batch cannot free the store under them (the
// last reference destroys it, with the GIL released).
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstring>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "kvcg/batch.h"
#include "kvcg/config.h"
#include "kvcg/engine.h"
#include "kvcg/results.h"
#include "kvcg/status.h"
#include "kvcg/store.h"

namespace py = pybind11;

namespace {

// kvcg.Error, created in PYBIND11_MODULE. A plain PyObject* (a strong
// reference owned by the module dict) so that no py::object destructor runs
// at interpreter exit.
PyObject* g_error = nullptr;

// Raises kvcg.Error(message) with attribute .code = `code`'s name.
[[noreturn]] void RaiseError(kvcg::Code code, const std::string& message) {
  py::object type = py::reinterpret_borrow<py::object>(g_error);
  py::object exc = type(message);
  exc.attr("code") = kvcg::CodeName(code);
  PyErr_SetObject(g_error, exc.ptr());
  throw py::error_already_set();
}

[[noreturn]] void RaiseStatus(const kvcg::Status& s) { RaiseError(s.code(), s.ToString()); }

std::string_view BytesView(const py::handle& obj, const char* what, size_t index) {
  if (!PyBytes_Check(obj.ptr())) {
    throw py::type_error(std::string(what) + " " + std::to_string(index) + " must be bytes, not " +
                         std::string(py::str(py::type::of(obj).attr("__name__"))));
  }
  char* data = nullptr;
  Py_ssize_t size = 0;
  PyBytes_AsStringAndSize(obj.ptr(), &data, &size);
  return {data, size_t(size)};
}

// A 1-D C-contiguous uint64 array, checked with messages that say what to do.
const uint64_t* U64Column(const py::array& a, const char* what) {
  if (!(a.dtype().kind() == 'u' && a.dtype().itemsize() == 8)) {
    throw py::type_error(std::string(what) + " must be a NumPy uint64 array, not dtype " +
                         std::string(py::str(a.dtype())) + " (use .astype(np.uint64))");
  }
  if (a.ndim() != 1) {
    throw py::value_error(std::string(what) + " must be 1-D, got " + std::to_string(a.ndim()) +
                          " dimensions");
  }
  // The columns are copied with memcpy-speed bulk appends, which need one
  // dense run of 8-byte words: strided views are refused, not silently copied.
  if (!(a.flags() & py::array::c_style)) {
    throw py::value_error(std::string(what) +
                          " must be C-contiguous (use np.ascontiguousarray(...))");
  }
  // '=' native, '<' little (x86-64 and arm64 are little-endian hosts).
  if (a.dtype().byteorder() == '>') {
    throw py::type_error(std::string(what) + " must be native-endian uint64 (use .astype('=u8'))");
  }
  return static_cast<const uint64_t*>(a.data());
}

class Handle {
 public:
  Handle(std::unique_ptr<kvcg::Store> store, kvcg::Mode mode)
      : store_(std::move(store)), mode_(mode) {}

  // A reference for one call; raises when closed. Called with the GIL held.
  std::shared_ptr<kvcg::Store> Get() const {
    if (!store_) RaiseError(kvcg::Code::kUnavailable, "store is closed");
    return store_;
  }
  kvcg::Engine* EngineOf(kvcg::Store* s, const char* what) const {
    kvcg::Engine* e = kvcg::AsEngine(s);
    if (e == nullptr) {
      RaiseError(kvcg::Code::kInvalidArgument,
                 std::string(what) + " needs mode 'kvcg' or 'hot-only' (this store is '" +
                     kvcg::ModeName(mode_) + "')");
    }
    return e;
  }

  void Close() {
    std::shared_ptr<kvcg::Store> s = std::move(store_);
    store_.reset();
    py::gil_scoped_release release;  // the destructor waits for in-flight batches
    s.reset();
  }
  bool closed() const { return !store_; }

  py::dict Info() const {
    auto s = Get();
    kvcg::StoreInfo info = s->Info();
    py::dict d;
    d["backend"] = kvcg::BackendName(info.backend);
    d["layout"] = kvcg::LayoutName(info.layout);
    d["device"] = info.device;
    d["detail"] = info.detail;
    d["mode"] = kvcg::ModeName(mode_);
    return d;
  }

  uint64_t Size() const {
    auto s = Get();
    return s->Size();
  }
  uint64_t MemoryBytes() const {
    auto s = Get();
    py::gil_scoped_release release;  // the engine may flush (a short block)
    return s->MemoryBytes();
  }
  void Clear() {
    auto s = Get();
    py::gil_scoped_release release;
    s->Clear();
  }

  // One op: bytes | None, or kvcg.Error naming the op and code.
  py::object One(kvcg::OpType type, const py::bytes& key, const py::bytes* value) {
    auto s = Get();
    std::string_view k = BytesView(key, "key", 0);
    std::string_view v = value ? BytesView(*value, "value", 0) : std::string_view();
    kvcg::Code code;
    std::string out;
    {
      // The bytes objects are immutable and referenced by the caller.
      py::gil_scoped_release release;
      kvcg::Batch batch = s->NewBatch();
      batch.Append(type, k, v);
      kvcg::Results r = s->Execute(std::move(batch));
      code = r.code(0);
      if (code == kvcg::Code::kOk) out.assign(r.value(0));
    }
    if (code == kvcg::Code::kOk) return py::bytes(out);
    if (code == kvcg::Code::kNotFound) return py::none();
    RaiseError(code, std::string(kvcg::OpTypeName(type)) + " failed: op 0: " +
                         kvcg::CodeName(code) + Hint(code));
  }

  // Bytes batch: (list of bytes|None, codes uint8 array). `values` empty
  // unless type is kPut.
  py::tuple Many(kvcg::OpType type, const py::object& keys_in, const py::object& values_in) {
    auto s = Get();
    // Tuples hold a reference to every element: the views below stay valid
    // while the GIL is released even if the caller's list is changed.
    py::tuple keys = py::tuple(keys_in);
    py::tuple values = type == kvcg::OpType::kPut ? py::tuple(values_in) : py::tuple();
    const size_t n = keys.size();
    if (type == kvcg::OpType::kPut && values.size() != n) {
      throw py::value_error("put_many: " + std::to_string(n) + " keys but " +
                            std::to_string(values.size()) + " values");
    }
    std::vector<std::string_view> kv(n), vv(type == kvcg::OpType::kPut ? n : 0);
    for (size_t i = 0; i < n; ++i) kv[i] = BytesView(keys[i], "key", i);
    for (size_t i = 0; i < vv.size(); ++i) vv[i] = BytesView(values[i], "value", i);

    py::array_t<uint8_t> codes(n);
    uint8_t* codes_out = codes.mutable_data();
    kvcg::Results r;
    {
      py::gil_scoped_release release;
      kvcg::Batch batch = s->NewBatch();
      for (size_t i = 0; i < n; ++i) batch.Append(type, kv[i], vv.empty() ? std::string_view() : vv[i]);
      r = s->Execute(std::move(batch));
      if (n) std::memcpy(codes_out, r.codes(), n);
    }
    // One bytes object per found value is unavoidable on this path.
    py::list out(n);
    for (size_t i = 0; i < n; ++i) {
      if (r.found(i)) {
        std::string_view v = r.value(i);
        out[i] = py::bytes(v.data(), v.size());
      } else {
        out[i] = py::none();
      }
    }
    r.Release();
    return py::make_tuple(out, codes);
  }

  // fixed8 batch from NumPy: (values uint64, found bool, codes uint8).
  py::tuple ManyU64(kvcg::OpType type, const py::array& keys_in, const py::object& values_in) {
    auto s = Get();
    const uint64_t* keys = U64Column(keys_in, "keys");
    const size_t n = size_t(keys_in.shape(0));
    const uint64_t* values = nullptr;
    py::array values_arr;
    if (type == kvcg::OpType::kPut) {
      if (!py::isinstance<py::array>(values_in)) {
        throw py::type_error("put_many: values must be a NumPy uint64 array when keys are one");
      }
      values_arr = py::reinterpret_borrow<py::array>(values_in);
      values = U64Column(values_arr, "values");
      if (size_t(values_arr.shape(0)) != n) {
        throw py::value_error("put_many: " + std::to_string(n) + " keys but " +
                              std::to_string(values_arr.shape(0)) + " values");
      }
    }
    py::array_t<uint64_t> out(n);
    py::array_t<bool> found(n);
    py::array_t<uint8_t> codes(n);
    uint64_t* out_p = out.mutable_data();
    bool* found_p = found.mutable_data();
    uint8_t* codes_p = codes.mutable_data();
    {
      // keys_in/values_arr keep the input buffers alive; the caller must not
      // write to them during the call (documented in kvcg/__init__.py).
      py::gil_scoped_release release;
      kvcg::Batch batch = s->NewBatch();
      std::vector<kvcg::OpType> types(n, type);
      batch.AppendBulk(types.data(), keys, 8, values, values ? 8 : 0, n);
      kvcg::Results r = s->Execute(std::move(batch));
      const kvcg::Code* c = r.codes();
      for (size_t i = 0; i < n; ++i) {
        const bool f = c[i] == kvcg::Code::kOk;
        found_p[i] = f;
        codes_p[i] = uint8_t(c[i]);
        uint64_t w = 0;
        if (f) {
          std::string_view v = r.value(i);
          std::memcpy(&w, v.data(), v.size() < 8 ? v.size() : 8);
        }
        out_p[i] = w;
      }
    }
    return py::make_tuple(out, found, codes);
  }

  py::dict EngineStats() const {
    auto s = Get();
    kvcg::Engine* e = EngineOf(s.get(), "engine_stats()");
    kvcg::EngineStats st;
    {
      py::gil_scoped_release release;
      st = e->Stats();
    }
    py::dict d;
    d["mode"] = st.mode;
    d["hot_ops"] = st.hot.ops;
    d["hot_hits"] = st.hot.hits;
    d["hot_misses"] = st.hot.misses;
    d["hot_waited"] = st.hot.waited;
    d["cold_ops"] = st.cold.ops;
    d["errors"] = st.errors;
    d["hot_cache_entries"] = st.hot_cache_entries;
    d["hot_cache_dirty"] = st.hot_cache_dirty;
    d["model_version"] = st.model_version;
    d["model"] = st.model;
    d["model_hot_keys"] = st.model_hot_keys;
    d["router_model"] = st.router_model;
    d["samples"] = st.samples;
    d["switches"] = st.switches;
    d["hot_p99_us"] = st.hot.latency.p99_us;
    d["cold_p99_us"] = st.cold.latency.p99_us;
    return d;
  }

  py::dict SwitchModel() {
    auto s = Get();
    kvcg::Engine* e = EngineOf(s.get(), "switch_model()");
    kvcg::SwitchRecord rec;
    kvcg::Status st;
    {
      py::gil_scoped_release release;  // blocks until the switch is complete
      st = e->SwitchToShadowModel(&rec);
    }
    if (!st.ok()) RaiseStatus(st);
    return RecordDict(rec);
  }

  void Flush() {
    auto s = Get();
    kvcg::Engine* e = EngineOf(s.get(), "flush()");
    kvcg::Status st;
    {
      py::gil_scoped_release release;
      st = e->Flush();
    }
    if (!st.ok()) RaiseStatus(st);
  }

 private:
  static std::string Hint(kvcg::Code code) {
    switch (code) {
      case kvcg::Code::kKeyTooLarge:
        return " (key longer than max_key_bytes)";
      case kvcg::Code::kValueTooLarge:
        return " (value longer than max_value_bytes)";
      case kvcg::Code::kInvalidArgument:
        return " (layout fixed8 needs 8-byte keys and values)";
      case kvcg::Code::kCapacityExhausted:
        return " (max_keys or max_memory_bytes reached)";
      default:
        return "";
    }
  }
  static py::dict RecordDict(const kvcg::SwitchRecord& rec) {
    py::dict d;
    d["version"] = rec.version;
    d["model"] = rec.model;
    d["reason"] = rec.reason;
    d["ok"] = rec.ok;
    d["error"] = rec.error;
    d["duration_us"] = rec.duration_us;
    d["blocked_us"] = rec.blocked_us;
    d["replayed"] = rec.replayed;
    d["evicted"] = rec.evicted;
    return d;
  }

  std::shared_ptr<kvcg::Store> store_;
  kvcg::Mode mode_;
};

// Config fields settable as keyword arguments of kvcg.open(), by name. The
// router's fields are flattened with a router_ prefix.
void ApplyConfig(kvcg::Config& c, const py::kwargs& kw) {
  auto u64 = [](const std::string& name, const py::handle& v) -> uint64_t {
    if (!py::isinstance<py::int_>(v) || py::isinstance<py::bool_>(v)) {
      throw py::type_error(name + " must be an int");
    }
    auto x = v.cast<long long>();
    if (x < 0) throw py::value_error(name + " must be >= 0");
    return uint64_t(x);
  };
  auto f64 = [](const std::string& name, const py::handle& v) -> double {
    if (!py::isinstance<py::int_>(v) && !py::isinstance<py::float_>(v)) {
      throw py::type_error(name + " must be a number");
    }
    return v.cast<double>();
  };
  for (auto item : kw) {
    const std::string name = py::str(item.first);
    const py::handle v = item.second;
    if (name == "max_key_bytes") c.max_key_bytes = u64(name, v);
    else if (name == "max_value_bytes") c.max_value_bytes = u64(name, v);
    else if (name == "max_keys") c.max_keys = u64(name, v);
    else if (name == "max_memory_bytes") c.max_memory_bytes = u64(name, v);
    else if (name == "expected_keys") c.expected_keys = u64(name, v);
    else if (name == "cpu_shards") c.cpu_shards = uint32_t(u64(name, v));
    else if (name == "gpu_device") c.gpu_device = int(u64(name, v));
    else if (name == "gpu_memory_bytes") c.gpu_memory_bytes = u64(name, v);
    else if (name == "gpu_max_batch_ops") c.gpu_max_batch_ops = uint32_t(u64(name, v));
    else if (name == "gpu_batch_timeout_us") c.gpu_batch_timeout_us = uint32_t(u64(name, v));
    else if (name == "gpu_idle_spin_us") c.gpu_idle_spin_us = uint32_t(u64(name, v));
    else if (name == "gpu_resident_blocks") c.gpu_resident_blocks = uint32_t(u64(name, v));
    else if (name == "retry_timeout_ms") c.retry_timeout_ms = uint32_t(u64(name, v));
    else if (name == "hot_cache_buckets") c.hot_cache_buckets = u64(name, v);
    else if (name == "router_model") {
      if (!py::isinstance<py::str>(v)) throw py::type_error(name + " must be a str");
      if (!kvcg::ParseRouterModel(v.cast<std::string>(), &c.router.model)) {
        throw py::value_error(name + " must be 'heavy-hitters' or 'histogram'");
      }
    }
    else if (name == "router_hot_keys") c.router.hot_keys = u64(name, v);
    else if (name == "router_bins") c.router.bins = uint32_t(u64(name, v));
    else if (name == "router_threshold") c.router.threshold = f64(name, v);
    else if (name == "router_sample_rate") c.router.sample_rate = f64(name, v);
    else if (name == "router_min_hot_share") c.router.min_hot_share = f64(name, v);
    else if (name == "router_switch_period_ms") c.router.switch_period_ms = uint32_t(u64(name, v));
    else if (name == "router_min_samples") c.router.min_samples = u64(name, v);
    else {
      throw py::type_error(
          "open() got an unexpected keyword argument '" + name +
          "' (config keys: max_key_bytes, max_value_bytes, max_keys, max_memory_bytes, "
          "expected_keys, cpu_shards, gpu_device, gpu_memory_bytes, gpu_max_batch_ops, "
          "gpu_batch_timeout_us, gpu_idle_spin_us, gpu_resident_blocks, retry_timeout_ms, hot_cache_buckets, router_model, router_hot_keys, "
          "router_bins, router_threshold, router_sample_rate, router_min_hot_share, "
          "router_switch_period_ms, "
          "router_min_samples)");
    }
  }
}

std::unique_ptr<Handle> Open(const std::string& backend, const std::string& layout,
                             const std::string& mode, const py::kwargs& kw) {
  kvcg::Config c;
  if (!kvcg::ParseBackend(backend, &c.backend)) {
    throw py::value_error("backend must be 'auto', 'gpu' or 'cpu', not '" + backend + "'");
  }
  if (!kvcg::ParseLayout(layout, &c.layout)) {
    throw py::value_error("layout must be 'general' or 'fixed8', not '" + layout + "'");
  }
  if (!kvcg::ParseMode(mode, &c.mode)) {
    throw py::value_error("mode must be 'canonical', 'kvcg' or 'hot-only', not '" + mode + "'");
  }
  ApplyConfig(c, kw);
  std::unique_ptr<kvcg::Store> store;
  kvcg::Status s;
  {
    py::gil_scoped_release release;  // opening a GPU store takes a while
    s = kvcg::Store::Open(c, &store);
  }
  if (!s.ok()) RaiseStatus(s);
  return std::make_unique<Handle>(std::move(store), c.mode);
}

}  // namespace

PYBIND11_MODULE(_kvcg, m) {
  m.doc() = "kvcg's native module; use the kvcg package (kvcg.open) instead.";

  py::object error = py::reinterpret_steal<py::object>(
      PyErr_NewExceptionWithDoc("kvcg.Error",
                                "A kvcg call failed; .code is the kvcg code name "
                                "(e.g. 'key_too_large'), str() says why.",
                                PyExc_Exception, nullptr));
  m.attr("Error") = error;
  g_error = error.release().ptr();  // kept alive for the process (see g_error)

  py::dict codes;
  for (int c = 0; c <= int(kvcg::Code::kInternal); ++c) codes[kvcg::CodeName(kvcg::Code(c))] = c;
  m.attr("CODES") = codes;

  m.def("open", &Open, py::arg("backend") = "auto", py::arg("layout") = "general",
        py::arg("mode") = "canonical",
        "Opens a store (see kvcg.open). Raises kvcg.Error with the Status text.");

  py::class_<Handle>(m, "Handle", "An open kvcg::Store (see kvcg.Store).")
      .def("close", &Handle::Close, "Waits for in-flight batches and frees the store.")
      .def_property_readonly("closed", &Handle::closed)
      .def("info", &Handle::Info, "backend, layout, device, detail, mode.")
      .def("size", &Handle::Size, "Number of keys.")
      .def("memory_bytes", &Handle::MemoryBytes, "Bytes charged against max_memory_bytes.")
      .def("clear", &Handle::Clear, "Removes every key.")
      .def("get", [](Handle& h, const py::bytes& k) { return h.One(kvcg::OpType::kGet, k, nullptr); },
           "bytes | None.")
      .def("put",
           [](Handle& h, const py::bytes& k, const py::bytes& v) {
             return h.One(kvcg::OpType::kPut, k, &v);
           },
           "Previous bytes | None.")
      .def("delete",
           [](Handle& h, const py::bytes& k) { return h.One(kvcg::OpType::kDelete, k, nullptr); },
           "Previous bytes | None.")
      .def("get_many",
           [](Handle& h, const py::object& k) { return h.Many(kvcg::OpType::kGet, k, py::none()); },
           "(list of bytes|None, codes).")
      .def("put_many",
           [](Handle& h, const py::object& k, const py::object& v) {
             return h.Many(kvcg::OpType::kPut, k, v);
           },
           "(list of previous bytes|None, codes).")
      .def("delete_many",
           [](Handle& h, const py::object& k) {
             return h.Many(kvcg::OpType::kDelete, k, py::none());
           },
           "(list of previous bytes|None, codes).")
      .def("get_many_u64",
           [](Handle& h, const py::array& k) {
             return h.ManyU64(kvcg::OpType::kGet, k, py::none());
           },
           "(values uint64, found bool, codes uint8).")
      .def("put_many_u64",
           [](Handle& h, const py::array& k, const py::object& v) {
             return h.ManyU64(kvcg::OpType::kPut, k, v);
           },
           "(previous uint64, found bool, codes uint8).")
      .def("delete_many_u64",
           [](Handle& h, const py::array& k) {
             return h.ManyU64(kvcg::OpType::kDelete, k, py::none());
           },
           "(previous uint64, found bool, codes uint8).")
      .def("engine_stats", &Handle::EngineStats, "Engine counters (modes kvcg, cpu-only).")
      .def("switch_model", &Handle::SwitchModel, "SwitchToShadowModel; the switch record.")
      .def("flush", &Handle::Flush, "Engine::Flush.");
}
