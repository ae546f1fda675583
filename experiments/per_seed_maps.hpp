// per_seed_maps.hpp: attention-sweep's --per-seed FILE, written seed by seed in the order given
// as the chunks are folded, never held whole (a sweep may have more seeds than memory holds).
//
// FILE.csv: one row per seed: seed, loss (final), start_loss, converged (0/1), diverged (0/1),
// jsd_to_mean (to the finite seeds' mean map), then the map P on the loss rows as p_i_j (i the
// query, j the key), or with H > 1 heads every head's as p_h_i_j.
// FILE.npy: arrays numpy reads in one line (np.load(FILE, mmap_mode="r") while far larger than
// memory), each float64 little-endian, C order, over the seeds in the order given:
//   STEM.npy        the maps P on the loss rows, shape (seeds, |R|, n); (seeds, H, |R|, n) with
//                   H > 1 heads
//   STEM.seeds.npy  the seeds, uint64, shape (seeds,)
//   STEM.loss.npy   the final loss, shape (seeds,)
//   STEM.jsd.npy    each head-averaged map's JSD to the finite seeds' mean map (NaN for a seed
//                   that is not finite), shape (seeds,)
//   STEM.out.npy    the outputs on the loss rows, shape (seeds, |R|, d_out)
// (STEM: FILE without .npy). Every file is an AtomicFile (host/output.hpp): written under a
// temporary name and renamed into place when the sweep ends, refused when it exists (without
// --force) before any work.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "experiments/map_measures.hpp"
#include "host/output.hpp"

namespace attn {

class PerSeedMaps {
 public:
  // The files FILE names (one for .csv, five for .npy).
  static std::vector<std::string> files(const std::string& path);
  // Their bytes for `count` seeds (the CSV: at most).
  static double bytes(const std::string& path, const SeedResults& shape, std::uint64_t count);

  // r0: the first loss row (names the CSV's columns). Throws std::runtime_error when a file may
  // not be written (AtomicFile).
  PerSeedMaps(const std::string& path, bool force, const SeedResults& shape, int r0,
              std::uint64_t count, double converged_below);

  // The next seed: its results (shape.size() values) and JSD to the mean map.
  void add(std::uint64_t seed, const double* results, double jsd_to_mean);
  // Writes what is buffered and renames every file into place; throws std::logic_error when
  // fewer or more seeds than announced were added.
  void commit();

 private:
  void flush(bool all);
  SeedResults shape_;
  double converged_below_;
  std::uint64_t count_, added_ = 0;
  bool npy_;
  std::vector<std::unique_ptr<AtomicFile>> files_;
  std::vector<std::string> buffers_;
};

}  // namespace attn
