// training_common.cpp: see training_common.hpp.
#include "experiments/training_common.hpp"

#include <stdexcept>

namespace attn {

tiny::Config config_from_name(const std::string& name) {
  for (std::size_t i = 0; i < kConfigNames.size(); ++i)
    if (kConfigNames[i] == name) return static_cast<tiny::Config>(i);
  throw std::invalid_argument("unknown training config " + name);
}

bool config_uses_seed(tiny::Config c) {
  return c == tiny::Config::all_random || c == tiny::Config::qk_random;
}

nlohmann::json training_settings(const Options& opt) {
  const tiny::TrainOptions& o = opt.train;
  return {{"steps", o.steps},
          {"lr", o.lr},
          {"grad", o.grad == tiny::Grad::numeric ? "numeric" : "analytic"},
          {"h", o.h},
          {"schedule", o.schedule == tiny::Schedule::sequential ? "sequential" : "simultaneous"},
          {"dtype", opt.dtype == DType::f64 ? "f64" : "f32"},
          {"init", "numpy default_rng(seed).normal(size=(2, 2)) for W_Q, W_K, W_V"}};
}

}  // namespace attn
