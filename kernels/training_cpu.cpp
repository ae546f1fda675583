// training_cpu.cpp: CPU twin of the training sweep: OpenMP over seeds, one model per
// iteration, tiny_model.hpp's loop (the same code the CUDA kernel runs per thread).
#include "cpu_clones.hpp"
#include "tiny_model.hpp"

namespace attn::tiny {
namespace {

template <class T>
ATTN_CPU_CLONES void train_range(Config c, const std::uint64_t* seeds, std::int64_t n,
                                 const TrainOptions& o, TrainResult* out) {
#pragma omp parallel for schedule(dynamic, 16)
  for (std::int64_t i = 0; i < n; ++i) out[i] = train_one<T>(c, seeds[i], o);
}

}  // namespace

template <class T>
void train_seeds_cpu(Config c, const std::uint64_t* seeds, std::int64_t n, const TrainOptions& o,
                     TrainResult* out) {
  train_range<T>(c, seeds, n, o, out);
}

template void train_seeds_cpu<double>(Config, const std::uint64_t*, std::int64_t,
                                      const TrainOptions&, TrainResult*);
template void train_seeds_cpu<float>(Config, const std::uint64_t*, std::int64_t,
                                     const TrainOptions&, TrainResult*);

}  // namespace attn::tiny
