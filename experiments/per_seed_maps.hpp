// per_seed_maps.hpp: attention-sweep's --per-seed FILE, written seed by seed in the order given
// as the chunks are folded, never held whole (a sweep may have more seeds than memory holds).
//
// What is written of a seed is its record (PerSeedRecord): its losses, flags, final weights,
// and its maps and outputs on the first K = --map-inputs measured inputs (the held-out inputs,
// or the training inputs when there are none). In a configuration of many inputs (--inputs
// above 1 or held-out inputs) the maps and outputs have an inputs axis; with one input they
// are those of version 2.
//
// FILE.csv: one row per seed: seed, loss (final, on the training inputs), start_loss,
// test_loss (on the measured inputs), converged, generalized, diverged (each 0/1),
// jsd_to_mean (to the finite seeds' mean maps), with --nudge nudge_jsd, for a task with a known
// map jsd_to_known (the mean over the measured inputs and loss rows) and found (0/1), the
// interventions' measures (dl_uniform, out_uniform, dl_permuted, out_permuted, dl_patched,
// out_patched, with a known map dl_known and out_known, adv_jsd, adv_not_unique, tau_b), then the
// maps P on the
// loss rows as p_i_j (i the query, j the key), with H > 1 heads every head's as p_h_i_j; with an
// inputs axis each measured input's as p_in{b}_i_j (p_in{b}_h_i_j).
// FILE.npy: arrays numpy reads in one line (np.load(FILE, mmap_mode="r") while far larger than
// memory), C order, over the seeds in the order given (float64 little-endian unless said):
//   STEM.npy            the maps P on the loss rows, (seeds, [K,] [H,] |R|, n) (K: the inputs
//                       axis, H: with H > 1 heads)
//   STEM.seeds.npy      the seeds, uint64, (seeds,)
//   STEM.loss.npy       the final loss, (seeds,); STEM.start_loss.npy, STEM.test_loss.npy too
//   STEM.converged.npy  bool, (seeds,); STEM.generalized.npy and STEM.diverged.npy too
//   STEM.jsd.npy        each head-averaged map's JSD to the finite seeds' mean map (NaN for a
//                       seed that is not finite), (seeds,)
//   STEM.nudge_jsd.npy  (--nudge) the JSD between the seed's two runs' maps, (seeds,)
//   STEM.jsd_to_known.npy, STEM.found.npy (bool): a task with a known map, (seeds,)
//   STEM.out.npy        the outputs on the loss rows, (seeds, [K,] |R|, d_out)
//   STEM.dl_uniform.npy, STEM.out_uniform.npy, ... (interventions.hpp) each seed's change of
//                       the loss and output distance under the uniform, permuted, patched and
//                       (a task with a known map) known maps, adv_jsd, adv_not_unique, tau_b,
//                       (seeds,), NaN where a measure does not apply
//   STEM.w_q.npy        the final W_Q, (seeds, d_model, d_k); STEM.w_k.npy (seeds, d_model,
//                       d_k), STEM.w_v.npy (seeds, d_model, d_v), with --train qkvo
//                       STEM.w_o.npy (seeds, d_v, d_model)
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

// The layout of a seed's record: [loss, start_loss, test_loss, converged, generalized,
// diverged, nudge_jsd (NaN without --nudge), jsd_to_known, found (NaN, 0: no known map), W_Q,
// W_K, W_V, W_O (qkvo), the maps of the first map_inputs measured inputs (map_inputs x H x |R|
// x n), their outputs (map_inputs x |R| x d_out), the intervention measures
// (kInterventionFields, InterventionField's order)].
struct PerSeedRecord {
  SeedResults results;       // the measured shape (results.inputs: every measured input)
  int map_inputs = 1;        // K
  bool inputs_axis = false;  // many inputs: the maps and outputs carry an inputs axis
  bool nudge = false;
  bool known = false;  // the task has a known map
  int d_model = 2, d_k = 2, d_v = 2;
  bool w_o = false;
  static constexpr int kHead = 9;             // values before the weights
  std::int64_t weight_size(int which) const;  // 0 W_Q, 1 W_K, 2 W_V, 3 W_O (0 without)
  std::int64_t weights() const {
    return weight_size(0) + weight_size(1) + weight_size(2) + weight_size(3);
  }
  std::int64_t maps() const {
    return static_cast<std::int64_t>(map_inputs) * results.heads * results.input_map();
  }
  std::int64_t outputs() const {
    return static_cast<std::int64_t>(map_inputs) * results.rows * results.d_out;
  }
  std::int64_t size() const { return kHead + weights() + maps() + outputs() + kInterventionFields; }
  std::int64_t interventions_at() const { return kHead + weights() + maps() + outputs(); }
  // Seed's record into out (size() values): from its measured results r (results.size()), its
  // training result's weights (weights() values), its nudge JSD (NaN: none), at the threshold,
  // the measures against the known map (when known is not empty) and the intervention measures
  // (kInterventionFields values; nullptr: NaN).
  void make(const double* r, const double* weights, double nudge_jsd, double converged_below,
            const KnownMap& known_map, const double* interventions, double* out) const;
  // What a record can be (a second pass's chunk state holds the records of its seeds, and
  // SeedMeasures::from_state checks each): the losses in kSeedLoss's domain; the flags 0 or 1,
  // converged (generalized) exactly when not diverged and the loss (test loss) below
  // converged_below, diverged where a loss is not finite or the final loss blew up; the nudge
  // JSD NaN without --nudge, else a JSD or NaN; the JSD to the known map NaN without one, else a
  // JSD (NaN only for a diverged seed), and found 0 without one, 1 only with a JSD; the final
  // weights any finite value (kFinalWeight; non-finite only with a final loss that is not); the
  // maps of each input and head rows of weights summing to 1 (check_map_rows), finite unless
  // the seed diverged; the outputs any value; the intervention measures NaN or in their
  // quantities' domains (intervention_quantity), the known map's NaN without one. Throws
  // std::invalid_argument naming the value.
  void check(const double* record, double converged_below) const;
};

class PerSeedMaps {
 public:
  // The files FILE names (one for .csv, the arrays' for .npy).
  static std::vector<std::string> files(const std::string& path, const PerSeedRecord& record);
  // Every file FILE can name, each optional array's included (--nudge, a known map, W_O).
  static std::vector<std::string> every_file(const std::string& path);
  // Their bytes for `count` seeds (the CSV: at most).
  static double bytes(const std::string& path, const PerSeedRecord& record, std::uint64_t count);

  // r0: the first loss row (names the CSV's columns). Throws std::runtime_error when a file may
  // not be written (AtomicFile). The optional arrays this record does not write are retired
  // (output.hpp's retire_file): an earlier run's are refused without force, removed with it.
  PerSeedMaps(const std::string& path, bool force, const PerSeedRecord& record, int r0,
              std::uint64_t count);

  // The next seed: its record (record.size() values) and JSD to the mean map.
  void add(std::uint64_t seed, const double* record, double jsd_to_mean);
  // Writes what is buffered and renames every file into place; throws std::logic_error when
  // fewer or more seeds than announced were added.
  void commit();

 private:
  void flush(bool all);
  PerSeedRecord record_;
  std::uint64_t count_, added_ = 0;
  bool npy_;
  std::vector<std::string> names_;  // the .npy arrays' names (the files' order)
  std::vector<std::unique_ptr<AtomicFile>> files_;
  std::vector<std::string> buffers_;
};

}  // namespace attn
