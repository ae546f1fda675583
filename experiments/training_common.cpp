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

std::vector<Param> training_params(const std::string& configs, const std::string& seeds,
                                   std::uint64_t max_seeds,
                                   std::function<std::string(std::uint64_t)> why) {
  return {
      param::names("--configs", configs, "qk-identity, all-identity, all-random, qk-random",
                   kConfigNames),
      param::seeds("--seeds", seeds, "Seeds: a list 0,1 (distinct) or a range A:B", max_seeds, why),
      param::integer("--steps", "3000", "Gradient steps", 1, 1000000000),
      param::real("--lr", "0.5", "Learning rate", 0, 1e6, true),
      param::choice("--grad", "numeric", "numeric (the lesson's central differences) or analytic",
                    {"numeric", "analytic"}),
      param::real("--h", "1e-5", "Step of the numeric gradient", 0, 1, true),
      param::choice("--schedule", "sequential",
                    "sequential (the lesson's: W_Q, then W_K, then W_V) or simultaneous",
                    {"sequential", "simultaneous"}),
      param::choice("--dtype", "f64", "Floating-point type of the training", {"f64", "f32"})};
}

tiny::TrainOptions train_options(const Settings& s) {
  tiny::TrainOptions o;
  o.steps = static_cast<int>(s.get<std::int64_t>("--steps"));
  o.lr = s.get<double>("--lr");
  o.grad = s.get<std::string>("--grad") == "numeric" ? tiny::Grad::numeric : tiny::Grad::analytic;
  o.h = s.get<double>("--h");
  o.schedule = s.get<std::string>("--schedule") == "sequential" ? tiny::Schedule::sequential
                                                                : tiny::Schedule::simultaneous;
  return o;
}

Precision precision(const Settings& s) {
  return s.get<std::string>("--dtype") == "f32" ? Precision::f32 : Precision::f64;
}

nlohmann::json training_settings(const Settings& s) {
  const tiny::TrainOptions o = train_options(s);
  return {{"steps", o.steps},
          {"lr", o.lr},
          {"grad", s.get<std::string>("--grad")},
          {"h", o.h},
          {"schedule", s.get<std::string>("--schedule")},
          {"dtype", s.get<std::string>("--dtype")},
          {"init", "numpy default_rng(seed).normal(size=(2, 2)) for W_Q, W_K, W_V"}};
}

}  // namespace attn
