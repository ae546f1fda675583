// module.cpp: attnlab._core, the extension module under the Python package attnlab
// (python/attnlab/__init__.py is its public face and documents it for users).
//
// What it exposes, each a thin call into the libraries demo is built from:
//   attention(x, w_q, w_k, w_v, per_entry, heads, causal, scale, mask, device, threads,
//             progress, main_thread) -> (q, k, v, scores, weights, out, info)
//       x (batch, n, d_model), weights (count, d_model, d), C-contiguous float32 or float64 arrays
//       read in place (no copy), count = batch when per_entry else 1; mask None or uint8
//       (batch, heads, n, n), nonzero where a query may attend a key; the outputs are new
//       arrays of the same dtype, owned by numpy, shaped as host/attention_compute.hpp says;
//       info: {"backend", "kernel_seconds", "kernel_cpu_seconds"}.
//   experiments() -> [{"name", "summary", "in_all", "runs", "chunked", "params": [...]}]
//       every table of the registry with its Param declarations (flag, kind, help, default,
//       output_file): what the command line reads, declared once.
//   run_table(name, given, device, threads, progress, main_thread, command_line)
//       -> (provenance JSON text, [{"name", "title", "columns", "values", "notes", "run"}])
//       given: flag -> text, exactly as on demo's command line; values: one list per column.
// Errors: a refused request (std::invalid_argument, one line) raises ValueError; a file that
// cannot be written raises OSError; Ctrl-C raises KeyboardInterrupt (below); anything else
// RuntimeError. The kernels run with the GIL released.
//
// Ctrl-C: while a call computes, on the interpreter's main thread, SIGINT goes to the
// stop flag the kernels and the chunk driver poll (host/progress.hpp's StopScope) instead of
// Python's handler; the computation stops at its next stop point (well within a second: the
// pieces are sized for that, docs/DESIGN.md), its partial results are dropped, no file is
// renamed into place, and KeyboardInterrupt is raised. From another thread a call leaves
// signals to the interpreter.
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/map.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <stdexcept>
#include <string>
#include <system_error>

#include "experiments/registry.hpp"
#include "host/attention_compute.hpp"
#include "host/backend.hpp"
#include "host/format.hpp"
#include "host/memory.hpp"
#include "host/progress.hpp"
#include "host/provenance.hpp"
#include "version.hpp"

namespace nb = nanobind;
using namespace nb::literals;

