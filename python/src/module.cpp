// module.cpp: attnlab._core, the extension module under the Python package attnlab
// (python/attnlab/__init__.py is its public face, checks every argument and documents it for
// users).
//
// What it exposes, each a thin call into the libraries demo is built from:
//   attention(x, w_q, w_k, w_v, per_entry, heads, causal, scale, mask, map, device, threads,
//             progress, main_thread, need_weights, given)
//       -> (q, k, v, scores, weights, out, info)
//       x (batch, n, d_model), weights (count, d_model, d), C-contiguous float32 or float64 arrays
//       read in place (no copy), count = batch when per_entry else 1; mask None or uint8
//       (batch, heads, n, n), nonzero where a query may attend a key; map None or an array of
//       x's dtype (batch, heads, n, n), the weights used instead of the softmax's (kernels/
//       attention.hpp's AttentionProblem::map); given: {name: array} of
//       the caller's outputs, C-contiguous, of the shapes host/attention_compute.hpp says
//       ((batch, n, d) and (batch, heads, n, n)), written in place. The outputs not given are
//       new arrays owned by numpy; given ones, and scores and weights without need_weights,
//       come back as None. Without need_weights, scores and weights go to a scratch buffer of
//       at most kScratchBytes (a few problems at a time), never to the caller.
//       info: {"backend", "kernel_seconds", "kernel_cpu_seconds"}.
//   attention_bytes(batch, n, d_model, d_k, d_v, per_entry, heads, word, masked, mapped,
//                   need_weights, given) -> (bytes, square_bytes): the memory attention allocates
//                   for such a
//       call (outputs not given, scratch, attention_compute's own), and of it the scores and
//       weights; the caller checks it against memory_available() before any work.
//   experiments() -> [{"name", "summary", "in_all", "runs", "chunked", "params": [...]}]
//       every experiment of the registry with its Param declarations (flag, kind, help, default,
//       output_file): what the command line reads, declared once.
//   run_table(name, given, device, threads, progress, main_thread, command_line)
//       -> (provenance JSON text, [{"name", "title", "columns", "values", "notes", "run"}])
//       given: flag -> text, exactly as on demo's command line; values: one list per column.
//   per_seed_files(path): the files attention-sweep's --per-seed PATH writes
//       (experiments/per_seed_maps.hpp), PATH first.
//   read_bytes(path), read_npy(path), read_json(path): a file as demo's readers read one
//       (host/input.hpp: a regular file only, opened without waiting, at most the memory
//       available): its bytes; a .npy's (descr, shape, C-order bytes) (host/array_io.hpp's
//       npy_array); a result JSON's text (host/compare.hpp's parse_result_text: nesting and
//       memory limits), as nlohmann-json writes it again.
//   memory_available(), human_bytes(bytes): host/memory.hpp's.
//   parse_int(option, text, lo, hi), parse_real(option, text, lo, hi, lo_open),
//   parse_threads(option, text), parse_choice(option, text, allowed): host/parse.hpp's checks,
//       for the command line's wording.
// Errors: a refused request (std::invalid_argument, one line) raises ValueError; a file that
// cannot be read or written raises OSError (a reader's refusal of its content: ValueError);
// Ctrl-C raises KeyboardInterrupt (below); anything else RuntimeError. The kernels run with the
// GIL released.
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
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <stdexcept>
#include <string>
#include <system_error>

#include "experiments/per_seed_maps.hpp"
#include "experiments/registry.hpp"
#include "host/array_io.hpp"
#include "host/attention_compute.hpp"
#include "host/backend.hpp"
#include "host/compare.hpp"
#include "host/format.hpp"
#include "host/input.hpp"
#include "host/memory.hpp"
#include "host/output.hpp"
#include "host/parse.hpp"
#include "host/progress.hpp"
#include "host/provenance.hpp"
#include "version.hpp"

namespace nb = nanobind;
using namespace nb::literals;

