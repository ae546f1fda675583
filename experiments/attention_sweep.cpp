// attention_sweep.cpp: attention-map variability at any size. Attention (--words n, --d-model,
// --d-k, --d-v, --heads, --causal, --scale, --train qk|qkv|qkvo) trained by --optimizer sgd|adam
// from numpy's default_rng(seed) start for every seed in --seeds, on one task (the same X and
// target for every seed; lesson, previous and reverse have a known map), then: how far apart
// are the seeds' attention maps, how far from the known map, and how far apart are their
// outputs? Over the converged seeds, and over every finite one beside them; diverged runs are
// counted. A comma-separated list for --d-k, --heads, --init-scale, --lr, --scale, --optimizer,
// --train, --map, --causal or --inputs runs every combination (a grid) with the same seeds, one
// block of rows each. --map uniform|known freezes every head's map (uniform over the visible keys,
// or the task's known map) and trains W_V (and W_O) alone. Spec: docs/spec/VARIABILITY.md, with
// its versions 2 and 3.
//
// Measures (natural logarithms; source: Wiegreffe and Pinter, "Attention is not not
// Explanation", EMNLP 2019, seed variance; Jain and Wallace, "Attention is not Explanation",
// NAACL 2019): experiments/map_measures.hpp.
//
// The work goes through the chunk driver (host/chunks.hpp): chunks of consecutive seeds (whole
// pairs), so ranks, --shard parts, --checkpoint and resume give the bits of one process. Memory
// is bounded at any seed count: a chunk sends a MapSummary, never its maps. The JSD of each seed
// to the mean map needs the mean of all seeds first, so it is a second pass: over the seeds'
// results kept by the first pass when they fit --map-memory, else by training every seed again
// (a second job on the driver: twice the training, no memory or disk per seed). With --shard,
// the parts hold the first pass and `demo merge` runs the second.
#include <spdlog/spdlog.h>

#include <algorithm>
#include <any>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <sstream>
#include <stdexcept>

#include "experiments/interventions.hpp"
#include "experiments/map_measures.hpp"
#include "experiments/per_seed_maps.hpp"
#include "experiments/quantile_sketch.hpp"
#include "experiments/registry.hpp"
#include "host/chunks.hpp"
#include "host/format.hpp"
#include "host/memory.hpp"
#include "host/output.hpp"
#include "host/parse.hpp"
#include "host/plots.hpp"
#include "host/progress.hpp"
#include "moments.hpp"

