// per_seed_maps.cpp: see per_seed_maps.hpp.
#include "experiments/per_seed_maps.hpp"

#include <spdlog/spdlog.h>

#include <cctype>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <stdexcept>

#include "host/array_io.hpp"

namespace attn {
namespace {

// ".npy" in any case (x.NPY too).
bool is_npy(const std::string& path) {
  if (path.size() < 4) return false;
  std::string ext = path.substr(path.size() - 4);
  for (char& c : ext) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return ext == ".npy";
}

std::string stem(const std::string& path) { return path.substr(0, path.size() - 4); }

// The order of files_ and buffers_ for .npy.
enum Npy { kMaps, kSeeds, kLoss, kJsd, kOut, kNpyFiles };

template <class T>
void append(std::string& buffer, const T* values, std::size_t count) {
  static_assert(sizeof(T) == 8);
  const std::size_t at = buffer.size();
  buffer.resize(at + 8 * count);
  std::memcpy(buffer.data() + at, values, 8 * count);  // little-endian machines (x86-64, arm64)
}

}  // namespace

std::vector<std::string> PerSeedMaps::files(const std::string& path) {
  if (!is_npy(path)) return {path};
  const std::string s = stem(path);
  return {path, s + ".seeds.npy", s + ".loss.npy", s + ".jsd.npy", s + ".out.npy"};
}

double PerSeedMaps::bytes(const std::string& path, const SeedResults& shape, std::uint64_t count) {
  const double seeds = static_cast<double>(count);
  // CSV: the seed (up to 20 digits), %.17g numbers (up to 24 characters) and separators.
  const double maps = static_cast<double>(shape.heads) * shape.map_size();
  if (!is_npy(path)) return seeds * (20 + 4 + 25.0 * (3 + maps) + 1);
  return 5 * 128 + seeds * 8 * (3 + maps + shape.rows * shape.d_out);
}

PerSeedMaps::PerSeedMaps(const std::string& path, bool force, const SeedResults& shape, int r0,
                         std::uint64_t count, double converged_below)
    : shape_(shape), converged_below_(converged_below), count_(count), npy_(is_npy(path)) {
  for (const std::string& f : files(path)) {
    // A killed run's temporaries of the arrays beside FILE (demo clears FILE's own before work).
    const std::filesystem::path p(f);
    const std::string dir = p.parent_path().empty() ? "." : p.parent_path().string();
    for (const std::string& stale : remove_stale_temporaries(dir, p.filename().string()))
      spdlog::warn("removed {}: a temporary file left by an earlier run that was killed", stale);
    files_.push_back(std::make_unique<AtomicFile>(f, force));
  }
  buffers_.resize(files_.size());
  if (npy_) {
    const std::size_t seeds = count, rows = shape.rows;
    const std::size_t n = static_cast<std::size_t>(shape.n);
    buffers_[kMaps] =
        shape.heads == 1
            ? npy_header("<f8", {seeds, rows, n})
            : npy_header("<f8", {seeds, static_cast<std::size_t>(shape.heads), rows, n});
    buffers_[kSeeds] = npy_header("<u8", {seeds});
    buffers_[kLoss] = npy_header("<f8", {seeds});
    buffers_[kJsd] = npy_header("<f8", {seeds});
    buffers_[kOut] = npy_header("<f8", {seeds, rows, static_cast<std::size_t>(shape.d_out)});
    return;
  }
  std::string header = "seed,loss,start_loss,converged,diverged,jsd_to_mean";
  for (int h = 0; h < shape.heads; ++h)
    for (int e = 0; e < shape.map_size(); ++e)
      header += ",p_" + (shape.heads > 1 ? std::to_string(h) + "_" : std::string()) +
                std::to_string(r0 + e / shape.n) + "_" + std::to_string(e % shape.n);
  buffers_[0] = header + "\n";
}

void PerSeedMaps::add(std::uint64_t seed, const double* r, double jsd_to_mean) {
  ++added_;
  const int maps = shape_.heads * shape_.map_size();
  if (npy_) {
    append(buffers_[kMaps], shape_.head_map(r, 0), static_cast<std::size_t>(maps));
    append(buffers_[kSeeds], &seed, 1);
    append(buffers_[kLoss], r, 1);
    append(buffers_[kJsd], &jsd_to_mean, 1);
    append(buffers_[kOut], shape_.outputs(r), static_cast<std::size_t>(shape_.rows) * shape_.d_out);
  } else {
    char cell[128];
    const bool diverged = shape_.diverged(r);
    const bool converged = !diverged && r[0] < converged_below_;
    std::snprintf(cell, sizeof cell, "%llu,%.17g,%.17g,%d,%d,%.17g",
                  static_cast<unsigned long long>(seed), r[0], r[1], converged ? 1 : 0,
                  diverged ? 1 : 0, jsd_to_mean);
    std::string& rows = buffers_[0];
    rows += cell;
    for (int e = 0; e < maps; ++e) {
      std::snprintf(cell, sizeof cell, ",%.17g", shape_.head_map(r, 0)[e]);
      rows += cell;
    }
    rows += "\n";
  }
  flush(false);
}

void PerSeedMaps::flush(bool all) {
  for (std::size_t k = 0; k < files_.size(); ++k)
    if (all || buffers_[k].size() >= (std::size_t{1} << 20)) {
      files_[k]->write(buffers_[k]);
      buffers_[k].clear();
    }
}

void PerSeedMaps::commit() {
  if (added_ != count_)
    throw std::logic_error("--per-seed: " + std::to_string(added_) + " seeds written of " +
                           std::to_string(count_));
  flush(true);
  for (auto& f : files_) f->commit();
}

}  // namespace attn