namespace {

using namespace attn;

// A file the request names that cannot be used (it exists, its folder is missing): OSError.
struct FileError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// The kernels' stop test: the stop flag StopScope routes SIGINT to.
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

[[noreturn]] void raise_os_error(const std::string& message) {
  PyErr_SetString(PyExc_OSError, message.c_str());
  throw nb::python_error();
}

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
      raise_os_error(error);
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
nb::object owned(std::unique_ptr<T[], FreeDeleter> data, std::vector<std::size_t> shape) {
  if (!data) return nb::none();
  T* raw = data.release();
  nb::capsule owner(raw, [](void* p) noexcept { std::free(p); });
  return nb::cast(nb::ndarray<nb::numpy, T>(raw, shape.size(), shape.data(), owner));
}

template <class T>
using In3 = nb::ndarray<const T, nb::ndim<3>, nb::c_contig, nb::device::cpu>;
template <class T>
using Out = nb::ndarray<T, nb::c_contig, nb::device::cpu>;

using Mask = nb::ndarray<const std::uint8_t, nb::ndim<4>, nb::c_contig, nb::device::cpu>;
template <class T>
using Map = nb::ndarray<const T, nb::ndim<4>, nb::c_contig, nb::device::cpu>;

// Scores and weights that the caller does not want go to a scratch buffer of at most this
// many bytes, reused problem group after problem group (at least one problem at a time).
constexpr double kScratchBytes = double(8 << 20);

const char* const kOutputs[] = {"q", "k", "v", "scores", "weights", "out"};

// The sizes of one attention call, and what it allocates.
struct AttentionPlan {
  std::size_t B, n, d_model, d_k, d_v, H, word;
  bool per_entry, masked, mapped, need_weights;
  std::size_t chunk;  // problems per kernel call: B with need_weights, else the scratch's share