namespace attn {

namespace {

const std::vector<double> kProbs = {0.05, 0.25, 0.5, 0.75, 0.95};
constexpr int kJsdBins = 40;             // the JSD histogram: kJsdBins bins on [0, ln 2]
constexpr std::size_t kScatter = 4000;   // seeds (the first ones) in the loss-vs-JSD figure
constexpr int kAdversaryWarnWords = 24;  // --adversary on is warned of from this many words
constexpr int kMaxSize = 1024;           // --words, --d-model, --d-k, --d-v at most

constexpr int kMaxConfigurations = 1024;  // a grid's combinations at most
constexpr int kMaxInputs = 1 << 20;       // --inputs and --test-inputs at most
constexpr int kDefaultTestInputs = 64;    // --test-inputs auto with more than one input

enum class Task { lesson, previous, reverse, random, teacher };

struct Shape {
  int n, d_model, d_k, d_v, heads, r0;
  Task task;
  bool train_values, train_output;
  head::MapMode map = head::MapMode::learned;
  int inputs = 1, test_inputs = 0;     // B, T
  int vocab = 0;                       // V (token tasks; 0: X = I_n)
  int rows() const { return n - r0; }  // |R|
  int map_size() const { return rows() * n; }
  int d_out() const { return train_output ? d_model : d_v; }
  // The tasks whose inputs are words (one-hot tokens and positions, or X = I_n): a key the known
  // map picks for each loss row.
  bool token() const { return task != Task::random && task != Task::teacher; }
  // Inputs of normals (random, teacher): the peers' --lr and --init-scale.
  bool normal_inputs() const { return !token(); }
  bool many() const { return inputs > 1 || test_inputs > 0; }  // a version-3 configuration
  int measured() const { return test_inputs > 0 ? test_inputs : inputs; }
  int measured_from() const { return test_inputs > 0 ? inputs : 0; }  // its first input
};

// A real in (lo, hi], or "auto" (the default), which reads as NaN: the task then picks the value.
Param auto_real(std::string flag, std::string help, double lo, double hi) {
  Param p = param::real(std::move(flag), "1", std::move(help), lo, hi, true);
  p.kind = "X";  // as the other tables' --lr; the default shows "auto"
  p.default_text = "auto";
  auto inner = p.parse;
  p.parse = [inner](const std::string& f, const std::string& text) -> Value {
    if (text == "auto") return std::numeric_limits<double>::quiet_NaN();
    return inner(f, text);
  };
  return p;
}

// --scale: sqrt (c = 1/√(d_k/H)), none (c = 1) or a positive number X (c = X), as text.
Param scale_param() {
  Param p = param::real("--scale", "1", "", 0, 1e6, true);
  p.kind = "sqrt|none|X";
  p.default_text = "sqrt";
  p.help =
      "Scores times c: sqrt (c = 1/sqrt(d_k/H), the lesson's), none (c = 1) or a number X (c = X)";
  auto inner = p.parse;
  p.parse = [inner](const std::string& f, const std::string& text) -> Value {
    if (text == "sqrt" || text == "none") return text;
    try {
      inner(f, text);
    } catch (const std::invalid_argument&) {
      throw std::invalid_argument(f + " " + text + ": sqrt, none or a number in (0, 1e6]");
    }
    return text;
  };
  return p;
}

// The value a grid item stands for, for comparing items: its parsed value; a number given as
// text (--scale 0.5) as that number, so that 2 and 02, or 0.5 and 5e-1, are one value.
std::string value_key(const Value& v) {
  if (const auto* d = std::get_if<double>(&v)) return std::isnan(*d) ? "auto" : round_trip(*d);
  if (const auto* i = std::get_if<std::int64_t>(&v)) return std::to_string(*i);
  if (const auto* t = std::get_if<std::string>(&v)) {
    if (*t == "none") return round_trip(1);  // --scale none: c = 1
    char* end = nullptr;
    const double x = std::strtod(t->c_str(), &end);
    return !t->empty() && end == t->c_str() + t->size() ? round_trip(x) : *t;
  }
  return "";
}

// An integer in [lo, hi], or "auto" (the default), which check_shape resolves.
Param integer_or_auto(const std::string& flag, const std::string& help, std::int64_t lo,
                      std::int64_t hi) {
  Param p = param::integer(flag, std::to_string(lo), help, lo, hi);
  p.default_text = "auto";
  auto inner = p.parse;
  p.parse = [inner](const std::string& f, const std::string& text) -> Value {
    if (text == "auto") return text;
    inner(f, text);
    return text;
  };
  p.kind = "N|auto";
  return p;
}

// An on|off option that alone means on.
Param switch_param(const std::string& flag, const std::string& default_value,
                   const std::string& help) {
  Param p = param::choice(flag, default_value, help, {"on", "off"});
  p.implicit_value = "on";
  return p;
}

// --nudge on|off: every seed trained a second time from W_Q[0][0] one ulp up.
Param nudge_param() {
  return switch_param("--nudge", "off",
                      "Train every seed again from W_Q[0][0] one ulp up and measure how far "
                      "its map moves (rounding-sensitive seeds; twice the training)");
}

// --adversary on|off: the adversarial map searched for every row of every seed.
Param adversary_param() {
  return switch_param("--adversary", "on",
                      "Search each seed's adversarial map within --epsilon for every head, "
                      "measured input and loss row (off: skipped, its rows left out)");
}

// A grid axis: a comma-separated list of `inner`'s values, each checked by inner's parser (so
// each is refused with inner's one line), a value given twice refused (compared as values: 2
// and 02 are one d_k); the value is the list of texts, each parsed again by inner for its
// configuration.
Param grid_axis(Param inner) {
  Param p = inner;  // the same kind (a flag several tables declare has one): the help says lists
  p.parse = [parse = inner.parse](const std::string& f, const std::string& text) -> Value {
    std::vector<std::string> items = split_list(text);
    if (items.empty()) throw std::invalid_argument(f + ": empty list");
    std::vector<std::string> keys;
    for (std::size_t i = 0; i < items.size(); ++i) {
      keys.push_back(value_key(parse(f, items[i])));
      for (std::size_t k = 0; k < i; ++k)
        if (keys[k] == keys[i])
          throw std::invalid_argument(repeated_value(f, text, items[k], items[i]));
    }
    return items;
  };
  return p;
}

// The grid's axes, in the order their combinations are walked (the first slowest), each with
// its single-value parser.
const std::vector<Param>& axes() {
  static const std::vector<Param> a = [] {
    Param causal =
        param::choice("--causal", "off",
                      "Causal mask: query i sees keys j <= i (--causal alone: on)", {"on", "off"});
    // One option with the other tables' --d-k, a list in each (here a grid axis): one kind.
    Param d_k = param::integer("--d-k", "2", "d_k (columns of W_Q and W_K)", 1, kMaxSize);
    d_k.kind = "LIST";
    return std::vector<Param>{
        d_k,
        param::integer("--heads", "1", "Heads H (contiguous blocks of d_k/H and d_v/H columns)", 1,
                       kMaxSize),
        auto_real("--init-scale",
                  "Initial weights: numpy normals times X; auto: 1 for the one-hot tasks (the "
                  "lesson's), 0.25 for random and teacher",
                  0, 1e6),
        auto_real("--lr",
                  "Learning rate; auto: 0.5 for the one-hot tasks (the lesson's), 0.01 for random "
                  "and teacher",
                  0, 1e6),
        scale_param(),
        param::choice("--optimizer", "sgd",
                      "sgd (W -= lr g) or adam (beta1 0.9, beta2 0.999, eps 1e-8)",
                      {"sgd", "adam"}),
        param::choice("--train", "qkv",
                      "qk (W_V fixed to I), qkv, or qkvo (an output projection W_O too)",
                      {"qk", "qkv", "qkvo"}),
        param::choice("--map", "learned",
                      "Each head's map: learned (the softmax of its scores), or frozen: uniform "
                      "over the visible keys, or known (the task's known map); frozen, only W_V "
                      "(and W_O) train, W_Q and W_K keep their starting draws",
                      {"learned", "uniform", "known"}),
        causal,
        param::integer("--inputs", "1",
                       "Training inputs B: the loss and its gradient are the mean over them", 1,
                       kMaxInputs)};
  }();
  return a;
}

// One configuration of the grid: a value of every axis, as text and parsed.
struct Config {
  std::string name;  // "d_k=4 scale=none" (the axes with more than one value), "" for one
  std::map<std::string, std::string> text;
  std::map<std::string, Value> value;
  template <class T>
  const T& get(const std::string& flag) const {
    return std::get<T>(value.at(flag));
  }
};

// Every combination of the axes' values, the first axis slowest. Refused past
// kMaxConfigurations.
std::vector<Config> grid_of(const RunContext& ctx) {
  std::vector<Config> configs(1);
  for (const Param& axis : axes()) {
    const auto& items = ctx.get<std::vector<std::string>>(axis.flag);
    const double size = static_cast<double>(configs.size()) * static_cast<double>(items.size());
    if (size > kMaxConfigurations)
      throw std::invalid_argument(axis.flag + ": a grid of more than " +
                                  std::to_string(kMaxConfigurations) +
                                  " configurations; run it as several commands");
    std::vector<Config> next;
    for (const Config& c : configs)
      for (const std::string& item : items) {
        Config d = c;
        d.text[axis.flag] = item;
        d.value[axis.flag] = axis.parse(axis.flag, item);
        if (items.size() > 1) {
          std::string key = axis.flag.substr(2);
          std::replace(key.begin(), key.end(), '-', '_');
          d.name += (d.name.empty() ? "" : " ") + key + "=" + item;
        }
        next.push_back(std::move(d));
      }
    configs = std::move(next);
  }
  return configs;
}

Task task_of(const std::string& name) {
  if (name == "lesson") return Task::lesson;
  if (name == "previous") return Task::previous;
  if (name == "reverse") return Task::reverse;
  if (name == "teacher") return Task::teacher;
  return Task::random;
}

// --lr and --init-scale when "auto": the lesson's 0.5 and 1 for the token tasks (spec, "Start
// and training"); for --task random and teacher the numpy and PyTorch peers' 0.01 and 0.25
// (bench/peers/numpy/numpy_head.py), where gradient descent is stable: with the lesson's values
// every seed of the n = 8, d = 16 random task diverges (the loss's curvature in W_V grows with
// n and d_model).
double auto_value(const Config& cfg, const std::string& flag, bool token) {
  const double v = cfg.get<double>(flag);
  if (!std::isnan(v)) return v;
  if (flag == "--lr") return token ? 0.5 : 0.01;
  return token ? 1.0 : 0.25;
}

// Every refusal of one configuration, before any work, as one line (std::invalid_argument).
Shape check_shape(const RunContext& ctx, const Config& cfg) {
  Shape s;
  const std::string where = cfg.name.empty() ? "" : " (" + cfg.name + ")";
  const auto refuse = [&](const std::string& why) { throw std::invalid_argument(why + where); };
  s.n = static_cast<int>(ctx.get<std::int64_t>("--words"));
  const std::string task = ctx.get<std::string>("--task");
  s.task = task_of(task);
  s.vocab = static_cast<int>(ctx.get<std::int64_t>("--vocab"));
  // The token tasks' inputs fix their width (X = I_n, or tokens then positions): auto there.
  const std::string d_model = ctx.get<std::string>("--d-model");
  s.d_model = d_model != "auto" ? std::stoi(d_model) : s.token() ? s.vocab + s.n : 2;
  s.d_k = static_cast<int>(cfg.get<std::int64_t>("--d-k"));
  s.heads = static_cast<int>(cfg.get<std::int64_t>("--heads"));
  const std::string d_v = ctx.get<std::string>("--d-v");
  s.d_v = d_v == "auto" ? s.d_model : std::stoi(d_v);
  const std::string train = cfg.get<std::string>("--train");
  s.train_values = train != "qk";
  s.train_output = train == "qkvo";
  s.inputs = static_cast<int>(cfg.get<std::int64_t>("--inputs"));
  const std::string test = ctx.get<std::string>("--test-inputs");
  s.test_inputs = test == "auto" ? (s.inputs > 1 ? kDefaultTestInputs : 0) : std::stoi(test);
  if (s.d_k % s.heads != 0 || s.d_v % s.heads != 0)
    refuse("--heads " + std::to_string(s.heads) + " must divide --d-k " + std::to_string(s.d_k) +
           " and --d-v " + std::to_string(s.d_v) + " (each head takes a block of their columns)");
  if (!s.train_values && s.d_v != s.d_model)
    refuse("--train qk fixes W_V to the identity, so --d-v must equal --d-model; got " +
           std::to_string(s.d_v) + " and " + std::to_string(s.d_model));
  if (!s.token() && ctx.settings.given("--vocab"))
    refuse("--vocab: --task " + task +
           " draws its inputs as normals; a vocabulary is for the "
           "token tasks (lesson, previous, reverse)");
  if (s.task != Task::teacher)
    for (const char* flag : {"--teacher-scale", "--found-below"})
      if (ctx.settings.given(flag))
        refuse(std::string(flag) + ": it applies to --task teacher, not --task " + task);
  if (s.token()) {
    if (s.n < 2)
      refuse("--task " + task + " needs --words 2 or more (a query and a word to attend to); got " +
             std::to_string(s.n));
    if (s.vocab == 0) {
      if (s.d_model != s.n)
        refuse("--task " + task + ": --d-model must equal --words (X = I_n); got " +
               std::to_string(s.d_model) + " and " + std::to_string(s.n));
      if (s.inputs > 1)
        refuse("--inputs " + std::to_string(s.inputs) + " with --task " + task +
               " and no --vocab: every input would be X = I_n; give --vocab V (tokens and "
               "positions)");
      if (s.test_inputs > 0)
        refuse("--test-inputs " + std::to_string(s.test_inputs) + " with --task " + task +
               " and no --vocab: a held-out input would be X = I_n, the training input");
    } else if (s.vocab == 1 && (s.inputs > 1 || s.test_inputs > 0)) {
      refuse("--vocab 1 with --task " + task + " and " +
             (s.inputs > 1 ? "--inputs " + std::to_string(s.inputs)
                           : "--test-inputs " + std::to_string(s.test_inputs)) +
             ": every input would be one sequence (token 0 at every position); give --vocab 2 "
             "or more");
    } else if (s.d_model != s.vocab + s.n) {
      refuse("--task " + task + " --vocab " + std::to_string(s.vocab) +
             ": --d-model must be the vocabulary plus the positions, " +
             std::to_string(s.vocab + s.n) + " (--vocab + --words); got " +
             std::to_string(s.d_model));
    }
    if (s.d_out() != s.d_model)
      refuse("--task " + task + ": the output width (" +
             std::string(s.train_output ? "d_model, with --train qkvo" : "--d-v") +
             ") must equal --d-model (the targets are input rows); got " +
             std::to_string(s.d_out()));
  }
  s.r0 = s.task == Task::lesson ? s.n - 1 : s.task == Task::previous ? 1 : 0;
  // --map: a frozen map leaves W_V (and W_O) to train; known needs the task's known map, one of
  // the keys each query sees.
  const std::string map = cfg.get<std::string>("--map");
  s.map = map == "uniform" ? head::MapMode::uniform
          : map == "known" ? head::MapMode::known
                           : head::MapMode::learned;
  if (s.map != head::MapMode::learned && !s.train_values)
    refuse("--map " + map +
           " with --train qk: the maps are frozen and W_V is the identity, so nothing would "
           "train; use --train qkv or qkvo");
  if (s.map == head::MapMode::known && s.task == Task::random)
    refuse(
        "--map known: --task random has no known map (lesson, previous, reverse and teacher "
        "have one)");
  if (s.map == head::MapMode::known && s.task == Task::reverse &&
      cfg.get<std::string>("--causal") == "on")
    refuse(
        "--map known with --task reverse and --causal: queries i < (n-1)/2 cannot see their "
        "known key n-1-i, so the known map is not a map of the keys they see");
  return s;
}

head::Model model_of(const RunContext& ctx, const Config& cfg, const Shape& s) {
  head::Model m;
  m.n = s.n;
  m.d_model = s.d_model;
  m.d_k = s.d_k;
  m.d_v = s.d_v;
  m.heads = s.heads;
  m.r0 = s.r0;
  m.inputs = s.inputs;
  m.train_values = s.train_values;
  m.train_output = s.train_output;
  m.causal = cfg.get<std::string>("--causal") == "on";
  const std::string scale = cfg.get<std::string>("--scale");
  m.scale = scale == "sqrt"   ? head::Scale::sqrt
            : scale == "none" ? head::Scale::none
                              : head::Scale::factor;
  if (m.scale == head::Scale::factor) m.scale_factor = parse_real("--scale", scale, 0, 1e6, true);
  m.optimizer =
      cfg.get<std::string>("--optimizer") == "adam" ? head::Optimizer::adam : head::Optimizer::sgd;
  m.steps = static_cast<int>(ctx.get<std::int64_t>("--steps"));
  m.lr = auto_value(cfg, "--lr", s.token());
  m.grad = ctx.get<std::string>("--grad") == "numeric" ? head::Grad::numeric : head::Grad::analytic;
  m.h = ctx.get<double>("--h");
  m.schedule = ctx.get<std::string>("--schedule") == "sequential" ? head::Schedule::sequential
                                                                  : head::Schedule::simultaneous;
  m.init_scale = auto_value(cfg, "--init-scale", s.token());
  m.map = s.map;  // (known: Model::known is set once the task's maps are made)
  return m;
}

// The known map M* of a token task (spec "Tasks", versions 2 and 3): for each loss row i of R in
// order, the key it should attend to; empty for the other tasks.
std::vector<int> known_keys(const Shape& s) {
  std::vector<int> keys;
  if (!s.token()) return keys;
  for (int i = s.r0; i < s.n; ++i)
    keys.push_back(s.task == Task::lesson ? 0 : s.task == Task::previous ? i - 1 : s.n - 1 - i);
  return keys;
}

// --teacher-scale: auto is 1/√d_model, so that the teacher's scores are of order one.
double teacher_scale(const RunContext& ctx, const Shape& s) {
  const double v = ctx.get<double>("--teacher-scale");
  return std::isnan(v) ? 1.0 / std::sqrt(static_cast<double>(s.d_model)) : v;
}

// A configuration's inputs, shared by all its seeds (spec "Many inputs"): the B training inputs,
// then the T held-out ones, stacked as head.hpp's Model takes them.
struct TaskData {
  std::vector<double> x, y;          // (B + T) n x d_model, (B + T) n x d_out
  std::vector<double> teacher;       // --task teacher: the teacher's weights (weights_size)
  std::vector<double> teacher_maps;  // its maps on the measured inputs (M x H x |R| x n)
  // --map known: every input's known map, each head's ((B + T) x H x |R| x n, Model::known's
  // layout): M*'s one-hot rows (token tasks), the teacher's head h for head h (teacher).
  std::vector<double> known_maps;
};

// The task's inputs (spec "Tasks over many inputs"), from numpy default_rng(--task-seed): each
// input drawn whole (X, then Y where the task draws one) before the next, the training inputs
// first. Token tasks: t = g.integers(0, V, size=n), X_i = [one_hot_V(t_i), one_hot_n(i)], the
// target Y_i = X_{M*(i)} on the loss rows (V = 0: X = I_n, one input, no draw). random: X =
// g.normal(size=(n, d_model)), then Y = g.normal(size=(n, d_out)). teacher: the teacher's
// weights first, drawn as a seed's start at --teacher-scale, then each X = g.normal(size=(n,
// d_model)) and Y the teacher's output on it (evaluate_inputs, every row). With --map known, the
// known maps of every input too.
TaskData make_task(const RunContext& ctx, const Shape& s, const head::Model& m) {
  TaskData t;
  const int d = s.d_out(), count = s.inputs + s.test_inputs;
  const std::size_t per_x = static_cast<std::size_t>(s.n) * s.d_model,
                    per_y = static_cast<std::size_t>(s.n) * d;
  t.x.assign(per_x * count, 0.0);
  t.y.assign(per_y * count, 0.0);
  numpy_rng::Pcg64 g(ctx.get<std::uint64_t>("--task-seed"));
  if (s.token()) {
    const std::vector<int> keys = known_keys(s);
    for (int b = 0; b < count; ++b) {
      double* x = t.x.data() + b * per_x;
      double* y = t.y.data() + b * per_y;
      for (int i = 0; i < s.n; ++i) {
        if (s.vocab == 0) {
          x[i * s.d_model + i] = 1.0;
        } else {
          x[i * s.d_model + numpy_rng::integer_below(g, static_cast<std::uint64_t>(s.vocab))] = 1.0;
          x[i * s.d_model + s.vocab + i] = 1.0;
        }
      }
      for (int i = s.r0; i < s.n; ++i)
        std::copy_n(x + keys[i - s.r0] * s.d_model, s.d_model, y + i * d);
    }
    if (s.map == head::MapMode::known) {
      t.known_maps.assign(static_cast<std::size_t>(count) * s.heads * s.map_size(), 0.0);
      for (std::size_t row = 0; row < t.known_maps.size() / s.n; ++row)
        t.known_maps[row * s.n + keys[row % s.rows()]] = 1.0;
    }
    return t;
  }
  if (s.task == Task::random) {
    for (int b = 0; b < count; ++b) {
      for (std::size_t e = 0; e < per_x; ++e) t.x[b * per_x + e] = numpy_rng::normal(g);
      for (std::size_t e = 0; e < per_y; ++e) t.y[b * per_y + e] = numpy_rng::normal(g);
    }
    return t;
  }
  // The teacher: the student's form with its map learned (the softmax of its scores).
  head::Model teacher = m;
  teacher.nudge = false;
  teacher.map = head::MapMode::learned;
  teacher.known = nullptr;
  t.teacher.assign(head::weights_size(m), 0.0);
  auto store = [&t](std::int64_t at, double v) { t.teacher[at] = v; };
  head::draw_weights(teacher, g, teacher_scale(ctx, s), store);
  for (double& v : t.x) v = numpy_rng::normal(g);
  const std::int64_t size = head::evaluation_size(m, count);
  std::vector<double> out(size);
  head::evaluate_seeds_cpu(teacher, t.teacher.data(), 0, 1, t.x.data(), t.y.data(), nullptr, count,
                           out.data());
  const std::int64_t maps = static_cast<std::int64_t>(count) * s.heads * s.map_size();
  std::copy_n(out.data() + 1 + maps, per_y * count, t.y.data());  // R = every row
  const std::int64_t one = static_cast<std::int64_t>(s.heads) * s.map_size();
  if (s.map == head::MapMode::known) t.known_maps.assign(out.data() + 1, out.data() + 1 + maps);
  t.teacher_maps.assign(out.data() + 1 + s.measured_from() * one,
                        out.data() + 1 + (s.measured_from() + s.measured()) * one);
  return t;
}

// The known map the measures take (KnownMap, map_measures.hpp): M*'s keys for the token tasks,
// the teacher's head-averaged maps on the measured inputs for teacher.
KnownMap known_map(const RunContext& ctx, const Shape& s, const TaskData& t,
                   const SeedResults& shape) {
  KnownMap k;
  k.keys = known_keys(s);
  if (s.task == Task::teacher) {
    std::vector<double> buffer;
    const double* p = shape.mean_over_heads(t.teacher_maps.data(), buffer);
    k.maps.assign(p, p + shape.map_size());
    k.found_below = ctx.get<double>("--found-below");
  }
  return k;
}

// Figures -----------------------------------------------------------------------------------
//
// Each figure is drawn from the table alone (its rows, t.extra, and t.run: what a result file
// holds), so a stored result draws the same figures. Titles name the configuration and the
// seeds drawn; a value that is not defined (NaN: a fraction over no seeds) is marked "n/a" where
// it would be, never drawn as 0.

using plot::run_text;
using plot::title_lines;

// The configuration as one title line, from t.run: task, words, vocabulary, d_model, d_k, heads,
// train, a frozen map, optimizer, lr, scale, causal, steps, held-out inputs and the convergence
// threshold; in a grid the axes whose values differ between its configurations are left out (the
// figure shows them).
std::string configuration_line(const Table& t) {
  std::set<std::string> varies;  // t.run's keys of the grid's axes that take several values
  if (t.run.contains("configurations") && t.run["configurations"].is_array() &&
      !t.run["configurations"].empty()) {
    const auto& list = t.run["configurations"];
    for (const auto& [key, value] : list[0].items())
      for (const auto& c : list)
        if (!c.contains(key) || c[key] != value) {
          std::string k = key;
          std::replace(k.begin(), k.end(), '-', '_');
          varies.insert(k);
        }
  }
  std::string s;
  const auto add = [&](const char* key, const std::string& before, const std::string& after) {
    const std::string v = run_text(t, key);
    if (v.empty() || varies.count(key)) return;
    s += (s.empty() ? "" : ", ") + before + v + after;
  };
  add("task", "task ", "");
  add("words", "", " words");
  if (!run_text(t, "vocab").empty() && run_text(t, "vocab") != "0") add("vocab", "vocabulary ", "");
  add("d_model", "d_model ", "");
  add("d_k", "d_k ", "");
  if (run_text(t, "heads") != "1") add("heads", "heads ", "");
  add("train", "train ", "");
  if (run_text(t, "map") != "learned") add("map", "map ", " (frozen)");
  add("optimizer", "optimizer ", "");
  add("lr", "lr ", "");
  if (run_text(t, "scale") != "sqrt") add("scale", "scale ", "");
  if (run_text(t, "causal") == "on" && !varies.count("causal")) s += ", causal";
  add("steps", "", " steps");
  if (!run_text(t, "test_inputs").empty() && run_text(t, "test_inputs") != "0")
    add("test_inputs", "measured on ", " held-out inputs");
  add("converged_below", "converged: loss < ", "");
  return s;
}

// The first row of `quantity` (over `over` where the table has that column; "" any), or null.
const std::vector<Cell>* find_row(const Table& t, const std::string& quantity,
                                  const std::string& over = "") {
  const auto has = [&](const char* name) {
    return std::any_of(t.columns.begin(), t.columns.end(),
                       [&](const Column& c) { return c.name == name; });
  };
  if (!has("quantity")) return nullptr;
  const std::size_t q = t.column("quantity");
  const bool by_over = !over.empty() && has("over");
  for (const auto& r : t.rows)
    if (plot::text(r[q]) == quantity && (!by_over || plot::text(r[t.column("over")]) == over))
      return &r;
  return nullptr;
}

// The seeds of the run (each configuration's, in a grid): the count of the converged fraction's
// row; -1 when the table has none.
double seed_count(const Table& t) {
  const auto* r = find_row(t, "converged (fraction)");
  return r ? plot::num((*r)[t.column("seeds")]) : -1;
}

std::string seeds_text(const Table& t) {
  const double n = seed_count(t);
  const std::string range = run_text(t, "seeds");
  return n < 0 ? "" : plot::count(n, "seed", "seeds") + (range.empty() ? "" : " (" + range + ")");
}

// The axes a grid's configuration names vary, in their order (each name "axis=value axis=value
// ..." over the same axes); empty for a run of one (its name "").
std::vector<std::string> varied_axes(const std::vector<std::string>& names) {
  std::vector<std::string> axes;
  for (std::size_t i = 0; i < names.size(); ++i) {
    std::vector<std::string> these;
    std::istringstream words(names[i]);
    for (std::string w; words >> w;) {
      if (w.find('=') == std::string::npos) return {};
      these.push_back(w.substr(0, w.find('=')));
    }
    if (these.empty() || (i > 0 && these != axes)) return {};
    axes = std::move(these);
  }
  return axes;
}

// The categorical x axis of a grid's configurations, one position each: a tic is the
// configuration's values, one above the other, and the x label names the axes in that order
// ("inputs", or "map / inputs (top to bottom)"; whole names side by side would overlap), the
// bottom margin holding the tics, the label and a key of up to key_lines entries below (gnuplot
// places them as if a tic were one line). A run of one is "the run".
std::string configuration_axis(const std::vector<std::string>& names, int key_lines) {
  const std::vector<std::string> axes = varied_axes(names);
  std::ostringstream s;
  if (!axes.empty()) {
    std::string label;
    for (const std::string& a : axes) label += (label.empty() ? "" : " / ") + a;
    const int lines = static_cast<int>(axes.size());
    s << "set xlabel " << plot::quote(lines > 1 ? label + " (top to bottom)" : label)
      << " noenhanced offset 0," << -(lines - 1) << "\nset bmargin " << lines + 3 + key_lines
      << "\nset xtics (";
    for (std::size_t i = 0; i < names.size(); ++i) {
      std::string tic;  // the values, a "\n" between each two inside one quoted string
      std::istringstream words(names[i]);
      for (std::string w; words >> w;) {
        const std::string q = plot::quote(w.substr(w.find('=') + 1));
        tic += tic.empty() ? q.substr(0, q.size() - 1) : "\\n" + q.substr(1, q.size() - 2);
      }
      s << (i ? ", " : "") << tic << "\" " << i;
    }
    s << ") noenhanced\n";
  } else {
    s << "unset xlabel\nset xtics (";
    for (std::size_t i = 0; i < names.size(); ++i)
      s << (i ? ", " : "") << plot::quote(names[i].empty() ? "the run" : names[i]) << " " << i;
    s << ") noenhanced" << (names.size() > 4 ? " rotate by 30 right" : "") << "\n";
  }
  s << "set xrange [-0.5:" << names.size() - 0.5 << "]\n";
  return s.str();
}

// The canvas (pixels "W,H") of a figure of `panels` panels side by side over these
// configurations: 1500 x 500, widened to 44 pixels a configuration in each panel (8 a
// character of the longest value and 14 beyond it, where that is more) and
// heightened for the stacked tics, the axes' label and a key of key_lines entries
// (configuration_axis) where the configurations vary one axis or more.
std::string configuration_canvas(const std::vector<std::string>& names, int panels, int key_lines) {
  const std::size_t lines = varied_axes(names).size();
  if (lines == 0) return "1500,500";
  std::size_t longest = 0;  // characters of the longest value, a tic line's width
  for (const std::string& name : names) {
    std::istringstream words(name);
    for (std::string w; words >> w;) longest = std::max(longest, w.size() - w.find('=') - 1);
  }
  const std::size_t per = std::max<std::size_t>(44, 8 * longest + 14);
  const std::size_t width = std::max<std::size_t>(1500, panels * (100 + per * names.size()));
  const std::size_t height = std::max<std::size_t>(500, 340 + 17 * (lines + 3 + key_lines));
  return std::to_string(width) + "," + std::to_string(height);
}

// A grid's configuration names, in its order ("" none: not a grid).
std::vector<std::string> grid_names(const Table& t) {
  std::vector<std::string> names;
  if (t.extra.contains("grid"))
    for (const auto& point : t.extra["grid"]) names.push_back(point["name"].get<std::string>());
  return names;
}

// Whether the grid's figure takes d_k as its x axis: every name starts with d_k's value (the
// grid's first axis), and the rest of the names (the groups, each a line of its own with a
// legend entry per quantity) are at most two; more would bury the panels under their legends,
// so those grids take the categorical axis, one position per configuration.
bool grid_over_dk(const std::vector<std::string>& names) {
  std::set<std::string> rest;
  for (const std::string& name : names) {
    if (name.rfind("d_k=", 0) != 0) return false;
    const std::size_t end = name.find(' ');
    rest.insert(end == std::string::npos ? "" : name.substr(end + 1));
  }
  return rest.size() <= 2;
}

// The configurations of a table's rows in their order ("" for a table of one).
std::vector<std::string> row_configurations(const Table& t) {
  std::size_t c_config = std::string::npos;
  for (std::size_t i = 0; i < t.columns.size(); ++i)
    if (t.columns[i].name == "configuration") c_config = i;
  std::vector<std::string> configs;
  for (const auto& r : t.rows) {
    const std::string c = c_config == std::string::npos ? "" : plot::text(r[c_config]);
    if (std::find(configs.begin(), configs.end(), c) == configs.end()) configs.push_back(c);
  }
  return configs;
}

// The grid's figure has two panels and keys of up to five entries (four series and the binned
// medians' bound); the interventions' first panel a key of up to five.
constexpr int kGridKeyLines = 5, kInterventionKeyLines = 5;

std::string matrix_block(const std::string& name, const nlohmann::json& rows) {
  std::ostringstream s;
  s << "$" << name << " << EOD\n";
  for (const auto& row : rows) {
    for (std::size_t j = 0; j < row.size(); ++j) s << (j ? " " : "") << row[j].get<double>();
    s << "\n";
  }
  s << "EOD\n";
  return s.str();
}

// The mean map and each entry's std across seeds, side by side (rows: the loss rows R), a tick
// at each cell's centre (integer keys and queries) and, up to 16 words, each cell's value.
std::string heatmap_script(const Table& t) {
  if (!t.extra.contains("mean_map") || t.extra["mean_map"].empty()) return "";
  const int r0 = t.extra["first_loss_row"].get<int>();
  const int n = static_cast<int>(t.extra["mean_map"][0].size());
  const int last = r0 + static_cast<int>(t.extra["mean_map"].size()) - 1;
  // The seeds the entries cover: the first entry's row (converged, or finite when none converged).
  std::string cover;
  if (const auto* r = find_row(t, "P[" + std::to_string(r0) + "][0]")) {
    const bool has_over = std::any_of(t.columns.begin(), t.columns.end(),
                                      [](const Column& c) { return c.name == "over"; });
    const std::string over = has_over ? plot::text((*r)[t.column("over")]) : "";
    const double k = plot::num((*r)[t.column("seeds")]);
    cover = "over the " + plot::count(k) + (over.empty() ? "" : " " + over) +
            (k == 1 ? " seed of " : " seeds of ") + seeds_text(t);
  }
  // What a cell is: each seed's map is the mean of its heads' (P̄), on the first measured input.
  std::string what = "attention map across seeds";
  const std::string heads = run_text(t, "heads"), measured = run_text(t, "measured_inputs");
  if (!heads.empty() && heads != "1") what += ", each seed's the mean of its " + heads + " heads";
  if (!measured.empty() && measured != "1")
    what += ", on the first of " + measured + " measured inputs";
  const bool causal = run_text(t, "causal") == "on";
  if (causal) what += ", keys j > i masked (grey, weight 0)";
  std::ostringstream s;
  s << matrix_block("M", t.extra["mean_map"]) << matrix_block("S", t.extra["std_map"]);
  s << "set multiplot layout 1,2 title "
    << title_lines(
           {what + " (rows: queries i in R, columns: keys j)", configuration_line(t), cover}, 140)
    << " noenhanced\n"
    << "set xlabel 'key j'\nset ylabel 'query i'\nset size ratio -1\n"
    << "set xrange [-0.5:" << n - 0.5 << "]\nset yrange [" << last + 0.5 << ":" << r0 - 0.5
    << "]\nset xtics 0,1," << n - 1 << " out nomirror\nset ytics " << r0 << ",1," << last
    << " out nomirror\nset palette defined (0 'white', 1 '#1f77b4')\n";
  // Under --causal a masked cell (key j > query i: $1 > $2 + r0 in matrix coordinates) is grey
  // and unlabelled: its weight is 0 by the mask, not a value the seeds learned.
  const std::string query = "($2+" + std::to_string(r0) + ")";
  const std::string masked = "($1>" + query + ")";
  const auto panel = [&](const char* block, const char* title, const char* cbrange) {
    const std::string source = "$" + std::string(block) + " matrix";
    s << "set title '" << title << "'\nset cbrange " << cbrange << "\nplot "
      << plot::cells(source, "1", query, "3");
    if (causal)
      s << ", " << source << " using 1:(" << masked << "?" << query
        << ":NaN):(0.5):(0.5) with boxxyerror fill solid 1.0 noborder lc rgb '#d9d9d9' notitle";
    if (n <= 16)
      s << ", " << source << " using 1:" << query << ":("
        << (causal ? masked + "?'':" : std::string()) << "sprintf('%.2f', $3)) with labels font ',"
        << (n <= 8 ? 10 : 7) << "' notitle";
    s << "\n";
  };
  panel("M", "mean weight", "[0:1]");
  panel("S", "std across seeds", "[0:*]");
  s << "unset multiplot\n";
  return s.str();
}

std::string jsd_histogram_script(const Table& t) {
  if (!t.extra.contains("jsd_histogram")) return "";
  const auto& h = t.extra["jsd_histogram"];
  const auto& counts = h["counts"];
  const double hi = h.at("range").at(1).get<double>();
  double total = 0;
  for (const auto& c : counts) total += c.get<double>();
  if (total == 0) return "";
  std::ostringstream s;
  s << "$D << EOD\n";
  for (std::size_t b = 0; b < counts.size(); ++b)
    s << (b + 0.5) * hi / counts.size() << " " << counts[b].get<double>() / total << "\n";
  s << "EOD\n";
  s << "set title "
    << title_lines({"JSD of each seed's map to the mean map (ln 2 = maps that share nothing)",
                    configuration_line(t),
                    "the " + plot::count(total, "seed", "seeds") + " with a finite map, of " +
                        seeds_text(t)})
    << " noenhanced\n"
    << "set xlabel 'JSD (nats)'\nset ylabel 'fraction of seeds'\nset xrange [0:" << hi
    << "]\nset yrange [0:*]\nset grid\nset style fill solid 0.6\nset boxwidth "
    << hi / counts.size() << "\nplot $D using 1:2 with boxes lc rgb '#1f77b4' notitle\n";
  return s.str();
}

// The final loss against the JSD to the mean map, for the first seeds with a finite map. The
// loss axis is logarithmic and ends at 1000 times the 99th percentile of the losses: a loss
// above (a diverged run, up to 1e30) is left out and counted in the title, as is a loss of 0
// (no place on a log axis). The convergence threshold is a dashed line.
std::string scatter_script(const Table& t) {
  if (!t.extra.contains("scatter") || t.extra["scatter"]["loss"].empty()) return "";
  const auto& loss = t.extra["scatter"]["loss"];
  const auto& jsd_values = t.extra["scatter"]["jsd"];
  std::vector<double> positive;
  std::size_t zero = 0;
  for (const auto& l : loss) {
    const double v = l.is_number() ? l.get<double>() : NAN;
    if (v > 0 && std::isfinite(v))
      positive.push_back(v);
    else
      zero++;
  }
  if (positive.empty()) return "";
  std::vector<double> sorted = positive;
  std::sort(sorted.begin(), sorted.end());
  const std::size_t rank =
      static_cast<std::size_t>(std::ceil(0.99 * static_cast<double>(sorted.size())));
  const double bound = 1e3 * sorted[std::max<std::size_t>(rank, 1) - 1];
  std::ostringstream s;
  s << "$D << EOD\n";
  std::size_t left_out = 0;
  double lo = INFINITY, hi = 0;
  for (std::size_t i = 0; i < loss.size(); ++i) {
    const double l = loss[i].is_number() ? loss[i].get<double>() : NAN;
    if (!(l > 0) || !std::isfinite(l)) continue;
    if (l > bound) {
      left_out++;
      continue;
    }
    lo = std::min(lo, l);
    hi = std::max(hi, l);
    s << round_trip(l) << " " << round_trip(jsd_values.at(i).get<double>()) << "\n";
  }
  s << "EOD\n";
  std::string cover = "the first " +
                      plot::count(static_cast<double>(loss.size()), "seed", "seeds") +
                      " with a finite map, of " + seeds_text(t);
  std::string out;
  if (left_out > 0)
    out = plot::count(static_cast<double>(left_out)) + " with a loss above " + human_number(bound) +
          " (1000 times the 99th percentile) left out as diverged";
  if (zero > 0)
    out += (out.empty() ? "" : "; ") + plot::count(static_cast<double>(zero)) +
           " with a loss of 0 not drawn (log axis)";
  s << "set title "
    << title_lines(
           {"final loss against the map's JSD to the mean map", configuration_line(t), cover, out})
    << " noenhanced\nset xlabel 'final loss'\nset ylabel 'JSD to the mean map (nats)'\n"
    << "set logscale x\nset format x '10^{%L}'\nset grid\n";
  const double threshold =
      t.run.contains("converged_below") ? t.run["converged_below"].get<double>() : NAN;
  if (std::isfinite(threshold) && threshold > 0) {
    lo = std::min(lo, threshold);
    hi = std::max(hi, threshold);
  }
  s << "set xrange [" << round_trip(lo / 3) << ":" << round_trip(hi * 3) << "]\n";
  if (std::isfinite(threshold) && threshold > 0) {
    // The label on the side of the line with more room, so that it is never cut by the frame.
    const double at = std::log(threshold / (lo / 3)) / std::log((hi * 3) / (lo / 3));
    s << "set arrow 1 from " << round_trip(threshold) << ", graph 0 to " << round_trip(threshold)
      << ", graph 1 nohead dt 2 lw 2 lc rgb '#d62728'\n"
      << "set label 1 'converged: loss < " << human_number(threshold) << "' at "
      << round_trip(threshold) << ", graph 0.95 "
      << (at < 0.5 ? "left offset 0.5,0" : "right offset -0.5,0")
      << " tc rgb '#d62728' noenhanced\n";
  }
  s << "plot $D using 1:2 with points pt 7 ps 0.3 lc rgb '#1f77b4' notitle\n";
  return s.str();
}

// Across a grid, two panels: the fractions of seeds that converged (over all seeds), with held-out
// inputs that generalized (over all seeds) and, for a task with a known map, that found it (over
// the finite seeds); and the median JSD between pairs of converged and of finite seeds, beside
// the same pairs' at their start (the null the trained JSD is read against) and, with a known
// map, the finite seeds' median JSD to it. Each point with its 95% interval (the table's ci95:
// Wilson for a fraction, the median's order-statistic interval for a JSD). When d_k is an axis of
// the grid, the x axis is d_k (log scale) with a line per combination of the other axes; else the x
// axis is categorical: one position and one label per configuration. The series at one x are
// set apart by small offsets, the dashed ones (open markers) drawn over the solid ones. The JSD
// axis is logarithmic when its values span more than a decade. A value that is not defined
// (NaN: no seed to take it over) is marked "n/a" at its place.
std::string grid_script(const Table& t) {
  if (!t.extra.contains("grid") || t.extra["grid"].size() < 2) return "";
  // The grid's points, with the table's rows for the quantities the points do not carry: a
  // fraction's value is its mean, a distribution's its median, each with its ci95.
  nlohmann::json g = t.extra["grid"];
  const auto column = [&t](const char* name) {
    for (std::size_t i = 0; i < t.columns.size(); ++i)
      if (t.columns[i].name == name) return i;
    return std::string::npos;
  };
  const std::size_t c_config = column("configuration"), c_quantity = column("quantity"),
                    c_over = column("over"), c_mean = column("mean"), c_p50 = column("p50"),
                    c_lo = column("ci95_low"), c_hi = column("ci95_high");
  const bool has_rows = c_config != std::string::npos && c_quantity != std::string::npos &&
                        c_over != std::string::npos && c_mean != std::string::npos &&
                        c_p50 != std::string::npos && c_lo != std::string::npos &&
                        c_hi != std::string::npos;
  const auto from_rows = [&](nlohmann::json& point, const std::string& key,
                             const std::string& quantity, const std::string& over, bool fraction) {
    if (!has_rows) return;
    for (const auto& row : t.rows)
      if (plot::text(row[c_config]) == point["name"].get<std::string>() &&
          plot::text(row[c_quantity]) == quantity && plot::text(row[c_over]) == over) {
        point[key] = plot::num(row[fraction ? c_mean : c_p50]);
        point[key + "_ci95"] = {plot::num(row[c_lo]), plot::num(row[c_hi])};
        return;
      }
  };
  // Whether a JSD's median is binned (past the quantile budget): the table's quantiles column.
  const std::size_t c_quantiles = column("quantiles");
  const auto mark_binned = [&](nlohmann::json& point, const std::string& key,
                               const std::string& quantity, const std::string& over) {
    if (!has_rows || c_quantiles == std::string::npos) return;
    for (const auto& row : t.rows)
      if (plot::text(row[c_config]) == point["name"].get<std::string>() &&
          plot::text(row[c_quantity]) == quantity && plot::text(row[c_over]) == over)
        point[key + "_binned"] = plot::text(row[c_quantiles]) == "binned";
  };
  for (auto& point : g) {
    from_rows(point, "generalized", "generalized (fraction)", "all", true);
    from_rows(point, "pair_jsd_start_finite_median", "JSD between pairs at the start", "finite",
              false);
    from_rows(point, "known_jsd_finite_median", "JSD to the known map", "finite", false);
    mark_binned(point, "pair_jsd_converged_median", "JSD between pairs of seeds", "converged");
    mark_binned(point, "pair_jsd_finite_median", "JSD between pairs of seeds", "finite");
    mark_binned(point, "pair_jsd_start_finite_median", "JSD between pairs at the start", "finite");
    mark_binned(point, "known_jsd_finite_median", "JSD to the known map", "finite");
  }
  const auto any_has = [&g](const char* key) {
    return std::any_of(g.begin(), g.end(), [key](const auto& p) { return p.contains(key); });
  };
  const bool known = g[0].contains("found");
  const bool held_out = any_has("generalized_ci95");
  const auto value = [](const nlohmann::json& point, const std::string& key,
                        int at = -1) -> double {
    if (!point.contains(key)) return NAN;
    const nlohmann::json& v = at < 0                  ? point[key]
                              : point[key].is_array() ? point[key].at(at)
                                                      : point;
    return v.is_number() ? v.get<double>() : NAN;
  };
  // Groups: the name without its d_k (when d_k varies), in the grid's order; by_dk: every name
  // starts with d_k's value (the grid's first axis).
  const bool by_dk = grid_over_dk(grid_names(t));
  std::vector<std::string> groups;
  std::vector<std::size_t> group_of;
  for (const auto& point : g) {
    std::string name = by_dk ? "" : "configurations";
    if (by_dk) {
      const std::string full = point["name"].get<std::string>();
      const std::size_t end = full.find(' ');
      name = end == std::string::npos ? "" : full.substr(end + 1);
    }
    const auto at = std::find(groups.begin(), groups.end(), name);
    group_of.push_back(static_cast<std::size_t>(at - groups.begin()));
    if (at == groups.end()) groups.push_back(name);
  }
  struct Quantity {
    std::string key, what;
  };
  std::ostringstream s;
  // A quantity's line and marker: the first solid with filled circles, the others dashed with
  // open markers, each its own.
  static constexpr const char* kStyles[4] = {" dt 1 pt 7", " dt 2 pt 6", " dt 3 pt 4",
                                             " dt 4 pt 8"};
  // One panel: for each group and quantity a series (x, y, low, high), solid quantity first. On a
  // log axis (log_y) starting at `floor`, an interval's end at or below it (a JSD of 0 among the
  // seeds, or an order statistic near 0) is drawn at the axis' bottom edge, and a note says so.
  // resolution (0: none): the width of the binned quantiles' first bin. A binned median in it
  // is known only to lie in [0, resolution] (its estimate, the bin's centre, would read as a
  // value on a log axis): it is drawn as that upper bound, a down-pointing marker of its series'
  // colour whose bar runs to the bottom edge, and the key says so.
  const auto panel = [&](const char* name, const std::string& title,
                         const std::vector<Quantity>& qs, bool log_y, double floor,
                         double resolution) {
    const std::size_t series = groups.size() * qs.size();
    const double spread = by_dk ? std::min(0.06, 0.5 / series) : std::min(0.15, 0.6 / series);
    std::ostringstream plots, labels;
    bool any_drawn = false, floored = false, any_bound = false;
    // An interval's end: its value; y where it has none; the axis' bottom for 0 on a log axis.
    const auto end = [&](double y, double b) {
      if (!std::isfinite(b)) return round_trip(y);
      if (log_y && !(b > floor)) {
        floored = true;
        return round_trip(floor);
      }
      return round_trip(b);
    };
    for (std::size_t q = 0; q < qs.size(); ++q)
      for (std::size_t k = 0; k < groups.size(); ++k) {
        const double offset =
            (static_cast<double>(k * qs.size() + q) - (series - 1) / 2.0) * spread;
        const std::string block =
            "$" + std::string(name) + std::to_string(q) + "_" + std::to_string(k);
        std::ostringstream bounds;  // the series' medians drawn as upper bounds
        s << block << " << EOD\n";
        for (std::size_t i = 0; i < g.size(); ++i) {
          if (group_of[i] != k) continue;
          const double x = by_dk ? std::stod(g[i]["d-k"].get<std::string>()) * std::exp2(offset)
                                 : static_cast<double>(i) + offset;
          const double y = value(g[i], qs[q].key), lo = value(g[i], qs[q].key + "_ci95", 0),
                       hi = value(g[i], qs[q].key + "_ci95", 1);
          const bool drawn = std::isfinite(y) && (!log_y || y > 0);
          const bool bound = drawn && log_y && resolution > 0 && y < resolution &&
                             g[i].value(qs[q].key + "_binned", false);
          any_drawn = any_drawn || drawn;
          if (bound) {
            any_bound = floored = true;
            bounds << round_trip(x) << " " << round_trip(resolution) << " " << round_trip(floor)
                   << " " << round_trip(resolution) << "\n";
            s << round_trip(x) << " NaN NaN NaN\n";
            continue;
          }
          s << round_trip(x) << " " << (drawn ? round_trip(y) : "NaN") << " "
            << (drawn ? end(y, lo) : "NaN") << " " << (drawn ? end(y, hi) : "NaN") << "\n";
          // Not drawn: a value that is not defined (n/a), or a 0 that a log axis cannot place
          // (the pairs of a frozen map, the JSD of the known map to itself).
          if (!drawn)
            labels << "set label '" << (y == 0 ? "0" : "n/a") << "' at " << round_trip(x)
                   << (y == 0 ? ", graph 0.06 center" : ", graph 0.03 left rotate by 90")
                   << " tc lt " << (by_dk ? k : q) + 1 << " font ',9'\n";
        }
        s << "EOD\n";
        const std::string title =
            (groups[k].empty() || !by_dk ? "" : groups[k] + ": ") + qs[q].what;
        plots << (plots.tellp() > 0 ? ", " : "") << block << " using 1:2:3:4 with "
              << (by_dk ? "yerrorlines" : "yerrorbars") << " lw 2 ps 1.2 lc " << (by_dk ? k : q) + 1
              << kStyles[std::min<std::size_t>(q, 3)] << " title " << plot::quote(title);
        if (bounds.tellp() > 0) {
          s << block << "_bound << EOD\n" << bounds.str() << "EOD\n";
          plots << ", " << block << "_bound using 1:2:3:4 with yerrorbars lw 2 ps 1.4 lc "
                << (by_dk ? k : q) + 1 << " pt 11 notitle";
        }
      }
    char resolution_text[16];
    std::snprintf(resolution_text, sizeof resolution_text, "%.2g", resolution);
    if (any_bound)
      plots << ", keyentry with points pt 11 ps 1.4 lc rgb 'black' title "
            << plot::quote("at most (binned, below " + std::string(resolution_text) + " nats)");
    s << "unset label\n"
      << labels.str() << "set title "
      << plot::title_lines(floored
                               ? std::vector<std::string>{title,
                                                          "(a bar to the bottom edge: its interval "
                                                          "runs below the axis, to 0 or near it)"}
                               : std::vector<std::string>{title},
                           200)
      << "\n";
    if (log_y)
      s << "set logscale y\nset format y '10^{%L}'\nset yrange [" << round_trip(floor) << ":*]\n";
    else
      s << "unset logscale y\nset format y '%g'\n";
    s << (any_drawn ? "plot " + plots.str() + "\n" : plot::nothing_to_draw("no finite value"));
  };
  // The JSD axis: logarithmic when the finite positive values (and their intervals) span more
  // than a decade.
  std::vector<Quantity> jsd = {{"pair_jsd_converged_median", "pairs, converged seeds"},
                               {"pair_jsd_finite_median", "pairs, all finite seeds"}};
  if (any_has("pair_jsd_start_finite_median"))
    jsd.push_back({"pair_jsd_start_finite_median", "pairs at the start, all finite seeds"});
  if (any_has("known_jsd_finite_median"))
    jsd.push_back({"known_jsd_finite_median", "to the known map, all finite seeds"});
  double lo = INFINITY, hi = 0;
  for (const auto& point : g)
    for (const Quantity& q : jsd)
      for (const double v : {value(point, q.key), value(point, q.key + "_ci95", 0),
                             value(point, q.key + "_ci95", 1)})
        if (std::isfinite(v) && v > 0) lo = std::min(lo, v), hi = std::max(hi, v);
  // An interval's lower end far below every median (an order statistic of a few seeds near
  // 0) would stretch a log axis over decades the points do not use: the axis stops three
  // decades below the smallest median, and such a bar runs to its bottom edge.
  double lowest_median = INFINITY;
  for (const auto& point : g)
    for (const Quantity& q : jsd)
      if (const double v = value(point, q.key); std::isfinite(v) && v > 0)
        lowest_median = std::min(lowest_median, v);
  if (std::isfinite(lowest_median)) lo = std::max(lo, lowest_median / 1e3);
  const bool log_jsd = hi > 10 * lo;

  s << "set multiplot layout 1,2 title "
    << title_lines(
           {"attention-sweep across a grid of " + std::to_string(g.size()) + " configurations",
            configuration_line(t),
            "each over the same " + seeds_text(t) +
                "; bars: 95% intervals (Wilson for a fraction, the median's "
                "order statistics for a JSD)"},
           170)
    << " noenhanced\nset grid\nset key below noenhanced\nset bars small\n";
  if (by_dk) {
    double min_dk = INFINITY, max_dk = 0;
    s << "set logscale x 2\nset xlabel 'd_k'\nset xtics (";
    std::set<double> dks;
    for (const auto& point : g) dks.insert(std::stod(point["d-k"].get<std::string>()));
    const char* sep = "";
    for (const double d : dks) {
      s << sep << "\"" << human_number(d) << "\" " << round_trip(d);
      sep = ", ";
      min_dk = std::min(min_dk, d);
      max_dk = std::max(max_dk, d);
    }
    s << ")\n" << plot::dk_range(min_dk, max_dk);
  } else {
    s << configuration_axis(grid_names(t), kGridKeyLines);
  }
  s << "set ylabel 'fraction of seeds'\nset yrange [0:1.05]\n";
  std::vector<Quantity> fractions = {{"converged", "converged (all seeds)"}};
  if (held_out) fractions.push_back({"generalized", "generalized (all seeds)"});
  if (known) fractions.push_back({"found", "found the known map (finite seeds)"});
  panel("F", "fraction of seeds", fractions, false, 0, 0);
  s << "set ylabel 'JSD (nats)'\n" << (log_jsd ? "" : "set yrange [0:*]\n");
  panel("J", "median JSD", jsd, log_jsd, lo / 2, 2 * QuantileSketch::error_bound(kJsdScale));
  s << "unset multiplot\n";
  return s.str();
}

// The interventions figure's panels: the output distances and tau_b, and the adversarial map's
// between them where the table has its rows (not under --adversary off).
int intervention_panels(const Table& t) {
  return find_row(t, "adversarial JSD within epsilon", "finite") ? 3 : 2;
}

// A value as a label reads it: three significant digits ("1.67e+94").
std::string three_digits(double v) {
  char text[32];
  std::snprintf(text, sizeof text, "%.3g", v);
  return text;
}

// Does the head use its map? Three panels over the configurations (a categorical x axis, one
// position each): the output distance under each intervention (uniform, permuted, patched, known)
// beside the distance between pairs of seeds' outputs, the scale the interventions are read
// against; the adversarial map's JSD within epsilon, with the line at 0.1 nats above which a map
// counts as not unique; Kendall's tau_b between weights and importance, with the line at 0. Each
// point the median over the finite seeds, its bar the 5th to 95th percentile (the spread over
// seeds); log axes where the values span decades. From the table's rows alone; "" when it has no
// intervention rows (an older result, or --adversary off leaves only its own panel out).
std::string interventions_script(const Table& t) {
  const auto column = [&t](const char* name) {
    for (std::size_t i = 0; i < t.columns.size(); ++i)
      if (t.columns[i].name == name) return i;
    return std::string::npos;
  };
  const std::size_t c_quantity = column("quantity"), c_over = column("over"), c_p05 = column("p05"),
                    c_p50 = column("p50"), c_p95 = column("p95"),
                    c_config = column("configuration");
  if (c_quantity == std::string::npos || c_over == std::string::npos ||
      c_p05 == std::string::npos || c_p50 == std::string::npos || c_p95 == std::string::npos ||
      !find_row(t, "output distance (uniform map)", "finite"))
    return "";
  const std::vector<std::string> configs = row_configurations(t);
  // A quantity's median and 5th/95th percentiles over the finite seeds of configuration i.
  struct Spread {
    double p05 = NAN, p50 = NAN, p95 = NAN;
  };
  const auto spread = [&](std::size_t i, const std::string& quantity) {
    Spread v;
    for (const auto& r : t.rows)
      if ((c_config == std::string::npos || plot::text(r[c_config]) == configs[i]) &&
          plot::text(r[c_quantity]) == quantity && plot::text(r[c_over]) == "finite") {
        v = {plot::num(r[c_p05]), plot::num(r[c_p50]), plot::num(r[c_p95])};
        break;
      }
    return v;
  };
  struct Series {
    std::string quantity, what;
  };
  std::ostringstream s, labels;
  int block_count = 0;
  struct Drawn {
    std::string plots;  // the panel's plot command's list
    bool log_axis;      // its values span more than a decade
    double lo, hi;      // the smallest and largest finite positive values
    bool floored;       // a bar runs to the log axis' bottom edge (a 5th percentile of 0)
  };
  // A panel's title, with the note that explains a bar to the bottom edge where one is.
  const auto title_of = [](const std::string& title, const Drawn& d) {
    std::vector<std::string> lines = {title};
    if (d.floored)
      lines.push_back("(a bar to the bottom edge: its 5th percentile is 0 or below the axis)");
    return "set title " + plot::title_lines(lines, 200) + "\n";
  };
  // One panel: each series a block of (x, median, p05, p95) with its own offset and style; a
  // series with no finite value anywhere is left out (the known map of a task without one).
  const auto panel = [&](const std::vector<Series>& series, bool log_y) {
    std::vector<const Series*> drawn;
    std::vector<std::vector<Spread>> values;
    double lo = INFINITY, hi = 0;
    std::vector<double> medians;  // the finite positive ones
    for (const Series& q : series) {
      std::vector<Spread> v;
      bool any = false;
      for (std::size_t i = 0; i < configs.size(); ++i) {
        v.push_back(spread(i, q.quantity));
        any = any || std::isfinite(v.back().p50);
        for (const double x : {v.back().p05, v.back().p50, v.back().p95})
          if (std::isfinite(x) && x > 0) lo = std::min(lo, x), hi = std::max(hi, x);
        if (std::isfinite(v.back().p50) && v.back().p50 > 0) medians.push_back(v.back().p50);
      }
      if (any) drawn.push_back(&q), values.push_back(std::move(v));
    }
    // Diverged seeds (a median or a 95th percentile of 1e140) would flatten every other point:
    // the axis stops three decades above the points' median median; a bar beyond runs off its
    // top, a point beyond is written there as its value.
    // Likewise a 5th percentile of 1e-150 (two seeds' identical outputs): the axis stops three
    // decades below the smallest median, a bar beyond runs to its bottom edge.
    if (!medians.empty()) {
      lo = std::max(lo, 1e-3 * *std::min_element(medians.begin(), medians.end()));
      std::nth_element(medians.begin(), medians.begin() + medians.size() / 2, medians.end());
      hi = std::min(hi, 1e3 * medians[medians.size() / 2]);
    }
    const bool log_axis = log_y && hi > 10 * lo;
    const double width = std::min(0.15, 0.7 / std::max<std::size_t>(drawn.size(), 1));
    std::ostringstream plots;
    bool floored = false;
    for (std::size_t q = 0; q < drawn.size(); ++q) {
      // A series' colour and marker by its place among the panel's series, drawn or not, so
      // that each keeps them from one run's figure to another's.
      const std::size_t style = static_cast<std::size_t>(drawn[q] - series.data());
      const std::string block = "$I" + std::to_string(block_count++);
      s << block << " << EOD\n";
      const double offset = (static_cast<double>(q) - (drawn.size() - 1) / 2.0) * width;
      for (std::size_t i = 0; i < configs.size(); ++i) {
        const Spread& v = values[q][i];
        const bool ok = std::isfinite(v.p50) && (!log_axis || v.p50 > 0);
        // A percentile: its value; the median where it has none; the axis' bottom edge for a
        // 0 on a log axis (a note says so).
        const auto bound = [&](double b) {
          if (!ok) return std::string("NaN");
          if (!std::isfinite(b)) return round_trip(v.p50);
          if (log_axis && !(b >= lo / 2)) {  // below the axis' bottom, lo / 2: clipped there
            floored = true;
            return round_trip(lo / 1e3);
          }
          return round_trip(b);
        };
        const double x = static_cast<double>(i) + offset;
        s << round_trip(x) << " " << (ok ? round_trip(v.p50) : "NaN") << " " << bound(v.p05) << " "
          << bound(v.p95) << "\n";
        if (!ok)  // not defined (n/a), or a 0 a log axis cannot place (a frozen map's own)
          labels << "set label '" << (v.p50 == 0 ? "0" : "n/a") << "' at " << round_trip(x)
                 << (v.p50 == 0 ? ", graph 0.06 center" : ", graph 0.03 left rotate by 90")
                 << " tc lt " << style + 1 << " font ',9'\n";
        else if (log_axis &&
                 v.p50 >
                     2 * hi)  // above the axis: its value, vertical (neighbours' do not overlap)
          labels << "set label '" << three_digits(v.p50) << "' at " << round_trip(x)
                 << ", graph 0.97 right rotate by 90 tc lt " << style + 1 << " font ',9'\n";
      }
      s << "EOD\n";
      static constexpr const char* kStyles[6] = {" pt 7", " pt 6", " pt 4",
                                                 " pt 8", " pt 5", " pt 9"};
      plots << (q ? ", " : "") << block << " using 1:2:3:4 with yerrorbars lw 2 ps 1.2 lc "
            << style + 1 << kStyles[std::min<std::size_t>(style, 5)] << " title "
            << plot::quote(drawn[q]->what);
    }
    return Drawn{plots.str(), log_axis, lo, hi, floored};
  };
  // A panel's plot command, or its frame and a note when no series has a finite value.
  const auto plot_or_note = [](const std::string& plots) {
    return plots.empty() ? plot::nothing_to_draw("no finite seed") : "plot " + plots + "\n";
  };
  // A log axis with room beyond the values (points at its edges stay whole), else a linear one.
  // A log axis over [lo/2, 2 hi]; under three decades its powers of ten are two or three labels,
  // so it labels 1, 2 and 5 times them.
  const auto axis = [&](bool log_axis, double lo, double hi) {
    if (!log_axis) return std::string("unset logscale y\nset format y '%g'\nset ytics autofreq\n");
    const double bottom = lo / 2, top = hi * 2;
    const std::string range =
        "set logscale y\nset yrange [" + round_trip(bottom) + ":" + round_trip(top) + "]\n";
    if (top >= 1000 * bottom) return range + "set format y '10^{%L}'\nset ytics autofreq\n";
    std::string tics;
    for (int e = static_cast<int>(std::floor(std::log10(bottom)));
         e <= static_cast<int>(std::ceil(std::log10(top))); ++e)
      for (const char* mantissa : {"1", "2", "5"}) {
        const std::string tic = std::string(mantissa) + "e" + std::to_string(e);
        const double v = std::stod(tic);
        if (v >= bottom && v <= top) tics += (tics.empty() ? "" : ", ") + tic;
      }
    return range + "set format y '%g'\nset ytics (" + tics + ")\n";
  };

  const std::string over = seeds_text(t);
  s << "set multiplot layout 1," << intervention_panels(t) << " title "
    << title_lines({"attention-sweep: does the head use its map? (each map replaced, nothing "
                    "retrained)",
                    configuration_line(t),
                    (configs.size() > 1 ? "each configuration over the same " : "over ") + over +
                        "; points: the median over the finite seeds; bars: their 5th to 95th "
                        "percentile"},
                   170)
    << " noenhanced\nset grid\nset key below noenhanced\nset bars small\n"
    << configuration_axis(configs, kInterventionKeyLines);

  const Drawn outputs =
      panel({{"output distance between pairs", "two seeds (pairs), no intervention"},
             {"output distance (uniform map)", "uniform map"},
             {"output distance (permuted map)", "permuted map"},
             {"output distance (patched map)", "the pair partner's map"},
             {"output distance (known map)", "the known map"}},
            true);
  s << title_of("output distance when the map is replaced", outputs)
    << "set ylabel 'RMS distance'\n"
    << axis(outputs.log_axis, outputs.lo, outputs.hi) << "unset label\n"
    << labels.str() << plot_or_note(outputs.plots);
  labels.str("");

  if (find_row(t, "adversarial JSD within epsilon", "finite")) {
    // A log axis past the 0.1 nats line (its top 0.3 at least), so that the line and its label
    // are inside the frame.
    const std::string epsilon = run_text(t, "epsilon");
    const Drawn adversarial =
        panel({{"adversarial JSD within epsilon",
                "adversarial map within epsilon" + (epsilon.empty() ? "" : " " + epsilon)}},
              true);
    s << title_of("how far a map keeps the output", adversarial) << "set ylabel 'JSD (nats)'\n"
      << axis(true, std::min(0.1, adversarial.lo), std::max(0.15, adversarial.hi))
      << "unset label\n"
      << labels.str()
      << "set arrow 1 from graph 0, first 0.1 to graph 1, first 0.1 nohead dt 2 lw 1.5\n"
      << "set label 'not unique above 0.1 nats' at graph 0.02, first 0.1 offset 0,0.6 "
         "font ',9'\n"
      << plot_or_note(adversarial.plots) << "unset arrow 1\n";
    labels.str("");
  }
  const Drawn tau =
      panel({{"Kendall's tau_b (weights vs importance)", "Kendall's tau_b, weights vs importance"}},
            false);
  s << title_of("do the weights rank the keys by importance?", tau) << "set ylabel 'tau_b'\n"
    << axis(false, 0, 0) << "set yrange [-1.05:1.05]\nunset label\n"
    << labels.str() << "set arrow 2 from graph 0, first 0 to graph 1, first 0 nohead dt 2 lw 1.5\n"
    << plot_or_note(tau.plots) << "unset arrow 2\nunset multiplot\n";
  return s.str();
}

// The run --------------------------------------------------------------------------------

// Seeds per chunk: a whole number of pairs, about 2^28 FLOPs of training (so that a chunk takes a
// fraction of a second on one core and a stop comes soon), between 2 and 4096 (a sweep of more
// chunks than the driver takes is refused by it). Fixed by the request alone.
std::uint64_t seeds_per_chunk(const head::Model& m) {
  const double work = m.steps * head_sizing::flops_per_seed_step(m);
  std::uint64_t per = 4096;
  while (per > 2 && static_cast<double>(per) * work > 268435456.0) per /= 2;
  return per;
}

// A monitor for the training calls inside the driver's chunks: a large head's seed trains long,
// so the CPU's threads ask it between steps.
const Monitor& signal_monitor() {
  struct Signals : Monitor {
    bool stop_requested() const override { return stop_requested_by_signal(); }
  };
  static const Signals m;
  return m;
}

constexpr Cover kCovers[2] = {Cover::converged, Cover::finite};

// The bin of the JSD histogram (kJsdBins on [0, ln 2]) that holds a finite JSD v.
int jsd_bin(double v) {
  return std::clamp(static_cast<int>(v / std::log(2.0) * kJsdBins), 0, kJsdBins - 1);
}

// One configuration's sweep: the request, its inputs, its chunks, the first pass's summaries
// (one per cover), the second pass's measures.
//
// A chunk's seeds are trained (the backend: their final losses and weights), then measured
// from their final weights on the measured inputs (head::evaluate_seeds_cpu: maps, outputs,
// the loss on them), and at their starting weights (the maps before training); with --nudge
// each is trained a second time from W_Q[0][0] one ulp up and measured again. What a chunk
// keeps for the second pass (keep mode) is its training results and nudge JSDs, from which the
// measurement is repeated (and a state read from a file is checked: its summaries must be the
// ones they give).
struct Sweep {
  Sweep(const RunContext& c, const Config& config, const Shape& shape)
      : ctx(c), cfg(config), s(shape) {}

