// dk_std.hpp: the dk-std table's generator choice, for its tests.
#pragma once

#include <string>

namespace attn {

// numpy (the lesson's stream), philox, or auto: numpy while the run needs <= 1e8 normals.
bool dkstd_uses_numpy(const std::string& rng, double normals);

}  // namespace attn