  AttentionPlan(std::size_t B_, std::size_t n_, std::size_t d_model_, std::size_t d_k_,
                std::size_t d_v_, bool per_entry_, int heads, std::size_t word_, bool masked_,
                bool mapped_, bool need_weights_)
      : B(B_),
        n(n_),
        d_model(d_model_),
        d_k(d_k_),
        d_v(d_v_),
        H(heads < 1 ? 1 : heads),
        word(word_),
        per_entry(per_entry_),
        masked(masked_),
        mapped(mapped_),
        need_weights(need_weights_) {
    const double per_problem = 2.0 * double(H) * double(n) * double(n) * double(word);
    chunk = need_weights ? B
                         : std::size_t(std::clamp(std::floor(kScratchBytes / per_problem), 1.0,
                                                  double(std::max<std::size_t>(B, 1))));
  }
  // The elements of each output, in kOutputs' order.
  double elements(int i) const {
    const double rows = double(B) * double(n);
    switch (i) {
      case 0:
      case 1:
        return rows * double(d_k);
      case 2:
      case 5:
        return rows * double(d_v);
      default:
        return double(B) * double(H) * double(n) * double(n);
    }
  }
  std::vector<std::size_t> shape(int i) const {
    if (i == 0 || i == 1) return {B, n, d_k};
    if (i == 2 || i == 5) return {B, n, d_v};
    return {B, H, n, n};
  }
  // Bytes allocated by a call given the outputs in `given` (of them, scores and weights).
  std::pair<double, double> bytes(const std::vector<std::string>& given) const {
    double total = 0, square = 0;
    for (int i = 0; i < 6; ++i) {
      const bool is_square = i == 3 || i == 4;
      if (is_square && !need_weights) continue;
      if (std::find(given.begin(), given.end(), kOutputs[i]) != given.end()) continue;
      total += double(word) * elements(i);
      if (is_square) square += double(word) * elements(i);
    }
    if (!need_weights) {
      square = 2.0 * double(word) * double(chunk) * double(H) * double(n) * double(n);
      total += square;
    }
    total += attention_compute_bytes(chunk, n, d_model, d_k, d_v, !per_entry, int(H), masked,
                                     mapped, word);
    return {total, square};
  }
};

nb::tuple attention_bytes(std::size_t batch, std::size_t n, std::size_t d_model, std::size_t d_k,
                          std::size_t d_v, bool per_entry, int heads, std::size_t word, bool masked,
                          bool mapped, bool need_weights, const std::vector<std::string>& given) {
  const AttentionPlan plan(batch, n, d_model, d_k, d_v, per_entry, heads, word, masked, mapped,
                           need_weights);
  const auto [total, square] = plan.bytes(given);
  return nb::make_tuple(total, square);
}

template <class T>
nb::tuple attention(In3<T> x, In3<T> w_q, In3<T> w_k, In3<T> w_v, bool per_entry, int heads,
                    bool causal, double scale, std::optional<Mask> mask, std::optional<Map<T>> map,
                    const std::string& device, int threads, bool progress, bool main_thread,
                    bool need_weights, nb::dict given) {
  const AttentionPlan plan(x.shape(0), x.shape(1), x.shape(2), w_q.shape(2), w_v.shape(2),
                           per_entry, heads, sizeof(T), mask.has_value(), map.has_value(),
                           need_weights);
  const std::size_t B = plan.B, n = plan.n, d_model = plan.d_model, H = plan.H;
  const std::size_t wc = per_entry ? B : 1;
  const auto check = [&](const char* name, const In3<T>& w, std::size_t cols) {
    if (w.shape(0) != wc || w.shape(1) != d_model || w.shape(2) != cols)
      throw nb::value_error(
          (std::string(name) + ": not of shape " + shape_text({wc, d_model, cols})).c_str());
  };
  check("w_q", w_q, plan.d_k);
  check("w_k", w_k, plan.d_k);
  check("w_v", w_v, plan.d_v);
  if (mask &&
      (mask->shape(0) != B || mask->shape(1) != H || mask->shape(2) != n || mask->shape(3) != n))
    throw nb::value_error("mask: not of shape (batch, heads, n, n)");
  if (map && (map->shape(0) != B || map->shape(1) != H || map->shape(2) != n || map->shape(3) != n))
    throw nb::value_error("map: not of shape (batch, heads, n, n)");
  // The caller's outputs, checked, then the others allocated.
  T* ptr[6] = {};
  std::unique_ptr<T[], FreeDeleter> made[6];
  for (int i = 0; i < 6; ++i) {
    if (!given.contains(kOutputs[i])) continue;
    const Out<T> a = nb::cast<Out<T>>(given[kOutputs[i]]);
    const std::vector<std::size_t> want = plan.shape(i);
    bool fits = a.ndim() == want.size();
    for (std::size_t d = 0; fits && d < want.size(); ++d) fits = a.shape(d) == want[d];
    if (!fits || ((i == 3 || i == 4) && !need_weights))
      throw nb::value_error(
          (std::string("out ") + kOutputs[i] + ": not of shape " + shape_text(want)).c_str());
    ptr[i] = a.data();
  }
  for (int i = 0; i < 6; ++i) {
    if (ptr[i] || ((i == 3 || i == 4) && !need_weights)) continue;
    made[i] = large_buffer<T>(std::size_t(plan.elements(i)));
    ptr[i] = made[i].get();
  }
  // Without need_weights: the scratch for a group of plan.chunk problems.
  std::unique_ptr<T[], FreeDeleter> scratch;
  const std::size_t square = H * n * n;
  if (!need_weights) scratch = large_buffer<T>(2 * plan.chunk * square);

  struct Ran {
    std::string backend;
    KernelTime time;
  };
  const Ran ran = guarded(main_thread, [&] {
    const LogLevel level(progress);
    const Backend backend = select_backend(device, threads);
    Ran r{backend.name(), {}};
    for (std::size_t b0 = 0; b0 < B; b0 += plan.chunk) {
      const std::size_t b = std::min(plan.chunk, B - b0);
      AttentionProblem<T> a;
      a.shape =
          attention_shape(b, n, d_model, plan.d_k, plan.d_v, heads, !per_entry, causal, scale);
      a.x = x.data() + b0 * n * d_model;
      const std::size_t w0 = per_entry ? b0 * d_model : 0;
      a.w_q = w_q.data() + w0 * plan.d_k;
      a.w_k = w_k.data() + w0 * plan.d_k;
      a.w_v = w_v.data() + w0 * plan.d_v;
      a.mask = mask ? mask->data() + b0 * square : nullptr;
      a.map = map ? map->data() + b0 * square : nullptr;
      a.q = ptr[0] + b0 * n * plan.d_k;
      a.k = ptr[1] + b0 * n * plan.d_k;
      a.v = ptr[2] + b0 * n * plan.d_v;
      a.scores = need_weights ? ptr[3] + b0 * square : scratch.get();
      a.weights = need_weights ? ptr[4] + b0 * square : scratch.get() + plan.chunk * square;
      a.out = ptr[5] + b0 * n * plan.d_v;
      attention_compute(a, backend, SignalMonitor(), r.time);
    }
    return r;
  });
  nb::dict info;
  info["backend"] = ran.backend;
  info["kernel_seconds"] = ran.time.wall;
  info["kernel_cpu_seconds"] = ran.time.cpu;
  nb::object outs[6];
  for (int i = 0; i < 6; ++i) outs[i] = owned(std::move(made[i]), plan.shape(i));
  return nb::make_tuple(outs[0], outs[1], outs[2], outs[3], outs[4], outs[5], info);
}

// A table option's name in Python: "--per-seed" is per_seed.
std::string python_name(const std::string& flag) {
  std::string name = flag.substr(flag.find_first_not_of('-'));
  std::replace(name.begin(), name.end(), '-', '_');
  return name;
}

// host/output.hpp's refusal of an existing file, "PATH exists; pass --force to replace it",
// without the command line's --force, which Python does not have: "PATH exists". Whether why
// was that refusal.
bool without_force(std::string& why) {
  static const std::string kForce = "; pass --force to replace it";
  const std::size_t at = why.find(kForce);
  if (at == std::string::npos) return false;
  why.erase(at, kForce.size());
  return true;
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
    o.experiments = {name};
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
      const std::string name = python_name(p.flag);
      const std::filesystem::path path(given.at(p.flag));
      const std::filesystem::path dir = path.parent_path().empty() ? "." : path.parent_path();
      if (!std::filesystem::is_directory(dir))
        throw FileError(name + " " + path.string() + ": no folder " + dir.string());
      try {
        refuse_existing(path.string(), false);
      } catch (const std::runtime_error& err) {
        std::string why = err.what();
        without_force(why);
        throw FileError(name + " " + why);
      }
      try {  // a read-only or full file system, no permission: OSError before any work
        probe_writable(name, path.string());
      } catch (const std::runtime_error& err) {
        throw FileError(err.what());
      }
    }
    Provenance prov;
    prov.command_line = command_line;
    prov.start_utc = utc_now_iso8601();
    const auto t0 = std::chrono::steady_clock::now();
    const Backend backend = select_backend(device, threads);
    Made m;
    try {
      m.tables = run_experiment(*e, o, given, backend);
    } catch (const std::runtime_error& err) {
      // A file the table writes beside its option's own (attention-sweep's FILE.seeds.npy),
      // refused by refuse_existing before any work.
      std::string why = err.what();
      if (without_force(why)) throw FileError(why);
      throw;
    }
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

// ---- reading files as demo reads them ----

// A file's bytes, read by host/input.hpp's read_regular_file (a regular file, opened without
// waiting, at most the memory available); OSError with its reason.
std::string read_input(const std::string& path) {
  const double budget = std::fmax(0.0, std::fmin(memory_available(), 0x1p62));
  std::string bytes;
  std::string error;
  {
    nb::gil_scoped_release release;
    try {
      bytes = read_regular_file(path, static_cast<std::size_t>(budget));
    } catch (const std::exception& e) {
      error = e.what();
    }
  }
  if (!error.empty()) raise_os_error(path + ": " + error);
  return bytes;
}

nb::bytes read_bytes(const std::string& path) {
  const std::string bytes = read_input(path);
  return nb::bytes(bytes.data(), bytes.size());
}

// (descr, shape, data): data a 1-D uint8 array that numpy owns, the elements in C order.
nb::tuple read_npy(const std::string& path) {
  auto a = std::make_unique<NpyArray>();
  try {
    *a = npy_array("", path, read_input(path));
  } catch (const nb::python_error&) {
    throw;
  } catch (const std::runtime_error& e) {
    throw nb::value_error(e.what() + 1);  // " PATH: why": no label
  }
  const std::string descr = a->descr;
  const std::vector<std::size_t> shape = a->shape;
  const std::size_t size = a->data.size();
  std::uint8_t* data = reinterpret_cast<std::uint8_t*>(a->data.data());
  nb::capsule owner(a.release(), [](void* p) noexcept { delete static_cast<NpyArray*>(p); });
  const std::size_t dims[1] = {size};
  nb::object bytes = nb::cast(nb::ndarray<nb::numpy, std::uint8_t>(data, 1, dims, owner));
  return nb::make_tuple(descr, nb::cast(shape), bytes);
}

// A result JSON's text, parsed with demo's limits (host/compare.hpp) and written again.
std::string read_json(const std::string& path) {
  const std::string text = read_input(path);
  try {
    return parse_result_text(text).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  } catch (const std::exception& e) {
    throw nb::value_error((path + ": " + e.what()).c_str());
  }
}

}  // namespace