  const RunContext& ctx;
  const Config& cfg;
  const Shape s;
  head::Model m;
  TaskData data;  // the inputs, once for every seed
  SeedResults shape;
  PerSeedRecord record;  // what --per-seed writes of a seed
  KnownMap known;
  InterventionTask interventions;  // the measured inputs, the known maps per head, ε
  bool nudge = false;
  std::string label;  // the chunk jobs' label
  const SeedSet* seeds = nullptr;
  std::uint64_t count = 0, per_chunk = 0, chunks = 0;
  std::uint64_t batch = 1;   // chunks per backend call
  std::uint64_t least = 1;   // and at least (ChunkJob::least)
  std::uint64_t budget = 0;  // values kept per quantity for exact quantiles
  bool keep = false;         // the first pass keeps every seed's training results
  std::string per_seed_file;
  std::unique_ptr<PerSeedMaps> per_seed;
  std::optional<MapSummary> summary[2];  // kCovers' order
  std::vector<double> kept;              // keep: every seed's training result, in order
  std::vector<double> kept_nudge;        // keep with --nudge: every seed's nudge JSD
  std::vector<double> mean_map[2];
  // The second pass's result.
  std::optional<QuantileSketch> to_mean[2];
  std::vector<std::int64_t> histogram = std::vector<std::int64_t>(kJsdBins, 0);
  std::vector<double> scatter_loss, scatter_jsd;
  std::uint64_t measured = 0;  // seeds through the second pass's fold
  double train_seconds = 0;    // the first pass's
  // Seeds the first pass trained in this run (this process, and under MPI the other ranks):
  // fewer than count where chunks came from a checkpoint or a part (demo merge), so that the
  // speed is of what ran here.
  std::uint64_t trained_here = 0;

