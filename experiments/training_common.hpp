// training_common.hpp: what the training table and the training sweep share: the configs,
// the training flags (declared once here, with each experiment's own defaults for --configs and
// --seeds) and their values.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "host/backend.hpp"
#include "host/json.hpp"
#include "host/settings.hpp"
#include "tiny_model.hpp"

namespace attn {

inline const std::vector<std::string> kConfigNames = {"qk-identity", "all-identity", "all-random",
                                                      "qk-random"};
tiny::Config config_from_name(const std::string& name);  // a name from kConfigNames
bool config_uses_seed(tiny::Config c);

// The flags both training tables read; configs and seeds are the table's defaults; more than
// max_seeds seeds are refused before any work with `why` (what they would need).
std::vector<Param> training_params(const std::string& configs, const std::string& seeds,
                                   std::uint64_t max_seeds,
                                   std::function<std::string(std::uint64_t)> why);
// Their values.
tiny::TrainOptions train_options(const Settings& s);
Precision precision(const Settings& s);
// The run's training settings as JSON, for provenance.
nlohmann::json training_settings(const Settings& s);

}  // namespace attn