NB_MODULE(_core, m) {
  auto logger = one_line_stderr_logger("attnlab", "attnlab: %*");
  spdlog::set_default_logger(logger);
  spdlog::set_level(spdlog::level::warn);

  m.attr("version") = kVersion;
  m.attr("git_commit") = kGitCommit;
  m.attr("built_with_cuda") = kBuiltWithCuda;
  m.def("attention", &attention<float>, "x"_a.noconvert(), "w_q"_a.noconvert(), "w_k"_a.noconvert(),
        "w_v"_a.noconvert(), "per_entry"_a, "heads"_a, "causal"_a, "scale"_a, "mask"_a.none(),
        "map"_a.noconvert().none(), "device"_a, "threads"_a, "progress"_a, "main_thread"_a,
        "need_weights"_a, "given"_a);
  m.def("attention", &attention<double>, "x"_a.noconvert(), "w_q"_a.noconvert(),
        "w_k"_a.noconvert(), "w_v"_a.noconvert(), "per_entry"_a, "heads"_a, "causal"_a, "scale"_a,
        "mask"_a.none(), "map"_a.noconvert().none(), "device"_a, "threads"_a, "progress"_a,
        "main_thread"_a, "need_weights"_a, "given"_a);
  m.def("attention_bytes", &attention_bytes, "batch"_a, "n"_a, "d_model"_a, "d_k"_a, "d_v"_a,
        "per_entry"_a, "heads"_a, "word"_a, "masked"_a, "mapped"_a, "need_weights"_a, "given"_a);
  // Every file --per-seed PATH can write, each optional array's included (which of them a run
  // writes depends on its request): the Python layer refuses a run where any of them exists,
  // and reads back those the run wrote.
  m.def(
      "per_seed_files", [](const std::string& path) { return PerSeedMaps::every_file(path); },
      "path"_a);
  m.def("read_bytes", &read_bytes, "path"_a);
  m.def("read_npy", &read_npy, "path"_a);
  m.def("read_json", &read_json, "path"_a);
  m.def("memory_available", &memory_available);
  m.def("human_bytes", &human_bytes, "bytes"_a);
  m.def("parse_int", &parse_int, "option"_a, "text"_a, "lo"_a, "hi"_a);
  m.def("parse_real", &parse_real, "option"_a, "text"_a, "lo"_a, "hi"_a, "lo_open"_a);
  m.def("parse_threads", &parse_threads, "option"_a, "text"_a);
  m.def("parse_choice", &parse_choice, "option"_a, "text"_a, "allowed"_a);
  m.def("experiments", &experiments_list);
  m.def("run_table", &run_table, "name"_a, "given"_a, "device"_a, "threads"_a, "progress"_a,
        "main_thread"_a, "command_line"_a);
}