  std::uint64_t first_of(std::uint64_t chunk) const { return chunk * per_chunk; }
  std::uint64_t count_of(std::uint64_t chunk) const {
    return std::min(per_chunk, count - first_of(chunk));
  }
  double work_of(std::uint64_t chunk) const {
    return static_cast<double>(count_of(chunk)) * m.steps * (nudge ? 2 : 1);
  }
  MapSummary empty(int k, std::uint64_t values) const {
    return MapSummary(shape, values, ctx.get<double>("--converged-below"), kCovers[k], known);
  }
  std::int64_t trained_size() const { return head::result_size(m); }
  // The measured inputs: the held-out ones, or the training ones when there are none.
  const double* measured_x() const {
    return data.x.data() + static_cast<std::size_t>(s.measured_from()) * s.n * s.d_model;
  }
  const double* measured_y() const {
    return data.y.data() + static_cast<std::size_t>(s.measured_from()) * s.n * s.d_out();
  }
  // Their known maps with --map known (the frozen maps the measurement forms), else nullptr.
  const double* measured_known() const {
    if (data.known_maps.empty()) return nullptr;
    return data.known_maps.data() +
           static_cast<std::size_t>(s.measured_from()) * s.heads * s.map_size();
  }

  // Trains chunks [first, first + n) in one backend call (nudged: the --nudge runs): their
  // training results (head::result_size each), in seed order.
  std::vector<double> train(std::uint64_t first, std::uint64_t n, const Monitor& monitor,
                            bool nudged = false) const {
    const std::uint64_t a = first_of(first), b = first_of(first + n - 1) + count_of(first + n - 1);
    std::vector<std::uint64_t> chunk_seeds(b - a);
    for (std::uint64_t i = a; i < b; ++i) chunk_seeds[i - a] = seeds->at(i);
    std::vector<double> out((b - a) * trained_size());
    head::Model mm = m;
    mm.nudge = nudged;
    ctx.backend.train_heads(mm, chunk_seeds.data(), static_cast<std::int64_t>(b - a), out.data(),
                            monitor);
    return out;
  }