namespace {

using namespace attn;

// The kernels' stop test: the stop flag StopScope routes SIGINT to.
// A file the request names that cannot be used (it exists, its folder is missing): OSError.
struct FileError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct SignalMonitor : Monitor {
  bool stop_requested() const override { return stop_requested_by_signal(); }
};

// Log lines on stderr, "attnlab: ...": warnings, and notices too while progress is on.
struct LogLevel {
  explicit LogLevel(bool progress) {
    spdlog::set_level(progress ? spdlog::level::info : spdlog::level::warn);
  }
  ~LogLevel() { spdlog::set_level(spdlog::level::warn); }
};

// Runs f with the GIL released and SIGINT routed to the stop flag; raises KeyboardInterrupt
// when it was interrupted, and the exceptions of the file's top for the others.
template <class F>
auto guarded(bool main_thread, F&& f) {
  std::string error;
  enum { none, value, os, interrupted, other } kind = none;
  decltype(f()) result{};
  {
    nb::gil_scoped_release release;
    StopScope scope(main_thread);
    try {
      result = f();
    } catch (const Interrupted&) {
      kind = interrupted;
    } catch (const std::invalid_argument& e) {
      kind = value, error = e.what();
    } catch (const FileError& e) {
      kind = os, error = e.what();
    } catch (const std::system_error& e) {
      kind = os, error = e.what();
    } catch (const std::exception& e) {
      kind = other, error = e.what();
    }
    if (kind == none && scope.interrupted()) kind = interrupted;
  }
  switch (kind) {
    case none:
      return result;
    case interrupted:
      PyErr_SetNone(PyExc_KeyboardInterrupt);
      throw nb::python_error();
    case value:
      throw nb::value_error(error.c_str());
    case os:
      PyErr_SetString(PyExc_OSError, error.c_str());
      throw nb::python_error();
    case other:
      break;
  }
  throw std::runtime_error(error);
}

// The backend, with select's refusals (no GPU answers) as a refused request.
Backend select_backend(const std::string& device, int threads) {
  try {
    Backend b = Backend::select(device, threads);
    announce_backend();
    return b;
  } catch (const std::invalid_argument&) {
    throw;
  } catch (const std::exception& e) {
    throw std::invalid_argument(e.what());
  }
}

// A new array that numpy owns, from a buffer (large_buffer) the C++ side filled.
template <class T>
nb::ndarray<nb::numpy, T> owned(std::unique_ptr<T[], FreeDeleter> data,
                                std::vector<std::size_t> shape) {
  T* raw = data.release();
  nb::capsule owner(raw, [](void* p) noexcept { std::free(p); });
  return nb::ndarray<nb::numpy, T>(raw, shape.size(), shape.data(), owner);
}

template <class T>
using In3 = nb::ndarray<const T, nb::ndim<3>, nb::c_contig, nb::device::cpu>;

using Mask = nb::ndarray<const std::uint8_t, nb::ndim<4>, nb::c_contig, nb::device::cpu>;

template <class T>
nb::tuple attention(In3<T> x, In3<T> w_q, In3<T> w_k, In3<T> w_v, bool per_entry, int heads,
                    bool causal, double scale, std::optional<Mask> mask, const std::string& device,
                    int threads, bool progress, bool main_thread) {
  const std::size_t B = x.shape(0), n = x.shape(1), d_model = x.shape(2);
  const std::size_t d_k = w_q.shape(2), d_v = w_v.shape(2), wc = per_entry ? B : 1;
  const auto check = [&](const char* name, const In3<T>& w, std::size_t cols) {
    if (w.shape(0) != wc || w.shape(1) != d_model || w.shape(2) != cols)
      throw nb::value_error((std::string(name) + ": not of shape (" + std::to_string(wc) + ", " +
                             std::to_string(d_model) + ", " + std::to_string(cols) + ")")
                                .c_str());
  };
  check("w_q", w_q, d_k);
  check("w_k", w_k, d_k);
  check("w_v", w_v, d_v);
  const std::size_t H = heads < 1 ? 1 : std::size_t(heads);
  if (mask &&
      (mask->shape(0) != B || mask->shape(1) != H || mask->shape(2) != n || mask->shape(3) != n))
    throw nb::value_error("mask: not of shape (batch, heads, n, n)");
  auto q = large_buffer<T>(B * n * d_k), k = large_buffer<T>(B * n * d_k),
       v = large_buffer<T>(B * n * d_v), scores = large_buffer<T>(B * H * n * n),
       weights = large_buffer<T>(B * H * n * n), out = large_buffer<T>(B * n * d_v);
  AttentionArrays<T> a;
  a.x = x.data();
  a.w_q = w_q.data();
  a.w_k = w_k.data();
  a.w_v = w_v.data();
  a.batch = B;
  a.n = n;
  a.d_model = d_model;
  a.d_k = d_k;
  a.d_v = d_v;
  a.per_entry = per_entry;
  a.heads = heads;
  a.causal = causal;
  a.scale = scale;
  a.mask = mask ? mask->data() : nullptr;
  a.q = q.get();
  a.k = k.get();
  a.v = v.get();
  a.scores = scores.get();
  a.weights = weights.get();
  a.out = out.get();
  struct Ran {
    std::string backend;
    KernelTime time;
  };
  const Ran ran = guarded(main_thread, [&] {
    const LogLevel level(progress);
    const Backend backend = select_backend(device, threads);
    Ran r{backend.name(), {}};
    attention_compute(a, backend, SignalMonitor(), r.time);
    return r;
  });
  nb::dict info;
  info["backend"] = ran.backend;
  info["kernel_seconds"] = ran.time.wall;
  info["kernel_cpu_seconds"] = ran.time.cpu;
  return nb::make_tuple(owned(std::move(q), {B, n, d_k}), owned(std::move(k), {B, n, d_k}),
                        owned(std::move(v), {B, n, d_v}), owned(std::move(scores), {B, H, n, n}),
                        owned(std::move(weights), {B, H, n, n}), owned(std::move(out), {B, n, d_v}),
                        info);
}

nb::list experiments_list() {
  nb::list all;
  for (const Experiment& e : experiments()) {
    nb::list params;
    for (const Param& p : e.params) {
      nb::dict d;
      d["flag"] = p.flag;
      d["kind"] = p.kind;
      d["help"] = p.help;
      d["default"] = p.default_text;
      d["output_file"] = p.output_file;
      params.append(d);
    }
    nb::dict d;
    d["name"] = e.name;
    d["summary"] = e.summary;
    d["in_all"] = e.in_all;
    d["runs"] = e.runs == Runs::host ? "host" : "backend";
    d["chunked"] = e.chunked;
    d["params"] = params;
    all.append(d);
  }
  return all;
}

// A cell as a Python value: None, int, float, str, or a list of floats.
nb::object cell_object(const Cell& c) {
  return std::visit(
      [](const auto& v) -> nb::object {
        using V = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<V, std::monostate>)
          return nb::none();
        else if constexpr (std::is_same_v<V, std::vector<double>>)
          return nb::cast(v);
        else
          return nb::cast(v);
      },
      c);
}

