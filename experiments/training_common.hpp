// training_common.hpp: names and settings shared by the training table and the training sweep.
#pragma once

#include <string>
#include <vector>

#include "host/options.hpp"
#include "tiny_model.hpp"

namespace attn {

inline const std::vector<std::string> kConfigNames = {"qk-identity", "all-identity", "all-random",
                                                      "qk-random"};
tiny::Config config_from_name(const std::string& name);  // a name from kConfigNames
bool config_uses_seed(tiny::Config c);
// The run's training settings as JSON, for provenance.
nlohmann::json training_settings(const Options& opt);

}  // namespace attn