  // The measured results (SeedResults, shape.size() each) of `count` seeds' training results.
  std::vector<double> evaluate(const double* trained, std::uint64_t seeds_n,
                               const Monitor& monitor) const {
    const std::int64_t size = shape.size(), eval = head::evaluation_size(m, s.measured());
    std::vector<double> e(seeds_n * eval), out(seeds_n * size);
    head::evaluate_seeds_cpu(m, trained + 2, trained_size(), static_cast<std::int64_t>(seeds_n),
                             measured_x(), measured_y(), measured_known(), s.measured(), e.data(),
                             nullptr, monitor);
    for (std::uint64_t i = 0; i < seeds_n; ++i) {
      out[i * size] = trained[i * trained_size()];
      out[i * size + 1] = trained[i * trained_size() + 1];
      std::copy_n(e.data() + i * eval, eval, out.data() + i * size + 2);
    }
    return out;
  }

  // The maps at the starting weights of seeds [a, a + n) (of the set), in the results' layout,
  // n x inputs x H x |R| x n values.
  std::vector<double> start_maps(std::uint64_t a, std::uint64_t n, const Monitor& monitor) const {
    const std::int64_t w = head::weights_size(m), eval = head::evaluation_size(m, s.measured());
    const std::int64_t maps = static_cast<std::int64_t>(s.heads) * shape.map_size();
    std::vector<double> weights(n * w), e(n * eval), out(n * maps);
    for (std::uint64_t i = 0; i < n; ++i) head::start_weights(m, seeds->at(a + i), &weights[i * w]);
    head::evaluate_seeds_cpu(m, weights.data(), w, static_cast<std::int64_t>(n), measured_x(),
                             measured_y(), measured_known(), s.measured(), e.data(), nullptr,
                             monitor);
    for (std::uint64_t i = 0; i < n; ++i)
      std::copy_n(e.data() + i * eval + 1, maps, out.data() + i * maps);
    return out;
  }

  // --nudge: each seed's JSD between the head-averaged maps of its two runs' measured results
  // (`results` the first run's, `again` the second's, from W_Q[0][0] one ulp up), seeds_n of
  // each: NaN where either run is not finite.
  std::vector<double> nudge_jsd(const double* results, const double* again,
                                std::uint64_t seeds_n) const {
    std::vector<double> out(seeds_n), ba, bb;
    for (std::uint64_t i = 0; i < seeds_n; ++i) {
      const double* r = results + i * shape.size();
      const double* q = again + i * shape.size();
      out[i] = shape.finite(r) && shape.finite(q)
                   ? map_jsd(shape.mean_over_heads(shape.maps(r), ba),
                             shape.mean_over_heads(shape.maps(q), bb), shape.map_rows(), s.n)
                   : NAN;
    }
    return out;
  }

  // The intervention measures (measure_interventions) of seeds [a, a + n) of the set, whole
  // pairs, from their training results and measured results: n x kInterventionFields values.
  std::vector<double> intervene(std::uint64_t a, std::uint64_t n, const double* trained,
                                const double* results, const Monitor& monitor) const {
    std::vector<std::uint64_t> ids(n);
    for (std::uint64_t i = 0; i < n; ++i) ids[i] = seeds->at(a + i);
    std::vector<double> out(n * kInterventionFields);
    measure_interventions(interventions, trained + 2, trained_size(), results, ids.data(),
                          static_cast<std::int64_t>(n), out.data(), monitor);
    return out;
  }

  // The first pass's summaries of chunk i alone (kCovers' order): of its seeds' training results
  // and measured results, their maps at the start, their interventions and (nudges not nullptr)
  // their nudge JSDs. What compute gives, and what a kept state's training results must give
  // again.
  std::vector<MapSummary> part_summaries(std::uint64_t i, const double* trained,
                                         const double* results, const double* nudges,
                                         const Monitor& monitor) const {
    const std::vector<double> starts = start_maps(first_of(i), count_of(i), monitor);
    const std::vector<double> iv = intervene(first_of(i), count_of(i), trained, results, monitor);
    std::vector<MapSummary> out;
    for (int k = 0; k < 2; ++k) {
      out.push_back(empty(k, per_chunk));
      out.back().add(results, static_cast<std::int64_t>(count_of(i)),
                     {starts.data(), nudges, iv.data()});
    }
    return out;
  }

  // The --per-seed records of seeds [a, a + seeds_n) of the set (whole pairs) from their
  // training results, measured results and nudge JSDs (nullptr: none), their interventions
  // measured.
  std::vector<double> records(std::uint64_t a, const double* trained, const double* results,
                              const double* nudges, std::uint64_t seeds_n) const {
    const std::vector<double> iv = intervene(a, seeds_n, trained, results, signal_monitor());
    std::vector<double> out(seeds_n * record.size());
    for (std::uint64_t i = 0; i < seeds_n; ++i)
      record.make(results + i * shape.size(), trained + i * trained_size() + 2,
                  nudges ? nudges[i] : NAN, ctx.get<double>("--converged-below"), known,
                  iv.data() + i * kInterventionFields, out.data() + i * record.size());
    return out;
  }

  ChunkJob job(const std::string& name, std::uint64_t batch) const {
    ChunkJob j;
    j.label = name;
    j.unit = "seed-steps";
    j.chunks = chunks;
    j.batch = batch;
    j.least = least;
    j.paced = ctx.backend.kind() == DeviceKind::cpu;
    j.work = [this](std::uint64_t i) { return work_of(i); };
    return j;
  }

