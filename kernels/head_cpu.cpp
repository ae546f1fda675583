// head_cpu.cpp: CPU twin of the general head's training (head.hpp), and the measurement of
// trained weights on a set of inputs (evaluate_seeds_cpu). OpenMP over groups of kPackLanes
// seeds; each group trains (or is evaluated) in lockstep as one lane pack (lanes.hpp), so every
// arithmetic operation is one SIMD instruction over kPackLanes seeds, and each lane computes
// exactly what the GPU's thread computes for its seed. One workspace per thread, allocated once
// per call; nothing is allocated or copied per step.
#include <algorithm>
#include <memory>
#include <new>

#include "cpu_clones.hpp"
#include "cpu_threads.hpp"
#include "head.hpp"
#include "head_pack.hpp"
#include "lanes.hpp"

namespace attn::head {
namespace {

using P = PackD;

// 64 bytes: a whole pack. Not alignof(P), which outside the AVX-512 clone is capped at the
// default target's 16 while the clone's code assumes 64.
constexpr std::align_val_t kAlign{64};

struct Free {
  void operator()(P* p) const { ::operator delete(p, kAlign); }
};

// Trains seeds[0 .. lanes) (lanes <= kPackLanes; a short group repeats its last seed) in the
// workspace ws (layout(m).total + pack::scratch_size(m) packs) and writes their results; writes
// nothing when the monitor asked to stop. The training is head_pack.hpp's, compiled for level L.
template <CpuLevel L>
ATTN_INLINE void train_group_body(const Model& m, const std::uint64_t* seeds, int lanes, P* ws,
                                  double* out, const Monitor& monitor) {
  for (int lane = 0; lane < kPackLanes; ++lane) {
    auto store = [ws, lane](std::int64_t at, double v) { ws[at][lane] = v; };
    initial_weights(m, seeds[std::min(lane, lanes - 1)], store);
  }
  // The monitor is asked at every test when a step is 1e5 FLOPs or more (the call is then
  // nothing beside it), at every 16th below (a virtual call at each numeric-gradient element
  // would be a large share of a step of the lesson's size, ~100 FLOPs). A step of kRowTestFlops
  // or more is also tested before each row of each matrix product, so that the work between two
  // tests is one row (n or d_model multiply-adds per column) however large the head. Once it
  // said stop, every test says so, so that train's loops all end at once.
  constexpr double kRowTestFlops = 1e7;
  const double flops = flops_per_step(m);
  const unsigned mask = flops < 1e5 ? 15 : 0;
  bool stopped = false;
  unsigned tests = 0;
  const auto stop = [&] {
    return stopped || ((++tests & mask) == 0 && (stopped = monitor.stop_requested()));
  };
  struct Asking {
    bool* stopped;
    const Monitor* monitor;
  } asking{&stopped, &monitor};
  pack::RowTest rows;
  if (flops >= kRowTestFlops) {
    rows.context = &asking;
    rows.ask = [](void* context) {
      const Asking& a = *static_cast<const Asking*>(context);
      return *a.stopped || (*a.stopped = a.monitor->stop_requested());
    };
  }
  pack::train<L>(m, ws, stop, rows);
  if (stopped) return;
  const std::int64_t size = result_size(m);
  for (int lane = 0; lane < lanes; ++lane) {
    auto get = [ws, lane](std::int64_t at) { return ws[at][lane]; };
    write_result(m, get, out + lane * size);
  }
}

// Compiled for every CPU level (kernels/cpu_clones.hpp); the best one runs.
ATTN_CPU_LEVELS_BY_LEVEL(void, train_group,
                         (const Model& m, const std::uint64_t* seeds, int lanes, P* ws, double* out,
                          const Monitor& monitor),
                         (m, seeds, lanes, ws, out, monitor))

// Evaluates the weights of `lanes` seeds (lanes <= kPackLanes; a short group repeats its last
// seed), seed i's at weights + i * stride, on the inputs (evaluate_inputs; their known maps with
// m.map known), in the workspace ws (layout(one_input(m)).total packs); writes
// evaluation_size(m, inputs) values a seed to out.
// replace: the maps to use instead (seed i's at replace + i * maps_size), or nullptr.
template <CpuLevel L>
ATTN_INLINE void evaluate_group_body(const Model& m, const double* weights, std::int64_t stride,
                                     int lanes, const double* x, const double* y,
                                     const double* known, int inputs, const double* replace, P* ws,
                                     double* out) {
  const std::int64_t size = weights_size(m);
  for (int lane = 0; lane < kPackLanes; ++lane) {
    const double* from = weights + std::min(lane, lanes - 1) * stride;
    for (std::int64_t e = 0; e < size; ++e) ws[e][lane] = from[e];
  }
  const int rows = m.rows(), n = m.n, d = m.d_out();
  const std::int64_t head_map = static_cast<std::int64_t>(rows) * n;
  const std::int64_t maps = static_cast<std::int64_t>(m.heads) * head_map;  // one input's
  const std::int64_t all_maps = inputs * maps, per_seed = evaluation_size(m, inputs);
  auto replace_maps = [&](const Model& m1, const Layout& l1, P* w, int b) {
    if (replace == nullptr) return;
    for (int lane = 0; lane < kPackLanes; ++lane) {
      const double* from = replace + std::min(lane, lanes - 1) * all_maps + b * maps;
      for (int h = 0; h < m1.heads; ++h) {
        P* p = w + map_at(m1, l1.p, 0, h);
        for (std::int64_t e = 0; e < head_map; ++e) p[m1.r0 * n + e][lane] = from[h * head_map + e];
      }
    }
  };
  auto emit = [&](const Model& m1, const Layout& l1, P* w, int b) {
    for (int lane = 0; lane < lanes; ++lane) {
      double* o = out + lane * per_seed;
      double* maps_out = o + 1 + b * maps;
      for (int h = 0; h < m1.heads; ++h) {
        const P* p = w + map_at(m1, l1.p, 0, h) + m1.r0 * n;
        for (std::int64_t e = 0; e < head_map; ++e) maps_out[h * head_map + e] = p[e][lane];
      }
      double* outputs_out = o + 1 + all_maps + static_cast<std::int64_t>(b) * rows * d;
      const P* f = w + l1.f + static_cast<std::int64_t>(m1.r0) * d;
      for (std::int64_t e = 0; e < static_cast<std::int64_t>(rows) * d; ++e)
        outputs_out[e] = f[e][lane];
    }
  };
  const P loss = evaluate_inputs<P>(m, ws, x, y, known, inputs, replace_maps, emit);
  for (int lane = 0; lane < lanes; ++lane) out[lane * per_seed] = loss[lane];
}

ATTN_CPU_LEVELS_BY_LEVEL(void, evaluate_group,
                         (const Model& m, const double* weights, std::int64_t stride, int lanes,
                          const double* x, const double* y, const double* known, int inputs,
                          const double* replace, P* ws, double* out),
                         (m, weights, stride, lanes, x, y, known, inputs, replace, ws, out))

}  // namespace

void train_seeds_cpu(const Model& m, const std::uint64_t* seeds, std::int64_t count, double* out,
                     const Monitor& monitor) {
  const std::int64_t groups = (count + kPackLanes - 1) / kPackLanes;
  const std::int64_t total = layout(m).total + pack::scratch_size(m);
  const std::int64_t size = result_size(m);
#pragma omp parallel if (groups > 1)
  {
    bind_this_thread();
    // Once per thread and call, aligned by hand (see kAlign; std::vector<P> would not).
    const std::unique_ptr<P, Free> ws(
        static_cast<P*>(::operator new(sizeof(P) * static_cast<std::size_t>(total), kAlign)));
#pragma omp for schedule(dynamic, 1)
    for (std::int64_t g = 0; g < groups; ++g) {
      const std::int64_t first = g * kPackLanes;
      const int lanes = static_cast<int>(std::min<std::int64_t>(kPackLanes, count - first));
      train_group(m, seeds + first, lanes, ws.get(), out + first * size, monitor);
    }
  }
  monitor.stop_point();  // after the region: an exception must not leave it
}

void evaluate_seeds_cpu(const Model& m, const double* weights, std::int64_t stride,
                        std::int64_t count, const double* x, const double* y, const double* known,
                        int inputs, double* out, const double* replace, const Monitor& monitor) {
  if (count <= 0 || inputs <= 0) return;
  const std::int64_t groups = (count + kPackLanes - 1) / kPackLanes;
  const std::int64_t total = layout(one_input(m)).total;
  const std::int64_t size = evaluation_size(m, inputs);
  const std::int64_t maps = static_cast<std::int64_t>(inputs) * m.heads * m.rows() * m.n;
  bool stopped = false;
#pragma omp parallel if (groups > 1)
  {
    const std::unique_ptr<P, Free> ws(
        static_cast<P*>(::operator new(sizeof(P) * static_cast<std::size_t>(total), kAlign)));
#pragma omp for schedule(dynamic, 1)
    for (std::int64_t g = 0; g < groups; ++g) {
      bool stop;
#pragma omp atomic read
      stop = stopped;
      if (stop) continue;
      if (monitor.stop_requested()) {
#pragma omp atomic write
        stopped = true;
        continue;
      }
      const std::int64_t first = g * kPackLanes;
      const int lanes = static_cast<int>(std::min<std::int64_t>(kPackLanes, count - first));
      evaluate_group(m, weights + first * stride, stride, lanes, x, y, known, inputs,
                     replace == nullptr ? nullptr : replace + first * maps, ws.get(),
                     out + first * size);
    }
  }
  monitor.stop_point();
}

void start_weights(const Model& m, std::uint64_t seed, double* out) {
  auto store = [out](std::int64_t at, double v) { out[at] = v; };
  initial_weights(m, seed, store);
}

}  // namespace attn::head
