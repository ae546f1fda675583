// training_cpu.cpp: CPU twin of the training sweep. OpenMP over groups of kPackLanes seeds; each
// group trains in lockstep as one lane pack (lanes.hpp), running tiny_model.hpp's loop, the
// same code the CUDA kernel runs per thread; a run alone takes its numeric gradient's loss
// evaluations as a pack's lanes. Every lane gives the scalar code's bits.
#include <algorithm>
#include <type_traits>
#include <vector>

#include "cpu_clones.hpp"
#include "cpu_threads.hpp"
#include "lanes.hpp"
#include "tiny_model.hpp"

namespace attn::tiny {
namespace {

// The numeric gradient of matrix m (numeric_grad's central differences) with its eight loss
// evaluations, elements (0,0), (0,1), (1,0), (1,1) at + h and - h, as the eight lanes of one pack:
// lane 2e has element e at keep + h, lane 2e + 1 at keep - h, every other parameter as in p.
// Each lane does numeric_grad's operations on its evaluation (the packs' arithmetic and exp are
// the scalar code's bits, lanes.hpp), and g is formed from the lanes as there, so a run alone
// gets train_one's bits, in less time than the scalar code (bench_kernels TrainCpuAlone/1
// times it). The gradients still wait on each other, so a run is bound by
// the pack forward's latency, not by its arithmetic.
template <class T>
struct NumericGradLanes {
  T h;
  ATTN_INLINE void operator()(Params<T>& p, int m, T g[2][2]) const {
    using P = typename PackOf<T>::type;
    static_assert(kPackLanes == 8, "two lanes for each of a matrix's four elements");
    Params<P> lanes;
    for (int mm = 0; mm < 3; ++mm)
      for (int r = 0; r < 2; ++r)
        for (int c = 0; c < 2; ++c) lanes.w[mm][r][c] = P{} + p.w[mm][r][c];
    for (int e = 0; e < 4; ++e) {
      const T keep = p.w[m][e / 2][e % 2];
      lanes.w[m][e / 2][e % 2][2 * e] = keep + h;
      lanes.w[m][e / 2][e % 2][2 * e + 1] = keep - h;
    }
    const P l = loss(lanes);
    for (int e = 0; e < 4; ++e) g[e / 2][e % 2] = (l[2 * e] - l[2 * e + 1]) / (splat<T>(2.0) * h);
  }
};

// One work item: `lanes` runs of config c from seeds[0 .. lanes) trained in lockstep as one lane
// pack (a short pack repeats its last seed), or, for lanes = 0, the one run from seeds[0] alone
// (its numeric gradient's evaluations as a pack's lanes; train_one's own code for analytic).
template <class T>
ATTN_INLINE void train_item_body(Config c, const std::uint64_t* seeds, int lanes,
                                 const TrainOptions& o, TrainResult* out) {
  const int n_trained = trains_values(c) ? 3 : 2;
  if (lanes == 0) {
    Params<T> p = initial_params<T>(c, seeds[0]);
    if (o.grad == Grad::numeric)
      train(p, n_trained, o, NumericGradLanes<T>{splat<T>(o.h)});
    else
      train(p, n_trained, o);
    *out = result_of(p);
    return;
  }
  using P = typename PackOf<T>::type;
  Params<P> p;
  for (int l = 0; l < kPackLanes; ++l) {
    const Params<T> one = initial_params<T>(c, seeds[std::min(l, lanes - 1)]);
    for (int m = 0; m < 3; ++m)
      for (int r = 0; r < 2; ++r)
        for (int col = 0; col < 2; ++col) p.w[m][r][col][l] = one.w[m][r][col];
  }
  train(p, n_trained, o);
  const Forward<P> f = forward(p);
  const P loss = loss_of(f);
  for (int l = 0; l < lanes; ++l)
    out[l] = TrainResult{static_cast<double>(f.a[0][l]), static_cast<double>(f.out[0][l]),
                         static_cast<double>(f.out[1][l]), static_cast<double>(loss[l])};
}

ATTN_INLINE void train_item_f64_body(Config c, const std::uint64_t* seeds, int lanes,
                                     const TrainOptions& o, TrainResult* out) {
  train_item_body<double>(c, seeds, lanes, o, out);
}
ATTN_INLINE void train_item_f32_body(Config c, const std::uint64_t* seeds, int lanes,
                                     const TrainOptions& o, TrainResult* out) {
  train_item_body<float>(c, seeds, lanes, o, out);
}
// Each compiled for every CPU level (cpu_clones.hpp); the best one runs.
ATTN_CPU_LEVELS(void, train_item_f64,
                (Config c, const std::uint64_t* seeds, int lanes, const TrainOptions& o,
                 TrainResult* out),
                (c, seeds, lanes, o, out))
ATTN_CPU_LEVELS(void, train_item_f32,
                (Config c, const std::uint64_t* seeds, int lanes, const TrainOptions& o,
                 TrainResult* out),
                (c, seeds, lanes, o, out))
template <class T>
void train_item(Config c, const std::uint64_t* seeds, int lanes, const TrainOptions& o,
                TrainResult* out) {
  if constexpr (std::is_same_v<T, double>)
    train_item_f64(c, seeds, lanes, o, out);
  else
    train_item_f32(c, seeds, lanes, o, out);
}

// Runs i < n, run i being config_of(i) from seeds[i]. Work items: packs of up to kPackLanes
// consecutive runs of one config, and single runs (same bits, less work) where a pack would be
// less than half full; the items run on the threads.
template <class T, class ConfigOf>
void train_items(ConfigOf config_of, const std::uint64_t* seeds, std::int64_t n,
                 const TrainOptions& o, TrainResult* out) {
  struct Item {
    std::int64_t first;
    int lanes;  // 0: run `first` alone
  };
  std::vector<Item> items;
  for_each_config_stretch(config_of, n, [&](std::int64_t begin, std::int64_t end) {
    for (std::int64_t first = begin; first < end; first += kPackLanes) {
      const int lanes = static_cast<int>(std::min<std::int64_t>(kPackLanes, end - first));
      if (lanes * 2 >= kPackLanes)
        items.push_back({first, lanes});
      else
        for (int l = 0; l < lanes; ++l) items.push_back({first + l, 0});
    }
  });
  // The longest items first (packs, then runs training three matrices), so that the threads
  // finish together: the lesson's six runs, in table order, left one thread a run behind.
  const auto cost = [&](const Item& it) {
    return (it.lanes > 0 ? 4 : 1) * (trains_values(config_of(it.first)) ? 3 : 2);
  };
  std::stable_sort(items.begin(), items.end(),
                   [&](const Item& a, const Item& b) { return cost(a) > cost(b); });
  (void)cpu_level();  // may throw (a bad ATTNLAB_CPU_LEVEL): here, not in the parallel region
  // A run of the lesson's 3000 steps alone takes about half a millisecond: two items already
  // pay for a thread.
#pragma omp parallel for schedule(dynamic, 1) if (items.size() > 1)
  for (std::size_t k = 0; k < items.size(); ++k) {
    bind_this_thread();
    const Item& it = items[k];
    train_item<T>(config_of(it.first), seeds + it.first, it.lanes, o, out + it.first);
  }
}

}  // namespace

template <class T>
void train_seeds_cpu(Config c, const std::uint64_t* seeds, std::int64_t n, const TrainOptions& o,
                     TrainResult* out) {
  train_items<T>([c](std::int64_t) { return c; }, seeds, n, o, out);
}

template <class T>
void train_runs_cpu(const Config* configs, const std::uint64_t* seeds, std::int64_t n,
                    const TrainOptions& o, TrainResult* out) {
  train_items<T>([configs](std::int64_t i) { return configs[i]; }, seeds, n, o, out);
}

template void train_seeds_cpu<double>(Config, const std::uint64_t*, std::int64_t,
                                      const TrainOptions&, TrainResult*);
template void train_seeds_cpu<float>(Config, const std::uint64_t*, std::int64_t,
                                     const TrainOptions&, TrainResult*);
template void train_runs_cpu<double>(const Config*, const std::uint64_t*, std::int64_t,
                                     const TrainOptions&, TrainResult*);
template void train_runs_cpu<float>(const Config*, const std::uint64_t*, std::int64_t,
                                    const TrainOptions&, TrainResult*);

}  // namespace attn::tiny