  void first_pass(std::uint64_t batch);
  void second_pass(std::uint64_t batch);
  void measure(std::uint64_t chunk, const SeedMeasures& measures);
  void table(Table& t, bool grid);
};

void Sweep::first_pass(std::uint64_t batch) {
  ChunkJob j = job(label, batch);
  const MapSummary whole[2] = {empty(0, budget), empty(1, budget)};
  const MapSummary part[2] = {empty(0, per_chunk), empty(1, per_chunk)};
  for (int k = 0; k < 2; ++k) summary[k].emplace(whole[k]);
  const std::uint64_t tsize = static_cast<std::uint64_t>(trained_size());
  const std::uint64_t size = static_cast<std::uint64_t>(shape.size());
  // A chunk's state in memory (the chunk driver's native form): its summaries (kCovers' order)
  // and, in keep mode, its seeds' training results and nudge JSDs. Its text holds the same
  // numbers exactly, so that folding either gives the same bits.
  struct ChunkSummaries {
    std::vector<MapSummary> summaries;
    std::vector<double> results, nudges;
  };
  j.received = [&](std::uint64_t chunk) { trained_here += count_of(chunk); };
  j.native.compute = [&](std::uint64_t first, std::uint64_t n) {
    const Monitor& monitor = signal_monitor();
    const std::vector<double> trained = train(first, n, monitor);
    trained_here += first_of(first + n - 1) + count_of(first + n - 1) - first_of(first);
    const std::vector<double> nudged =
        nudge ? train(first, n, monitor, true) : std::vector<double>{};
    std::vector<NativeState> states;
    std::uint64_t at = 0;  // the chunk's first seed in this call
    for (std::uint64_t i = first; i < first + n; ++i) {
      const std::uint64_t c = count_of(i);
      const std::vector<double> results = evaluate(trained.data() + at * tsize, c, monitor);
      ChunkSummaries state;
      if (nudge)
        state.nudges =
            nudge_jsd(results.data(), evaluate(nudged.data() + at * tsize, c, monitor).data(), c);
      state.summaries = part_summaries(i, trained.data() + at * tsize, results.data(),
                                       nudge ? state.nudges.data() : nullptr, monitor);
      if (keep)
        state.results.assign(trained.begin() + at * tsize, trained.begin() + (at + c) * tsize);
      else
        state.nudges.clear();
      states.emplace_back(std::move(state));
      at += c;
    }
    return states;
  };
  j.native.text = [&](const NativeState& native) {
    const ChunkSummaries& p = std::any_cast<const ChunkSummaries&>(native);
    ChunkState state;
    for (int k = 0; k < 2; ++k) state[cover_name(kCovers[k])] = p.summaries[k].to_state();
    if (keep) {
      state["results"] = exact_vector(p.results);
      if (nudge) state["nudge"] = exact_vector(p.nudges);
    }
    return state;
  };
  // The kept training results of seeds [first_seed, first_seed + seeds_n) in a state (keep
  // mode), appended to out, and with --nudge their nudge JSDs to nudges; from a file (checked),
  // each seed's training result checked against its domains (check_training_result) and each
  // nudge JSD against a JSD's (or NaN).
  const auto read_results = [&](const ChunkState& state, std::uint64_t first_seed,
                                std::uint64_t seeds_n, std::vector<double>& out,
                                std::vector<double>& nudges, bool checked) {
    if (!state.contains("results") || !state.at("results").is_string())
      throw std::invalid_argument("no results of its seeds");
    const std::size_t before = out.size();
    append_exact_vector(state.at("results").get<std::string>(), out);
    if (out.size() - before != seeds_n * tsize)
      throw std::invalid_argument("results of the wrong length");
    const std::size_t had = nudges.size();
    if (nudge) {
      if (!state.contains("nudge") || !state.at("nudge").is_string())
        throw std::invalid_argument("no nudge JSDs of its seeds");
      append_exact_vector(state.at("nudge").get<std::string>(), nudges);
      if (nudges.size() - had != seeds_n)
        throw std::invalid_argument("nudge JSDs of the wrong length");
    } else if (state.contains("nudge")) {
      throw std::invalid_argument("nudge JSDs without --nudge");
    }
    for (std::uint64_t k = 0; checked && k < seeds_n; ++k) {
      if ((k & 1023) == 0) stop_point();
      try {
        check_training_result(out.data() + before + k * tsize, head::weights_size(m));
        if (nudge && !std::isnan(nudges[had + k])) kJsdQuantity.domain.check(nudges[had + k]);
      } catch (const std::invalid_argument& e) {
        throw std::invalid_argument("kept results of seed " +
                                    std::to_string(this->seeds->at(first_seed + k)) + ": " +
                                    e.what());
      }
    }
  };
  const auto read_summaries = [&](const MapSummary(&like)[2], const ChunkState& state,
                                  std::int64_t seeds_n) {
    std::vector<MapSummary> out;
    for (int k = 0; k < 2; ++k) {
      const char* name = cover_name(kCovers[k]);
      if (!state.is_object() || !state.contains(name))
        throw std::invalid_argument(std::string("no summary of the ") + name + " seeds");
      out.push_back(like[k].from_state(state.at(name), seeds_n));
    }
    if (out[0].converged != out[1].converged || out[0].diverged != out[1].diverged ||
        out[0].generalized != out[1].generalized)
      throw std::invalid_argument("summaries whose counts disagree");
    // The converged seeds are finite seeds: their losses among the finite seeds' losses.
    const QuantileSketch &lc = out[0].loss, &lf = out[1].loss;
    if (lc.count() > 0 && (lc.min() < lf.min() || lc.max() > lf.max()))
      throw std::invalid_argument(
          "converged seeds' losses outside the range of the finite seeds' losses");
    return out;
  };
  // Chunk i's summaries made again from its kept training results and nudge JSDs (measured
  // again): a file's state must hold exactly these. A nudge JSD where the first run is not
  // finite (it has no map) is refused too.
  const auto summaries_of_kept = [&](std::uint64_t i, const double* trained, const double* nudges) {
    stop_point();
    const Monitor& monitor = signal_monitor();
    const std::vector<double> results = evaluate(trained, count_of(i), monitor);
    for (std::uint64_t k = 0; nudges != nullptr && k < count_of(i); ++k)
      if (!shape.finite(results.data() + k * size) && !std::isnan(nudges[k]))
        throw std::invalid_argument("kept results of seed " +
                                    std::to_string(seeds->at(first_of(i) + k)) +
                                    ": a nudge JSD of a run that is not finite");
    return part_summaries(i, trained, results.data(), nudges, monitor);
  };
  const auto same_summaries = [&](const ChunkState& state, const MapSummary* made) {
    for (int k = 0; k < 2; ++k)
      if (state.at(cover_name(kCovers[k])) != made[k].to_state())
        throw std::invalid_argument(std::string("a summary of the ") + cover_name(kCovers[k]) +
                                    " seeds that is not the one its kept results give");
  };
  const auto read = [&](std::uint64_t i, const ChunkState& state, bool checked) {
    ChunkSummaries p;
    p.summaries = read_summaries(part, state, static_cast<std::int64_t>(count_of(i)));
    if (keep) read_results(state, first_of(i), count_of(i), p.results, p.nudges, checked);
    return p;
  };
  j.check = [&](std::uint64_t i, const ChunkState& state) {
    const ChunkSummaries p = read(i, state, true);
    if (!keep) return;
    const std::vector<MapSummary> made =
        summaries_of_kept(i, p.results.data(), nudge ? p.nudges.data() : nullptr);
    same_summaries(state, made.data());
  };
  j.native.fold = [&](std::uint64_t, const NativeState& native) {
    const ChunkSummaries& p = std::any_cast<const ChunkSummaries&>(native);
    for (int k = 0; k < 2; ++k) summary[k]->merge(p.summaries[k]);
    kept.insert(kept.end(), p.results.begin(), p.results.end());
    kept_nudge.insert(kept_nudge.end(), p.nudges.begin(), p.nudges.end());
  };
  j.fold = [&](std::uint64_t i, const ChunkState& state) {
    j.native.fold(i, NativeState(read(i, state, false)));
  };
  j.save = [&] {
    ChunkState state;
    for (int k = 0; k < 2; ++k) state[cover_name(kCovers[k])] = summary[k]->to_state();
    if (keep) {
      state["results"] = exact_vector(kept);
      if (nudge) state["nudge"] = exact_vector(kept_nudge);
    }
    return state;
  };
  j.load = [&](const ChunkState& state, std::uint64_t next) {
    const std::int64_t folded = static_cast<std::int64_t>(std::min(count, first_of(next)));
    std::vector<MapSummary> c = read_summaries(whole, state, folded);
    for (int k = 0; k < 2; ++k) summary[k].emplace(c[k]);
    kept.clear();
    kept_nudge.clear();
    if (!keep) return;
    read_results(state, 0, static_cast<std::uint64_t>(folded), kept, kept_nudge, true);
    // The folded chunks' summaries, made again from the kept results as the fold makes them.
    MapSummary made[2] = {whole[0], whole[1]};
    for (std::uint64_t i = 0; i < next; ++i) {
      const std::vector<MapSummary> one = summaries_of_kept(
          i, kept.data() + first_of(i) * tsize, nudge ? kept_nudge.data() + first_of(i) : nullptr);
      for (int k = 0; k < 2; ++k) made[k].merge(one[k]);
    }
    same_summaries(state, made);
  };
  const auto start = std::chrono::steady_clock::now();
  const bool folded = run_chunks(ctx.opt, j);
  train_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (folded)
    for (int k = 0; k < 2; ++k) mean_map[k] = summary[k]->mean_map();
}

// Each seed's JSD to the mean maps: measured again from the kept training results, or by
// training the seeds again (the same bits: a seed trains alone from its own start).
void Sweep::second_pass(std::uint64_t batch) {
  for (int k = 0; k < 2; ++k) to_mean[k].emplace(kJsdQuantity, budget);
  spdlog::debug("attention-sweep: measuring each seed's JSD to the mean map ({})",
                keep ? "from the kept results" : "training every seed again");
  // The converged seeds' mean map exists when some converged.
  const auto converged_mean = [&]() -> std::vector<double> {
    return summary[0] && summary[0]->covered > 0 ? mean_map[0] : std::vector<double>{};
  };
  const bool records_wanted = !per_seed_file.empty();
  if (keep) {  // measured again from the kept training results
    const std::vector<double> cm = converged_mean();
    const std::uint64_t tsize = static_cast<std::uint64_t>(trained_size());
    for (std::uint64_t i = 0; i < chunks; ++i) {
      stop_point();
      const double* trained = kept.data() + first_of(i) * tsize;
      const std::vector<double> results = evaluate(trained, count_of(i), signal_monitor());
      SeedMeasures sm = SeedMeasures::of(*summary[0], cm, mean_map[1], results.data(),
                                         static_cast<std::int64_t>(count_of(i)));
      if (per_seed)
        sm.records = records(first_of(i), trained, results.data(),
                             nudge ? kept_nudge.data() + first_of(i) : nullptr, count_of(i));
      measure(i, sm);
    }
    return;
  }
  const nlohmann::json shared =
      share_result(nlohmann::json{{"converged", converged_mean()}, {"finite", mean_map[1]}});
  const std::vector<double> cm = shared.at("converged").get<std::vector<double>>();
  mean_map[1] = shared.at("finite").get<std::vector<double>>();
  const MapSummary covers = empty(0, 0);  // which seeds converged, on every rank
  ChunkJob j = job(label + "-second-pass", batch);
  j.second_pass = true;
  j.compute = [&](std::uint64_t first, std::uint64_t n) {
    const Monitor& monitor = signal_monitor();
    const std::vector<double> trained = train(first, n, monitor);
    const std::uint64_t seeds_n = trained.size() / trained_size();
    const std::vector<double> results = evaluate(trained.data(), seeds_n, monitor);
    const std::vector<double> nudges =
        records_wanted && nudge
            ? nudge_jsd(results.data(),
                        evaluate(train(first, n, monitor, true).data(), seeds_n, monitor).data(),
                        seeds_n)
            : std::vector<double>{};
    std::vector<ChunkState> states;
    std::uint64_t at = 0;
    for (std::uint64_t i = first; i < first + n; ++i) {
      const std::uint64_t c = count_of(i);
      SeedMeasures sm =
          SeedMeasures::of(covers, cm, mean_map[1], results.data() + at * shape.size(),
                           static_cast<std::int64_t>(c));
      if (records_wanted)
        sm.records =
            records(first_of(i), trained.data() + at * trained_size(),
                    results.data() + at * shape.size(), nudge ? nudges.data() + at : nullptr, c);
      states.push_back(sm.to_state());
      at += c;
    }
    return states;
  };
  const double threshold = ctx.get<double>("--converged-below");
  j.check = [&](std::uint64_t i, const ChunkState& state) {
    const auto n = static_cast<std::int64_t>(count_of(i));
    const SeedMeasures sm =
        SeedMeasures::from_state(state, n, records_wanted ? &record : nullptr, threshold);
    if (!records_wanted) return;
    // Its seeds' records give its measures: each seed measured again from its record's final
    // weights (its maps, outputs, test loss, flags and known-map measures, the record made
    // again) and the JSDs to the mean maps.
    const std::uint64_t tsize = static_cast<std::uint64_t>(trained_size());
    const std::int64_t rsize = record.size();
    std::vector<double> trained(count_of(i) * tsize), nudges(count_of(i));
    for (std::uint64_t k = 0; k < count_of(i); ++k) {
      const double* r = sm.records.data() + k * rsize;
      trained[k * tsize] = r[0];
      trained[k * tsize + 1] = r[1];
      std::copy_n(r + PerSeedRecord::kHead, record.weights(), trained.data() + k * tsize + 2);
      nudges[k] = r[6];
    }
    const std::vector<double> results = evaluate(trained.data(), count_of(i), signal_monitor());
    if (exact_vector(records(first_of(i), trained.data(), results.data(),
                             nudge ? nudges.data() : nullptr, count_of(i))) !=
        exact_vector(sm.records))
      throw std::invalid_argument("records that are not those of their seeds' final weights");
    const SeedMeasures made = SeedMeasures::of(covers, cm, mean_map[1], results.data(), n);
    if (exact_vector(made.jsd) != exact_vector(sm.jsd) ||
        exact_vector(made.jsd_converged) != exact_vector(sm.jsd_converged))
      throw std::invalid_argument("JSDs to the mean map that are not those of its seeds' results");
  };
  j.fold = [&](std::uint64_t i, const ChunkState& state) {
    measure(i, SeedMeasures::from_state(state, static_cast<std::int64_t>(count_of(i)),
                                        records_wanted ? &record : nullptr, threshold));
  };
  j.save = [&] {
    return ChunkState{{"to_mean", to_mean[1]->to_state()},
                      {"to_converged_mean", to_mean[0]->to_state()},
                      {"histogram", histogram},
                      {"scatter_loss", exact_vector(scatter_loss)},
                      {"scatter_jsd", exact_vector(scatter_jsd)}};
  };
  // The folded seeds' measures: JSD sketches (kJsdQuantity's domain), the histogram of the JSDs to
  // the mean map and the scatter of the first kScatter (loss, JSD), each checked against the sketch
  // that holds the same JSDs.
  j.load = [&](const ChunkState& state, std::uint64_t next) {
    const std::int64_t folded = static_cast<std::int64_t>(std::min(count, first_of(next)));
    const QuantileSketch to_finite =
        QuantileSketch(kJsdQuantity, budget)
            .from_state(state.at("to_mean"), folded, "JSD to the mean map");
    const QuantileSketch to_converged = QuantileSketch(kJsdQuantity, budget)
                                            .from_state(state.at("to_converged_mean"), folded,
                                                        "JSD to the converged seeds' mean map");
    if (to_converged.count() > to_finite.count())
      throw std::invalid_argument("more JSDs to the converged seeds' mean map than finite seeds");
    const auto h = state.at("histogram").get<std::vector<std::int64_t>>();
    std::int64_t in_bins = 0;
    for (std::int64_t c : h) in_bins += c < 0 ? throw std::invalid_argument("a negative count") : c;
    if (h.size() != histogram.size() || in_bins != to_finite.count())
      throw std::invalid_argument("a JSD histogram that does not count the finite seeds");
    std::vector<double> loss, jsd;
    append_exact_vector(state.at("scatter_loss").get<std::string>(), loss);
    append_exact_vector(state.at("scatter_jsd").get<std::string>(), jsd);
    if (loss.size() != jsd.size() ||
        loss.size() != std::min<std::uint64_t>(kScatter, static_cast<std::uint64_t>(in_bins)))
      throw std::invalid_argument("a scatter of the wrong length");
    for (std::size_t k = 0; k < loss.size(); ++k) {
      kSeedLoss.check(loss[k]);
      kJsdQuantity.domain.check(jsd[k]);
      if (!std::isfinite(loss[k]))
        throw std::invalid_argument("a scatter point whose loss is not finite");
    }
    if (to_finite.mode() == QuantileSketch::Mode::exact) {
      const std::vector<double>& v = to_finite.kept_values();  // in the order of the seeds
      std::vector<std::int64_t> made(histogram.size(), 0);
      for (const double x : v) made[jsd_bin(x)]++;
      if (made != h)
        throw std::invalid_argument("a JSD histogram that is not that of the JSDs it summarizes");
      if (!std::equal(jsd.begin(), jsd.end(), v.begin()))
        throw std::invalid_argument("a scatter whose JSDs are not the first seeds' JSDs");
    }
    to_mean[1].emplace(to_finite);
    to_mean[0].emplace(to_converged);
    histogram = h;
    scatter_loss = std::move(loss);
    scatter_jsd = std::move(jsd);
    measured = static_cast<std::uint64_t>(folded);
  };
  run_chunks(ctx.opt, j);
}

// Folds one chunk of the second pass, in order: the JSD sketches, the figures, the per-seed files.
void Sweep::measure(std::uint64_t chunk, const SeedMeasures& sm) {
  const std::uint64_t first = first_of(chunk);
  for (std::size_t k = 0; k < sm.jsd.size(); ++k) {
    const double v = sm.jsd[k];
    if (std::isfinite(v)) {
      to_mean[1]->push(v);
      histogram[jsd_bin(v)]++;
      if (scatter_loss.size() < kScatter) {
        scatter_loss.push_back(sm.loss[k]);
        scatter_jsd.push_back(v);
      }
    }
    if (std::isfinite(sm.jsd_converged[k])) to_mean[0]->push(sm.jsd_converged[k]);
    if (per_seed) per_seed->add(seeds->at(first + k), sm.records.data() + k * record.size(), v);
  }
  measured += sm.jsd.size();
}

// This configuration's rows of the table (with its name first in a grid), its notes, and in a
// grid its point of the grid figure.
void Sweep::table(Table& t, bool grid) {
  std::vector<std::string> binned;
  const auto add = [&](std::vector<Cell> cells) {
    if (grid) cells.insert(cells.begin(), Cell(cfg.name));
    t.add_row(std::move(cells));
  };
  // A distribution's row: moments, extremes, quantiles, and the median's distribution-free 95%
  // interval (order statistics x_(l), x_(n-l+1): type-7 quantiles at (l-1)/(n-1) and
  // (n-l)/(n-1), exact when the values are kept, within the binned bound otherwise).
  auto distribution = [&](const std::string& name, const char* over, QuantileSketch q) {
    stop_point();
    if (q.count() == 0) {
      add({name, std::string(over), std::int64_t{0}, NAN, NAN, NAN, NAN, NAN, NAN, NAN, NAN, NAN,
           Cell{}, Cell{}, Cell{}});
      return;
    }
    const QuantileSketch::Mode mode = q.mode();
    std::vector<double> probs = kProbs;
    const std::int64_t n = q.count(), l = median_interval_rank(n);
    if (l > 0) {
      probs.push_back(static_cast<double>(l - 1) / static_cast<double>(n - 1));
      probs.push_back(static_cast<double>(n - l) / static_cast<double>(n - 1));
    }
    const auto qs = q.quantiles(probs, ctx.backend);
    auto at = [&](std::size_t k) { return qs && k < qs->size() ? Cell((*qs)[k]) : Cell(); };
    const char* how = mode == QuantileSketch::Mode::exact    ? "exact"
                      : mode == QuantileSketch::Mode::binned ? "binned"
                                                             : "";
    if (mode == QuantileSketch::Mode::binned) binned.push_back(name);
    add({name, std::string(over), q.count(), q.moments().mean, q.moments().stddev(), q.min(), at(0),
         at(1), at(2), at(3), at(4), q.max(), how[0] ? Cell(std::string(how)) : Cell{}, at(5),
         at(6)});
  };
  auto scalar = [&](const std::string& name, const char* over, std::int64_t k, double value) {
    add({name, std::string(over), k, value, Cell{}, Cell{}, Cell{}, Cell{}, Cell{}, Cell{}, Cell{},
         Cell{}, Cell{}, Cell{}, Cell{}});
  };
  // A fraction k / n with its 95% Wilson interval.
  auto fraction = [&](const std::string& name, const char* over, std::int64_t k, std::int64_t n) {
    const auto [lo, hi] = wilson_interval(k, n);
    add({name, std::string(over), n, n > 0 ? static_cast<double>(k) / static_cast<double>(n) : NAN,
         Cell{}, Cell{}, Cell{}, Cell{}, Cell{}, Cell{}, Cell{}, Cell{}, Cell{}, lo, hi});
  };
  const MapSummary& all = *summary[1];
  const std::int64_t n_all = static_cast<std::int64_t>(count);
  const double n_seeds = static_cast<double>(count);
  fraction("converged (fraction)", "all", all.converged, n_all);
  if (s.test_inputs > 0) fraction("generalized (fraction)", "all", all.generalized, n_all);
  fraction("diverged (fraction)", "all", all.diverged, n_all);
  double pair_means[2] = {NAN, NAN};
  nlohmann::json pair_medians[2];  // the grid figure's: {median, [ci95_low, ci95_high]}
  for (int k = 0; k < 2; ++k) {
    const MapSummary& su = *summary[k];
    const char* over = cover_name(kCovers[k]);
    const std::int64_t used = su.covered;
    distribution("final loss", over, su.loss);
    if (s.test_inputs > 0) distribution("test loss", over, su.test_loss);
    if (su.known_map()) {
      fraction("found the known map (fraction)", over, su.found, used);
      distribution("JSD to the known map", over, su.known_jsd);
    }
    distribution("JSD to the mean map", over, *to_mean[k]);
    distribution("JSD between pairs of seeds", over, su.pair_jsd);
    const auto& row = t.rows.back();
    pair_medians[k] = {
        plot::num(row[t.column("p50")]),
        {plot::num(row[t.column("ci95_low")]), plot::num(row[t.column("ci95_high")])}};
    distribution("JSD between pairs at the start", over, su.pair_start);
    if (s.heads > 1) distribution("JSD between pairs (heads matched)", over, su.pair_heads);
    distribution("output distance between pairs", over, su.pair_out);
    double agree = 0;
    for (int row = 0; row < shape.map_rows(); ++row)
      agree += static_cast<double>(
          *std::max_element(su.argmax.begin() + row * s.n, su.argmax.begin() + (row + 1) * s.n));
    scalar("argmax agreement", over, used,
           used > 0 ? agree / shape.map_rows() / static_cast<double>(used) : NAN);
    if (nudge) {
      distribution("JSD after a nudge (one ulp of W_Q)", over, su.nudge_jsd);
      fraction("rounding-sensitive (fraction)", over, su.sensitive, su.nudged);
    }
    for (int kind = 0; kind < 4; ++kind) {
      if (kind == 3 && !su.known_map()) continue;
      const std::string name = kInterventionNames[kind];
      distribution("change of the loss (" + name + " map)", over, su.interventions[2 * kind]);
      distribution("output distance (" + name + " map)", over, su.interventions[2 * kind + 1]);
    }
    if (interventions.adversary) {
      distribution("adversarial JSD within epsilon", over, su.interventions[kAdversarialJsd]);
      distribution("not unique (fraction of rows)", over, su.interventions[kNotUnique]);
    }
    distribution("Kendall's tau_b (weights vs importance)", over, su.interventions[kTauB]);
    pair_means[k] = su.pair_jsd.count() > 0 ? su.pair_jsd.moments().mean : NAN;
  }
  // The map's entries over the converged seeds, or over the finite ones when none converged.
  const int entries_of = summary[0]->covered > 0 ? 0 : 1;
  const MapSummary& su = *summary[entries_of];
  for (int e = 0; e < s.map_size(); ++e)
    distribution("P[" + std::to_string(s.r0 + e / s.n) + "][" + std::to_string(e % s.n) + "]",
                 cover_name(kCovers[entries_of]), su.entries[e]);

  const std::string prefix = grid ? cfg.name + ": " : "";
  const std::int64_t finite = all.seeds - all.not_finite;
  if (all.converged < 2 || static_cast<double>(all.converged) < 0.1 * n_seeds) {
    t.notes.push_back(prefix +
                      (all.converged == 0 ? std::string("no seed")
                                          : "only " + std::to_string(all.converged) + " of " +
                                                human_count(count, "seed", "seeds")) +
                      " converged: the map measures over the converged seeds are " +
                      (all.converged == 0 ? "empty" : "thin") + "; the rows over all " +
                      std::to_string(finite) + " finite seeds are beside them");
  }
  // A seed equal to the task seed, at the teacher's init scale, starts at the teacher (spec).
  const std::uint64_t task_seed = ctx.get<std::uint64_t>("--task-seed");
  const bool has_task_seed = seeds->is_range ? seeds->first <= task_seed && task_seed < seeds->end
                                             : std::find(seeds->list.begin(), seeds->list.end(),
                                                         task_seed) != seeds->list.end();
  if (s.task == Task::teacher && has_task_seed && m.init_scale == teacher_scale(ctx, s))
    t.notes.push_back(prefix + "seed " + std::to_string(task_seed) +
                      " is the task seed at the teacher's scale: it starts at the teacher");
  if (s.task == Task::reverse && m.causal)
    t.notes.push_back(prefix +
                      "--task reverse with --causal: queries i < (n-1)/2 cannot see their known "
                      "key n-1-i, so no seed can find the known map");
  if (all.diverged > 0) {
    std::string note = prefix + std::to_string(all.diverged) + " of " + std::to_string(count) +
                       " runs diverged (" + std::to_string(all.not_finite) +
                       " with a non-finite loss or map): left out of the converged rows";
    // Gradient descent's step past the loss's curvature is the usual cause.
    if (2 * static_cast<std::uint64_t>(all.diverged) >= count) {
      char lr[64];
      std::snprintf(lr, sizeof lr, "%g", m.lr);
      note += std::string("; a smaller --lr than this run's ") + lr + " may keep them finite";
    }
    t.notes.push_back(note);
  }
  if (!binned.empty()) {
    char bound[200];
    std::snprintf(bound, sizeof bound,
                  "binned quantiles (past --quantile-budget values each): within %.2g (map "
                  "entries), %.2g (JSD) absolute, %.2g of the value (loss, distance)",
                  QuantileSketch::error_bound(kEntryScale), QuantileSketch::error_bound(kJsdScale),
                  QuantileSketch::error_bound(kLossScale));
    t.notes.push_back(prefix + bound);
  }
  if (grid) {
    nlohmann::json point = {{"name", cfg.name},
                            {"converged", static_cast<double>(all.converged) / n_seeds},
                            {"diverged", static_cast<double>(all.diverged) / n_seeds},
                            {"pair_jsd_converged", pair_means[0]},
                            {"pair_jsd_finite", pair_means[1]}};
    const auto [converged_lo, converged_hi] = wilson_interval(all.converged, n_all);
    point["converged_ci95"] = {converged_lo, converged_hi};
    if (summary[1]->known_map()) {  // over the finite seeds, as the table's row
      const std::int64_t found = summary[1]->found, finite_seeds = summary[1]->covered;
      const auto [found_lo, found_hi] = wilson_interval(found, finite_seeds);
      point["found"] = finite_seeds > 0 ? static_cast<double>(found) / finite_seeds : NAN;
      point["found_ci95"] = {found_lo, found_hi};
    }
    for (int k = 0; k < 2; ++k) {
      const std::string key = std::string("pair_jsd_") + cover_name(kCovers[k]) + "_median";
      point[key] = pair_medians[k][0];
      point[key + "_ci95"] = pair_medians[k][1];
    }
    if (s.test_inputs > 0) point["generalized"] = static_cast<double>(all.generalized) / n_seeds;
    point["pair_jsd_start_finite"] =
        summary[1]->pair_start.count() > 0 ? summary[1]->pair_start.moments().mean : NAN;
    for (auto& [flag, text] : cfg.text) point[flag.substr(2)] = text;
    t.extra["grid"].push_back(point);
    return;
  }
  nlohmann::json mean_rows = nlohmann::json::array(), std_rows = nlohmann::json::array();
  for (int row = 0; row < s.rows(); ++row) {
    nlohmann::json a = nlohmann::json::array(), b = nlohmann::json::array();
    for (int j = 0; j < s.n; ++j) {
      const Moments& mo = su.entries[row * s.n + j].moments();
      a.push_back(mo.mean);
      b.push_back(su.covered > 1 ? mo.stddev() : 0.0);
    }
    mean_rows.push_back(a);
    std_rows.push_back(b);
  }
  t.extra["first_loss_row"] = s.r0;
  t.extra["mean_map"] = mean_rows;
  t.extra["std_map"] = std_rows;
  t.extra["jsd_histogram"] = {
      {"bins", kJsdBins}, {"range", {0.0, std::log(2.0)}}, {"counts", histogram}};
  t.extra["scatter"] = {{"loss", scatter_loss}, {"jsd", scatter_jsd}};
}

// What the interventions take (InterventionTask): the model, the measured inputs, ε, and the known
// maps of every head on every measured input: M*'s one-hot rows for the token tasks, the
// teacher's maps for teacher, none for random.
InterventionTask intervention_task(const RunContext& ctx, const Shape& s, const Sweep& w) {
  InterventionTask t;
  t.m = w.m;
  t.x = w.measured_x();
  t.y = w.measured_y();
  t.frozen_known = w.measured_known();
  t.inputs = s.measured();
  t.shape = w.shape;
  t.epsilon = ctx.get<double>("--epsilon");
  t.adversary = ctx.get<std::string>("--adversary") == "on";
  if (s.task == Task::teacher) {
    t.known = w.data.teacher_maps;
  } else if (!w.known.keys.empty()) {
    const std::int64_t rows = s.rows(), n = s.n;
    t.known.assign(static_cast<std::size_t>(s.measured()) * s.heads * rows * n, 0.0);
    for (std::int64_t at = 0; at < static_cast<std::int64_t>(t.known.size()) / n; ++at)
      t.known[at * n + w.known.keys[at % rows]] = 1.0;
  }
  return t;
}

// --per-seed's file name, checked before any work.
void check_per_seed_file(const RunContext& ctx, const std::string& per_seed_file) {
  if (!per_seed_file.empty() && PerSeedMaps::files(per_seed_file, PerSeedRecord{}).size() > 1 &&
      std::filesystem::path(per_seed_file).filename().string().size() <= 4)
    throw std::invalid_argument("--per-seed " + per_seed_file +
                                ": a file name before the extension, e.g. maps.npy");
  if (!per_seed_file.empty() && !ctx.opt.checkpoint.empty())
    throw std::invalid_argument(
        "--per-seed with --checkpoint: the rows written so far are not checkpointed; drop one");
}

// Every configuration checked and sized before any work: its task made, its chunks, calls and
// quantile budget chosen, and the memory the sweep needs up to it checked against what is
// available. flops: the training's FLOPs in all.
std::vector<std::unique_ptr<Sweep>> size_sweeps(const RunContext& ctx,
                                                const std::vector<Config>& configs,
                                                const std::string& per_seed_file, bool nudge,
                                                double& flops) {
  const bool grid = configs.size() > 1;
  const SeedSet& seeds = ctx.get<SeedSet>("--seeds");
  std::vector<std::unique_ptr<Sweep>> sweeps;
  double memory_needed = 0;
  flops = 0;
  const double memory = memory_available();
  const auto too_much = [&](double bytes, const std::string& what) {
    if (bytes > 0.8 * memory)
      throw std::invalid_argument("--seeds " + seeds.text() + ": the sweep needs about " +
                                  human_bytes(bytes) + " of memory (" + what + "), " +
                                  human_bytes(memory) +
                                  " available; use fewer inputs, words or configurations, a "
                                  "smaller --quantile-budget or --map-memory");
  };
  for (std::size_t k = 0; k < configs.size(); ++k) {
    auto w = std::make_unique<Sweep>(ctx, configs[k], check_shape(ctx, configs[k]));
    const Shape& s = w->s;
    const std::string where = configs[k].name.empty() ? "" : " (" + configs[k].name + ")";
    if (ctx.get<std::int64_t>("--map-inputs") > s.measured())
      throw std::invalid_argument(
          "--map-inputs " + ctx.settings.text("--map-inputs") + ": the run measures " +
          human_count(static_cast<std::uint64_t>(s.measured()), "input", "inputs") +
          " (--test-inputs, or the training inputs with --test-inputs 0)" + where);
    w->label = grid ? "attention-sweep-" + std::to_string(k) : "attention-sweep";
    w->seeds = &seeds;
    w->count = seeds.size();
    w->per_seed_file = per_seed_file;
    w->nudge = nudge;
    w->m = model_of(ctx, configs[k], s);
    w->shape = SeedResults{s.rows(), s.n, s.d_out(), s.heads, s.measured()};
    // The inputs, the measures' state and a call's arrays, sized before any is made.
    const double data_bytes =
        8.0 * (s.inputs + s.test_inputs) * s.n *
        (s.d_model + s.d_out() + (s.map == head::MapMode::known ? s.heads * s.rows() : 0));
    const double entry_bytes = 4 * 400.0 * w->shape.map_size() * (s.heads + 1);
    too_much(data_bytes + entry_bytes, "the inputs and the mean maps" + where);
    w->data = make_task(ctx, s, w->m);
    w->m.x = w->data.x.data();
    w->m.y = w->data.y.data();
    if (s.map == head::MapMode::known) w->m.known = w->data.known_maps.data();
    w->known = known_map(ctx, s, w->data, w->shape);
    w->interventions = intervention_task(ctx, s, *w);
    w->record.results = w->shape;
    w->record.map_inputs = static_cast<int>(ctx.get<std::int64_t>("--map-inputs"));
    w->record.inputs_axis = s.many();
    w->record.nudge = nudge;
    w->record.known = !w->known.empty();
    w->record.d_model = s.d_model;
    w->record.d_k = s.d_k;
    w->record.d_v = s.d_v;
    w->record.w_o = s.train_output;
    w->per_chunk = seeds_per_chunk(w->m);
    w->chunks = (w->count + w->per_chunk - 1) / w->per_chunk;
    // Values kept per quantity: the budget shared by the table's quantities (per cover: the
    // losses, the JSDs, the distance, each map entry that keeps quantiles) and configurations.
    const int entry_sketches = s.map_size() <= kMaxEntrySketches ? s.map_size() : 0;
    const int quantities = 2 * (9 + kInterventionFields + entry_sketches);
    w->budget = ctx.get<std::uint64_t>("--quantile-budget") /
                static_cast<std::uint64_t>(quantities) / configs.size();
    // Kept for the second pass (keep mode): each seed's training result (and nudge JSD).
    const double kept_bytes = 8.0 * (w->trained_size() + (nudge ? 1 : 0));
    w->keep = static_cast<double>(w->count) * kept_bytes <=
              static_cast<double>(ctx.get<std::uint64_t>("--map-memory"));
    if (w->chunks > kMaxChunks)
      throw std::invalid_argument("--seeds " + seeds.text() + ": " + std::to_string(w->chunks) +
                                  " chunks of " + std::to_string(w->per_chunk) +
                                  " seeds, more than the 2^28 the chunk driver takes; split the "
                                  "range into several runs");
    ctx.backend.check_head(w->m);
    const std::uint64_t call = std::max<std::uint64_t>(
        static_cast<std::uint64_t>(ctx.backend.head_seeds_per_call(w->m)), w->per_chunk);
    w->batch = std::max<std::uint64_t>(1, call / w->per_chunk);
    // A call never trains fewer seeds than take its time (a lane pack per CPU thread).
    w->least =
        std::min(w->batch, (ctx.backend.least_seeds_per_call() + w->per_chunk - 1) / w->per_chunk);
    // A call's arrays per seed: training results, measured results (twice with --nudge), the
    // start's maps, the evaluation's output, and the per-seed records; the workspaces.
    const double per_seed_call =
        8.0 * (w->trained_size() * (nudge ? 2 : 1) + w->shape.size() * (nudge ? 4 : 2) +
               static_cast<double>(s.heads) * w->shape.map_size() * 2 + w->record.size());
    const double call_bytes = static_cast<double>(std::min(call, w->count)) * per_seed_call * 1.5 +
                              ctx.backend.head_workspace_bytes(w->m);
    // What stays until the table: the inputs, the summaries (and the kept results, one
    // configuration at a time).
    memory_needed = std::max(
        memory_needed, call_bytes + (w->keep ? static_cast<double>(w->count) * kept_bytes * 3 : 0));
    memory_needed += static_cast<double>(quantities) * 8 * static_cast<double>(w->budget) +
                     entry_bytes + data_bytes;
    too_much(memory_needed, "the inputs, the measures and a call's arrays" + where);
    flops += static_cast<double>(w->count) * w->m.steps * head_sizing::flops_per_seed_step(w->m) *
             (w->keep ? 1 : 2) * (nudge ? 2 : 1);
    sweeps.push_back(std::move(w));
  }
  return sweeps;
}

// --per-seed's file for the one configuration w: its disk space checked and, where this run
// reports results, the file opened.
void open_per_seed_file(const RunContext& ctx, Sweep& w, const std::string& per_seed_file) {
  if (ctx.opt.shards > 0)
    spdlog::info("--per-seed {}: written by demo merge (a part holds its seeds' results)",
                 per_seed_file);
  // The disk for --per-seed, before any work: a destination that cannot take it (exit 1).
  const double need = PerSeedMaps::bytes(per_seed_file, w.record, w.count);
  std::filesystem::path dir = std::filesystem::path(per_seed_file).parent_path();
  if (dir.empty()) dir = ".";
  std::error_code ec;
  const auto space = std::filesystem::space(dir, ec);
  if (!ec && need > static_cast<double>(space.available))
    throw std::runtime_error("--per-seed " + per_seed_file + ": about " + human_bytes(need) +
                             " of results, " + human_bytes(static_cast<double>(space.available)) +
                             " free on that disk; use fewer seeds or leave out --per-seed");
  if (reports_results(ctx.opt))
    w.per_seed =
        std::make_unique<PerSeedMaps>(per_seed_file, ctx.opt.force, w.record, w.s.r0, w.count);
}

// Each configuration's passes over its seeds: the first (summaries, mean maps) and, where the
// results were not kept or this run reports them, the second (JSDs to the mean map).
void train_sweeps(const RunContext& ctx, std::vector<std::unique_ptr<Sweep>>& sweeps) {
  for (auto& w : sweeps) {
    spdlog::debug("attention-sweep: {}{} seeds in {} chunks of {}, {} pass{}",
                  w->cfg.name.empty() ? "" : w->cfg.name + ": ", w->count, w->chunks, w->per_chunk,
                  w->keep ? 1 : 2, w->keep ? "" : "es");
    if (!w->keep && ctx.opt.shards == 0)
      spdlog::info(
          "attention-sweep: the seeds' results need more than --map-memory: every seed trains "
          "twice (the second time for its JSD to the mean map)");
    w->first_pass(w->batch);
    if (w->mean_map[1].empty() && (w->keep || ctx.opt.shards > 0)) continue;  // a part, a rank
    if (!w->keep || reports_results(ctx.opt)) w->second_pass(w->batch);
    w->kept.clear();
    w->kept.shrink_to_fit();
    w->kept_nudge.clear();
    w->kept_nudge.shrink_to_fit();
  }
}

// The table's name, title and columns (a configuration column for a grid).
Table empty_table(bool grid) {
  Table t;
  t.name = "attention-sweep";
  t.title = "attention maps across seeds: how far apart the maps are, and how far the outputs";
  if (grid) t.columns.push_back({"configuration"});
  for (Column c : std::vector<Column>{{"quantity"},
                                      {"over"},
                                      {"seeds"},
                                      {"mean", "%.4g"},
                                      {"std", "%.4g"},
                                      {"min", "%.4g"},
                                      {"p05", "%.4g"},
                                      {"p25", "%.4g"},
                                      {"p50", "%.4g"},
                                      {"p75", "%.4g"},
                                      {"p95", "%.4g"},
                                      {"max", "%.4g"},
                                      {"quantiles"},
                                      {"ci95_low", "%.4g"},
                                      {"ci95_high", "%.4g"}})
    t.columns.push_back(c);
  if (grid) t.extra["grid"] = nlohmann::json::array();
  return t;
}

// The training speed, the table's first note (analytic gradients, a run of all the seeds).
void add_speed_note(const RunContext& ctx, const std::vector<std::unique_ptr<Sweep>>& sweeps,
                    Table& t) {
  const Sweep& w0 = *sweeps[0];
  if (w0.m.grad != head::Grad::analytic || ctx.opt.shards != 0) return;
  // What trained in this run (under MPI: in every rank, over rank 0's time), not what a
  // checkpoint or the parts brought.
  double seed_steps = 0, train_seconds = 0, useful = 0;
  std::uint64_t here = 0, all = 0;
  for (const auto& w : sweeps) {
    const std::uint64_t trained = w->trained_here;
    // Every seed's steps, twice with --nudge (its second run).
    const double steps = static_cast<double>(trained) * w->m.steps * (w->nudge ? 2 : 1);
    seed_steps += steps;
    train_seconds += w->train_seconds;
    useful += steps * head::flops_per_step(w->m);
    here += trained;
    all += w->count;
  }
  std::string line;
  if (here == 0) {
    line =
        "no seed trained in this run (every chunk came from a checkpoint or the parts): no "
        "speed to state";
  } else {
    char text[240];
    std::snprintf(text, sizeof text,
                  "%.3g seed-steps in %.3g s: %.3g seed-steps/s, %.3g GFLOP/s (%.0f useful "
                  "FLOPs per seed-step)%s",
                  seed_steps, train_seconds, seed_steps / train_seconds,
                  useful / train_seconds / 1e9, useful / seed_steps,
                  w0.keep ? "" : "; the first of two passes");
    line = text;
    if (here < all)
      line += "; this run trained " + human_count(here, "seed", "seeds") + " of " +
              std::to_string(all) + ", the rest came from a checkpoint or the parts";
  }
  t.notes.insert(t.notes.begin(), line);
}

// A grid's notes that several configurations share ("NAME: text" the same text): one line that
// names them, at the first one's place, or "every configuration".
void merge_configuration_notes(const std::vector<std::unique_ptr<Sweep>>& sweeps, Table& t) {
  std::vector<std::string> notes;
  std::vector<std::vector<std::string>> names;  // of notes[i]; empty: a note of the whole grid
  std::map<std::string, std::size_t> place;
  for (const std::string& note : t.notes) {
    const auto of = std::find_if(sweeps.begin(), sweeps.end(), [&](const auto& w) {
      return note.rfind(w->cfg.name + ": ", 0) == 0;
    });
    if (of == sweeps.end()) {
      notes.push_back(note);
      names.emplace_back();
      continue;
    }
    const std::string text = note.substr((*of)->cfg.name.size() + 2);
    const auto [at, added] = place.emplace(text, notes.size());
    if (added) {
      notes.push_back(text);
      names.emplace_back();
    }
    names[at->second].push_back((*of)->cfg.name);
  }
  for (std::size_t i = 0; i < notes.size(); ++i)
    if (!names[i].empty())
      notes[i] = (names[i].size() == sweeps.size() ? std::string("every configuration")
                                                   : joined(names[i], ", ")) +
                 ": " + notes[i];
  t.notes = notes;
}

// The table's notes: the training speed, what the quantities are, and what this run chose.
void add_notes(const RunContext& ctx, const std::vector<std::unique_ptr<Sweep>>& sweeps, bool grid,
               bool nudge, Table& t) {
  const Sweep& w0 = *sweeps[0];
  const Shape& s = w0.s;
  add_speed_note(ctx, sweeps, t);
  const std::vector<std::string> general = {
      "over: converged = final loss < " + ctx.settings.text("--converged-below") +
          " and not diverged; finite = losses and maps finite; diverged = not finite, or a final "
          "loss above 10 times the starting loss",
      "JSD in nats (0: same map, ln 2 = 0.693: maps that share nothing), the mean over the loss "
      "rows R = queries " +
          std::to_string(s.r0) + ".." + std::to_string(s.n - 1) +
          (s.heads > 1 ? "; maps averaged over the heads, except 'heads matched' (heads of the "
                         "two seeds paired by the assignment of least JSD)"
                       : ""),
      "pairs: seeds in the order given, (1st, 2nd), (3rd, 4th), ..., both covered; output "
      "distance: RMS over R of |F_a - F_b|"};
  t.notes.insert(t.notes.begin() + (t.notes.empty() ? 0 : 1), general.begin(), general.end());
  if (s.many())
    t.notes.push_back(
        "inputs: each seed trains on --inputs " + std::to_string(s.inputs) +
        (grid ? " (per configuration)" : "") + " inputs (loss and gradient their mean); " +
        (s.test_inputs > 0
             ? "the map measures, outputs and test loss are taken on " +
                   std::to_string(s.test_inputs) + " held-out inputs; generalized = test loss < " +
                   ctx.settings.text("--converged-below") + " and not diverged"
             : std::string("the map measures are taken on the training inputs")) +
        "; a JSD or distance between two maps is the mean over those inputs and the loss rows; "
        "P[i][j]: the first measured input's map");
  if (s.token())
    t.notes.push_back(
        "known map (--task " + ctx.get<std::string>("--task") +
        "): found = every loss row's argmax (of the head-averaged map) at the known key" +
        (s.many() ? ", on every measured input" : ""));
  if (s.task == Task::teacher)
    t.notes.push_back(
        "known map (--task teacher): the teacher's head-averaged maps on the "
        "measured inputs; found = mean JSD to them below --found-below " +
        ctx.settings.text("--found-below"));
  t.notes.push_back(
      "ci95: for a fraction its 95% Wilson score interval; for a distribution the median's "
      "distribution-free 95% interval (order statistics of the binomial; none below 6 seeds)");
  t.notes.push_back(
      "JSD between pairs at the start: the same pairs' maps at their starting weights, the null "
      "the trained JSD is read against");
  if (nudge)
    t.notes.push_back(
        "--nudge: every seed trained again from W_Q[0][0] one ulp up; rounding-sensitive = the "
        "two runs' maps more than 1e-06 nats apart (JSD) or the second not finite: where many "
        "are, a single seed's map is not defined more precisely than rounding allows, and only "
        "the distributions over seeds are reproducible");
  std::vector<std::string> frozen;  // the frozen maps of the configurations, in the grid's order
  for (const auto& w : sweeps) {
    const std::string& map = w->cfg.text.at("--map");
    if (w->s.map != head::MapMode::learned &&
        std::find(frozen.begin(), frozen.end(), map) == frozen.end())
      frozen.push_back(map);
  }
  if (!frozen.empty())
    t.notes.push_back(
        "--map " + frozen[0] + (frozen.size() > 1 ? ", " + frozen[1] : "") +
        ": every head's map frozen (uniform: 1/k on the k keys a query sees; known: the task's "
        "known map, the teacher's head h for head h) and only W_V (and W_O) trained, W_Q and W_K "
        "kept at their starting draws; the map measures are of the frozen map, the losses and "
        "fractions are what compares with the learned map" +
        (nudge ? "; a nudge of W_Q moves no frozen map" : ""));
  if (!w0.keep)
    t.notes.push_back(
        "JSD to the mean map: every seed trained a second time once the mean map was known (the "
        "seeds' results did not fit --map-memory)");
  if (!w0.summary[1]->entry_quantiles())
    t.notes.push_back("map entries: moments and extremes only (more than " +
                      std::to_string(kMaxEntrySketches) + " entries)");
  // The values "auto" chose: one note when every configuration took the same.
  std::vector<std::string> chosen;
  for (const auto& w : sweeps)
    if (std::isnan(w->cfg.get<double>("--lr")) || std::isnan(w->cfg.get<double>("--init-scale"))) {
      char what[200];
      std::snprintf(what, sizeof what, "--lr %g, --init-scale %g (auto for --task %s)", w->m.lr,
                    w->m.init_scale, ctx.get<std::string>("--task").c_str());
      chosen.push_back((grid ? w->cfg.name + ": " : std::string()) + what);
      if (grid && chosen.size() == sweeps.size() &&
          std::all_of(sweeps.begin(), sweeps.end(), [&](const auto& v) {
            return v->m.lr == w->m.lr && v->m.init_scale == w->m.init_scale;
          }))
        chosen = {what};
    }
  t.notes.insert(t.notes.end(), chosen.begin(), chosen.end());
  // The widths auto chose (one shape for every configuration).
  std::vector<std::string> widths;
  if (ctx.get<std::string>("--d-model") == "auto")
    widths.push_back("d_model " + std::to_string(s.d_model) + " (auto: " +
                     (!s.token()    ? "the default for --task " + ctx.get<std::string>("--task")
                      : s.vocab > 0 ? std::string("--vocab + --words")
                                    : std::string("--words")) +
                     ")");
  if (ctx.get<std::string>("--d-v") == "auto")
    widths.push_back("d_v " + std::to_string(s.d_v) + " (auto: d_model)");
  if (!widths.empty()) t.notes.push_back(joined(widths, ", "));
}

// The table's run record: the settings, and each configuration of a grid.
void add_run_record(const RunContext& ctx, const std::vector<std::unique_ptr<Sweep>>& sweeps,
                    bool grid, Table& t) {
  const Sweep& w0 = *sweeps[0];
  const Shape& s = w0.s;
  const SeedSet& seeds = ctx.get<SeedSet>("--seeds");
  const auto& m = w0.m;
  t.run = {
      {"task", ctx.get<std::string>("--task")},
      {"words", s.n},
      {"d_model", s.d_model},
      {"d_k", s.d_k},
      {"d_v", s.d_v},
      {"heads", s.heads},
      {"causal", m.causal},
      {"scale", w0.cfg.text.at("--scale")},
      {"optimizer", w0.cfg.text.at("--optimizer")},
      {"train", w0.cfg.text.at("--train")},
      {"map", w0.cfg.text.at("--map")},
      {"steps", m.steps},
      {"lr", m.lr},
      {"grad", ctx.get<std::string>("--grad")},
      {"schedule", ctx.get<std::string>("--schedule")},
      {"init_scale", m.init_scale},
      {"seeds", seeds.text()},
      {"converged_below", ctx.get<double>("--converged-below")},
      {"diverged_factor", kDivergedFactor},
      {"quantile_budget", ctx.get<std::uint64_t>("--quantile-budget")},
      {"quantile_budget_per_quantity", w0.budget},
      {"passes", w0.keep ? 1 : 2},
      {"useful_flops_per_seed_step", head::flops_per_step(m)},
      {"init",
       "numpy default_rng(seed).normal(size=...) for W_Q, W_K, W_V (then W_O with qkvo), times "
       "--init-scale"}};
  if (grid) {
    nlohmann::json list = nlohmann::json::array();
    for (const auto& w : sweeps) {
      nlohmann::json c = {{"name", w->cfg.name}, {"lr", w->m.lr}, {"init_scale", w->m.init_scale}};
      for (const auto& [flag, text] : w->cfg.text) c[flag.substr(2)] = text;
      list.push_back(c);
    }
    t.run["configurations"] = list;
  }
  if (!s.token() || s.vocab > 0) t.run["task_seed"] = ctx.get<std::uint64_t>("--task-seed");
  t.run["inputs"] = s.inputs;
  t.run["test_inputs"] = s.test_inputs;
  t.run["measured_inputs"] = s.measured();
  if (s.vocab > 0) t.run["vocab"] = s.vocab;
  if (s.task == Task::teacher) {
    t.run["teacher_scale"] = teacher_scale(ctx, s);
    t.run["found_below"] = ctx.get<double>("--found-below");
  }
  t.run["nudge"] = w0.nudge;
  t.run["adversary"] = ctx.get<std::string>("--adversary") == "on";
  t.run["epsilon"] = ctx.get<double>("--epsilon");
}

std::vector<Table> run(const RunContext& ctx) {
  const std::vector<Config> configs = grid_of(ctx);
  const bool grid = configs.size() > 1;
  const std::string per_seed_file = ctx.get<std::string>("--per-seed");
  check_per_seed_file(ctx, per_seed_file);
  const bool nudge = ctx.get<std::string>("--nudge") == "on";
  double flops = 0;
  std::vector<std::unique_ptr<Sweep>> sweeps =
      size_sweeps(ctx, configs, per_seed_file, nudge, flops);
  if (grid && !per_seed_file.empty())
    throw std::invalid_argument("--per-seed with a grid of " + std::to_string(configs.size()) +
                                " configurations: run one configuration per file");
  if (grid)
    spdlog::info("attention-sweep: a grid of {} configurations, {:.3g} FLOPs of training in all",
                 configs.size(), flops);
  // The adversarial map's search costs about the sixth power of the keys a row has (docs/CLI.md,
  // --adversary: about 0.4 s a row of 32 keys on one core): from 24 words it can outweigh the
  // training many times over. Said before the work, with an estimate and the way out.
  if (ctx.get<std::string>("--adversary") == "on" && sweeps[0]->s.n >= kAdversaryWarnWords) {
    const Shape& s = sweeps[0]->s;
    const double per_row = 0.4 * std::pow(s.n / 32.0, 6);
    const double rows = static_cast<double>(ctx.get<SeedSet>("--seeds").size()) *
                        static_cast<double>(sweeps.size()) * s.heads * s.measured() *
                        (s.n - sweeps[0]->m.r0);
    spdlog::warn(
        "warning: --adversary on with {} words: the adversarial map's search grows about as the "
        "sixth power of the keys a row has, about {} a row here and {} of core time for this "
        "run's {:.3g} rows (seeds x heads x measured inputs x loss rows), beside the training; "
        "--adversary off leaves it out",
        s.n, human_duration(per_row), human_duration(per_row * rows), rows);
  }
  if (!per_seed_file.empty()) open_per_seed_file(ctx, *sweeps[0], per_seed_file);
  train_sweeps(ctx, sweeps);
  if (!reports_results(ctx.opt)) return {};
  if (sweeps[0]->per_seed) sweeps[0]->per_seed->commit();
  Table t = empty_table(grid);
  for (auto& w : sweeps) w->table(t, grid);
  add_notes(ctx, sweeps, grid, nudge, t);
  if (grid) merge_configuration_notes(sweeps, t);
  add_run_record(ctx, sweeps, grid, t);
  return {t};
}
}  // namespace

const Experiment& attention_sweep_experiment() {
  static const Experiment e{
      .name = "attention-sweep",
      .summary = "attention-map variability across seeds for a general head (beyond)",
      .runs = Runs::backend,
      .params =
          [] {
            std::vector<Param> p = {
                param::choice(
                    "--task", "lesson",
                    "lesson (the last word outputs the first), previous (each word outputs the "
                    "one before), reverse (word i outputs word n-1-i): words X = I_n, or tokens "
                    "and positions with --vocab; random (X, Y normals) or teacher (Y a planted "
                    "head's output on normal X), from numpy default_rng(--task-seed)",
                    {"lesson", "previous", "reverse", "random", "teacher"}),
                param::u64("--task-seed", "0",
                           "Seed of the task's inputs: numpy default_rng(N) draws them (and the "
                           "teacher)"),
                integer_or_auto("--test-inputs",
                                "Held-out inputs T, drawn after the training inputs; the "
                                "measures are taken on them; auto: 0 with --inputs 1, else 64",
                                0, kMaxInputs),
                param::integer("--vocab", "0",
                               "Vocabulary V of the token tasks: each input a sequence of "
                               "numpy integers(0, V), X_i = [one_hot_V(t_i), one_hot_n(i)], "
                               "d_model = V + n; 0: X = I_n, one input",
                               0, kMaxSize),
                auto_real("--teacher-scale",
                          "--task teacher: the teacher's weights, numpy normals times X; auto: "
                          "1/sqrt(d_model)",
                          0, 1e6),
                param::real("--found-below", "1e-3",
                            "--task teacher: a seed found the teacher's map when its maps' mean "
                            "JSD to it is below X nats",
                            0, 1, true),
                param::real("--epsilon", "0.01",
                            "The adversarial map's reach: the largest JSD(p', p) with "
                            "|(p' - p) V|_2 <= X, per head, measured input and loss row",
                            0, 1e6, false),
                param::integer("--map-inputs", "1",
                               "--per-seed: the maps and outputs of the first K measured inputs", 1,
                               kMaxInputs),
                nudge_param(),
                adversary_param(),
                param::integer("--words", "2", "Words n (rows of X)", 1, kMaxSize),
                integer_or_auto("--d-model",
                                "d_model (columns of X); auto: the token tasks' input width "
                                "(lesson, previous, reverse: --words, or --vocab + --words with "
                                "a vocabulary), 2 for random and teacher",
                                1, kMaxSize),
                integer_or_auto("--d-v", "d_v (columns of W_V); auto: d_model", 1, kMaxSize),
                param::seeds("--seeds", "0:10000", "Seeds: a list 0,1 (distinct) or a range A:B",
                             std::uint64_t{1} << 53,
                             [](std::uint64_t) {
                               return std::string("counts stay exact up to 2^53 seeds");
                             }),
                param::integer("--steps", "3000", "Gradient steps", 1, 1000000000),
                param::choice("--grad", "analytic",
                              "analytic (softmax Jacobian) or numeric (central differences)",
                              {"numeric", "analytic"}),
                param::real("--h", "1e-5", "Step of the numeric gradient", 0, 1, true),
                param::choice("--schedule", "sequential",
                              "sequential (the lesson's: W_Q, then W_K, then W_V, then W_O) or "
                              "simultaneous",
                              {"sequential", "simultaneous"}),
                param::real("--converged-below", "1e-4", "A run converged if its loss ends below X",
                            0, 1e300, true),
                param::output_file(
                    "--per-seed",
                    "Also write every seed's results: FILE.csv (a row each) or FILE.npy (the maps "
                    "on the first --map-inputs measured inputs as an array, beside "
                    "FILE.seeds/.loss/.test_loss/.converged/.../.out/.w_q/.w_k/.w_v(/.w_o).npy)",
                    {".csv", ".npy"}),
                param::count_up_to("--quantile-budget", "4194304",
                                   "Values kept for exact quantiles, shared by the table's "
                                   "quantities (8 bytes each); beyond, binned quantiles",
                                   std::uint64_t{1} << 30),
                param::count_up_to("--map-memory", "33554432",
                                   "Bytes of seeds' results kept for the JSD to the mean map; a "
                                   "larger sweep trains its seeds a second time instead",
                                   std::uint64_t{1} << 40)};
            // The grid's axes: a value, or a comma-separated list of them.
            for (const Param& axis : axes()) {
              Param g = grid_axis(axis);
              g.help += "; a comma-separated list runs each (a grid)";
              if (axis.flag == "--causal") g.implicit_value = "on";
              p.push_back(std::move(g));
            }
            return p;
          }(),
      // Two square heatmaps with their colour bars: a canvas of their width, not a wide one.
      .figures = {{"attention-sweep-map", true, heatmap_script,
                   [](const Table&) { return std::string("1150,500"); }},
                  {"attention-sweep-jsd", false, jsd_histogram_script},
                  {"attention-sweep-loss-jsd", false, scatter_script},
                  {"attention-sweep-grid", true, grid_script,
                   [](const Table& t) {
                     const std::vector<std::string> names = grid_names(t);
                     return grid_over_dk(names) ? std::string("1500,500")
                                                : configuration_canvas(names, 2, kGridKeyLines);
                   }},
                  {"attention-sweep-interventions", true, interventions_script,
                   [](const Table& t) {
                     return configuration_canvas(row_configurations(t), intervention_panels(t),
                                                 kInterventionKeyLines);
                   }}},
      .examples = {"demo --table attention-sweep --task random --words 8 --d-model 16 --d-k 16 "
                   "--seeds 0:10000 --steps 1000",
                   "demo --table attention-sweep --task previous --words 8 --d-model 8 --d-k 8 "
                   "--train qk,qkv --causal --seeds 0:10000",
                   "demo --table attention-sweep --task lesson --words 2 --d-model 2 --d-k 2 "
                   "--train qk"},
      .run = run,
      .chunked = true};
  return e;
}

}  // namespace attn
