// attention_sweep.hpp: pieces of `demo --table attention-sweep` (attention_sweep.cpp) that are
// used, and tested, on their own: the measures (map_measures.hpp), the per-seed files
// (per_seed_maps.hpp).
#pragma once

#include "experiments/map_measures.hpp"
#include "experiments/per_seed_maps.hpp"
