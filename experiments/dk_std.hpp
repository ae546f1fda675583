// dk_std.hpp: the dk-std table's generator choice and its interval for the std, for its tests.
#pragma once

#include <optional>
#include <string>
#include <utility>

#include "moments.hpp"

namespace attn {

// numpy (the lesson's stream), philox, or auto: numpy while the run needs <= 1e8 normals.
bool dk_std_uses_numpy(const std::string& rng, double normals);

// The 95% confidence interval for the std printed by dk-std (Bonett 2006, see dk_std.cpp), from
// a sample's moments; nullopt (no interval) below kMinSamplesForInterval samples or with zero
// spread. Why 1000: q.k at d_k = 1 has kurtosis 9, and no interval built from moments reaches
// 93% coverage below a few hundred samples (Bonett's: 89% at N = 10, 90% at N = 100, 94% at
// N = 1000; tests/test_dk_std.cpp measures it over many seeds).
constexpr double kMinSamplesForInterval = 1000;
// min_samples: the threshold (tests lower it to measure the interval where it is not printed).
std::optional<std::pair<double, double>> std_interval(const Moments& m,
                                                      double min_samples = kMinSamplesForInterval);

}  // namespace attn
