// dkstd_numpy.hpp: the lesson's own d_k table, from numpy's default_rng stream, digit for digit.
//
// The lesson draws everything from ONE default_rng(seed): for each d_k in turn,
// q = standard_normal((N, d_k)) then k = standard_normal((N, d_k)), row-major, and reports the
// std of the row dot products (spec/EXPERIMENTS.md, dk-std). The stream is sequential (the
// ziggurat draws a variable number of words per normal), and row i of k lies N*d_k normals
// after row i of q. Rather than store q, a first pass walks q's part of the stream and records
// the generator at the start of every chunk of rows (32 bytes per 2^16 normals); the second
// pass then draws k from the live stream, chunk by chunk, regenerating that chunk's q rows from
// its record, and pushes each dot product into the chunk's Moments; chunks merge left to
// right. Cost: 3 N d_k normals, about 2.4 ns each, on one thread (the stream is sequential by
// nature; 1e8 normals, auto's limit, take about 0.4 s). Memory: O(N / chunk + chunk).
#pragma once

#include <cstdint>
#include <vector>

#include "moments.hpp"
#include "monitor.hpp"
#include "numpy_random.hpp"

namespace attn::dkstd {

class NumpyStream {
 public:
  explicit NumpyStream(std::uint64_t seed) : gen_(seed) {}

  // Moments of q . k over `samples` rows for the next d_k block of the stream; the stream then
  // stands after that block's k. monitor.advance() counts the block's 2 N d_k normals.
  Moments next_block(std::uint64_t samples, std::uint32_t d_k, Monitor& monitor);

 private:
  numpy_rng::Pcg64 gen_;
};

}  // namespace attn::dkstd
