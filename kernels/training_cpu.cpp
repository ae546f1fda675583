// training_cpu.cpp: CPU twin of the training sweep. OpenMP over groups of kPackLanes seeds; each
// group trains in lockstep as one lane pack (lanes.hpp), running tiny_model.hpp's loop, the
// same code the CUDA kernel runs per thread. Every lane gives the scalar code's bits.
#include <algorithm>

#include "cpu_clones.hpp"
#include "lanes.hpp"
#include "tiny_model.hpp"

namespace attn::tiny {
namespace {

template <class T>
ATTN_INLINE void train_group_body(Config c, const std::uint64_t* seeds, int n,
                                  const TrainOptions& o, TrainResult* out) {
  using P = typename PackOf<T>::type;
  Params<P> p;
  for (int l = 0; l < kPackLanes; ++l) {  // a short last group repeats its last seed
    const Params<T> one = initial_params<T>(c, seeds[std::min(l, n - 1)]);
    for (int m = 0; m < 3; ++m)
      for (int r = 0; r < 2; ++r)
        for (int col = 0; col < 2; ++col) p.w[m][r][col][l] = one.w[m][r][col];
  }
  train(p, trains_values(c) ? 3 : 2, o);
  const Forward<P> f = forward(p);
  const P loss = loss_of(f);
  for (int l = 0; l < n; ++l)
    out[l] = TrainResult{static_cast<double>(f.a[0][l]), static_cast<double>(f.out[0][l]),
                         static_cast<double>(f.out[1][l]), static_cast<double>(loss[l])};
}

// train_group_body compiled for each x86-64 level (cpu_clones.hpp), called at cpu_level().
template <class T>
ATTN_TARGET_V4 void train_group_v4(Config c, const std::uint64_t* seeds, int n,
                                   const TrainOptions& o, TrainResult* out) {
  train_group_body<T>(c, seeds, n, o, out);
}
template <class T>
ATTN_TARGET_V3 void train_group_v3(Config c, const std::uint64_t* seeds, int n,
                                   const TrainOptions& o, TrainResult* out) {
  train_group_body<T>(c, seeds, n, o, out);
}
template <class T>
void train_group_baseline(Config c, const std::uint64_t* seeds, int n, const TrainOptions& o,
                          TrainResult* out) {
  train_group_body<T>(c, seeds, n, o, out);
}
template <class T>
void train_group(CpuLevel level, Config c, const std::uint64_t* seeds, int n, const TrainOptions& o,
                 TrainResult* out) {
  if (level == CpuLevel::v4)
    train_group_v4<T>(c, seeds, n, o, out);
  else if (level == CpuLevel::v3)
    train_group_v3<T>(c, seeds, n, o, out);
  else
    train_group_baseline<T>(c, seeds, n, o, out);
}

}  // namespace

template <class T>
void train_seeds_cpu(Config c, const std::uint64_t* seeds, std::int64_t n, const TrainOptions& o,
                     TrainResult* out) {
  const std::int64_t groups = (n + kPackLanes - 1) / kPackLanes;
  const CpuLevel level = cpu_level();  // may throw: here, not in the parallel region
  // Threads only pay off beyond a few packs (waking a thread can cost milliseconds).
#pragma omp parallel for schedule(dynamic, 4) if (groups > 4)
  for (std::int64_t g = 0; g < groups; ++g) {
    const std::int64_t first = g * kPackLanes;
    const int lanes = static_cast<int>(std::min<std::int64_t>(kPackLanes, n - first));
    if (lanes * 2 >= kPackLanes) {
      train_group<T>(level, c, seeds + first, lanes, o, out + first);
    } else {  // a mostly empty pack: the scalar code, same bits, less work
      for (int l = 0; l < lanes; ++l) out[first + l] = train_one<T>(c, seeds[first + l], o);
    }
  }
}

template void train_seeds_cpu<double>(Config, const std::uint64_t*, std::int64_t,
                                      const TrainOptions&, TrainResult*);
template void train_seeds_cpu<float>(Config, const std::uint64_t*, std::int64_t,
                                     const TrainOptions&, TrainResult*);

}  // namespace attn::tiny