nb::tuple run_table(const std::string& name, const std::map<std::string, std::string>& given,
                    const std::string& device, int threads, bool progress, bool main_thread,
                    const std::string& command_line) {
  const Experiment* e = find_experiment(name);
  if (!e) throw nb::value_error(("no table " + name).c_str());
  struct Made {
    std::string provenance;
    std::vector<Table> tables;
  };
  Made made = guarded(main_thread, [&] {
    const LogLevel level(progress);
    Options o;
    o.tables = {name};
    o.given = given;
    o.device = device;
    o.threads = threads;
    o.quiet = !progress;
    o.command_line = command_line;
    o.force = false;
    // A table's output files, before any work (as demo checks them): the folder must exist and
    // the file must not.
    for (const Param& p : e->params) {
      if (!p.output_file || !given.count(p.flag)) continue;
      const std::filesystem::path path(given.at(p.flag));
      const std::filesystem::path dir = path.parent_path().empty() ? "." : path.parent_path();
      if (!std::filesystem::is_directory(dir))
        throw FileError(p.flag + " " + path.string() + ": no folder " + dir.string());
      if (std::filesystem::exists(path)) throw FileError(p.flag + " " + path.string() + ": exists");
    }
    Provenance prov;
    prov.command_line = command_line;
    prov.start_utc = utc_now_iso8601();
    const auto t0 = std::chrono::steady_clock::now();
    const Backend backend = select_backend(device, threads);
    Made m;
    m.tables = run_experiment(*e, o, given, backend);
    prov.wall_seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    m.provenance = prov.to_json(backend).dump();
    return m;
  });
  nb::list tables;
  for (const Table& t : made.tables) {
    nb::list columns, values;
    for (std::size_t c = 0; c < t.columns.size(); ++c) {
      columns.append(t.columns[c].name);
      nb::list col;
      for (const auto& row : t.rows) col.append(c < row.size() ? cell_object(row[c]) : nb::none());
      values.append(col);
    }
    nb::dict d;
    d["name"] = t.name;
    d["title"] = t.title;
    d["columns"] = columns;
    d["values"] = values;
    d["notes"] = nb::cast(t.notes);
    d["run"] = t.run.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    d["extra"] = t.extra.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    tables.append(d);
  }
  return nb::make_tuple(made.provenance, tables);
}

}  // namespace

NB_MODULE(_core, m) {
  auto logger = spdlog::stderr_color_mt("attnlab");
  logger->set_pattern("attnlab: %v");
  spdlog::set_default_logger(logger);
  spdlog::set_level(spdlog::level::warn);

  m.attr("version") = kVersion;
  m.attr("git_commit") = kGitCommit;
  m.attr("built_with_cuda") = kBuiltWithCuda;
  m.def("attention", &attention<float>, "x"_a.noconvert(), "w_q"_a.noconvert(), "w_k"_a.noconvert(),
        "w_v"_a.noconvert(), "per_entry"_a, "heads"_a, "causal"_a, "scale"_a, "mask"_a.none(),
        "device"_a, "threads"_a, "progress"_a, "main_thread"_a);
  m.def("attention", &attention<double>, "x"_a.noconvert(), "w_q"_a.noconvert(),
        "w_k"_a.noconvert(), "w_v"_a.noconvert(), "per_entry"_a, "heads"_a, "causal"_a, "scale"_a,
        "mask"_a.none(), "device"_a, "threads"_a, "progress"_a, "main_thread"_a);
  m.def("experiments", &experiments_list);
  m.def("run_table", &run_table, "name"_a, "given"_a, "device"_a, "threads"_a, "progress"_a,
        "main_thread"_a, "command_line"_a);
}
