// dk_std_numpy.hpp: the lesson's own d_k table, from numpy's default_rng stream, digit for digit,
// decoded in parallel (kernels/numpy_random/numpy_stream.hpp says how).
//
// The lesson draws everything from ONE default_rng(seed): for each d_k in turn,
// q = standard_normal((N, d_k)) then k = standard_normal((N, d_k)), row-major, and reports the
// std of the row dot products (spec/EXPERIMENTS.md, dk-std).
//
// The table: per d_k, q's N d_k normals are decoded (kept when they fit in a wave, else only
// located and decoded again beside k), then k's, a wave of rows at a time (small waves, so that
// they stay in cache and the process touches little fresh memory); one parallel loop a wave
// decodes that wave's q and k pieces and takes the previous wave's dot products. Their Moments
// are taken per chunk of rows, chunks merged left to right, so every thread count and wave size
// gives the same bits as the sequential loop (tests/test_dk_std.cpp).
#pragma once

#include <cstdint>
#include <memory>

#include "kernels/numpy_random/numpy_random.hpp"
#include "kernels/numpy_random/numpy_stream.hpp"
#include "moments.hpp"
#include "monitor.hpp"

namespace attn::dk_std {

class NumpyStream {
 public:
  explicit NumpyStream(std::uint64_t seed, StreamSplit split = {});
  ~NumpyStream();

  // Moments of q . k over `samples` rows for the next d_k block of the stream; the stream then
  // stands after that block's k. monitor.advance() counts the block's 2 N d_k normals.
  Moments next_block(std::uint64_t samples, std::uint32_t d_k, Monitor& monitor);

 private:
  struct Buffers;  // decoded q and k, kept from block to block
  numpy_rng::Pcg64 gen_;
  StreamSplit split_;
  std::unique_ptr<Buffers> bufs_;
};

}  // namespace attn::dk_std
