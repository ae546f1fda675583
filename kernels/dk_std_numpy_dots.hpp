// dk_std_numpy_dots.hpp: the row dot products of the dk-std table on numpy's stream, summed as the
// sequential loop sums them, eight rows at once. Host only.
#pragma once

#include <cstdint>

#include "kernels/numpy_random/numpy_rows.hpp"
#include "moments.hpp"

namespace attn::dk_std::stream {

// Moments of `rows` rows: row r's dot is q[qrow0 + r] . k[krow0 + r], summed from j = 0 in order
// (as the sequential loop sums it), eight rows at once (dots8); q and k hold their waves' rows.
Moments chunk_dots(const Normals& q, std::uint64_t qrow0, const Normals& k, std::uint64_t krow0,
                   std::uint64_t rows, std::uint32_t d_k);

}  // namespace attn::dk_std::stream
