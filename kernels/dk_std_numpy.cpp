// dk_std_numpy.cpp: see dk_std_numpy.hpp. The table's waves here; the parallel decode in
// kernels/numpy_random/numpy_decode.hpp, the dot products in dk_std_numpy_dots.hpp.
#include "dk_std_numpy.hpp"

#include <algorithm>
#include <memory>
#include <vector>

#include "dk_std_numpy_dots.hpp"
#include "kernels/numpy_random/numpy_decode.hpp"
#include "kernels/numpy_random/numpy_rows.hpp"

namespace attn::dk_std {
namespace {

using numpy_rng::Pcg64;
using stream::chunk_dots;
using stream::decode;
using stream::Job;
using stream::Normals;
using stream::SideWork;

// Waves of rows hold up to 2^18 normals of q, and of k (2 MiB each), two of each (one decoded
// while the other's dot products are taken), reused, so that they stay in cache and the process
// touches little fresh memory. q is kept whole only when it fits in one wave; a larger q is
// located (its words counted, values not kept) and decoded again a wave at a time beside k.
// Decoding a normal again costs less than the first touch of fresh memory to keep it (a page
// fault per 4 KiB page; with transparent huge pages, at times a compaction): re-decoding is the
// cheaper and the steadier way. Waves of a larger q are a 64th of it, from 2^16 normals (512 KiB)
// to 2^18: a short block gains more from touching less fresh memory than it loses to more joins,
// a long one the reverse.
std::uint64_t auto_wave(std::uint64_t q_normals) {
  constexpr std::uint64_t kMin = std::uint64_t{1} << 16, kMax = std::uint64_t{1} << 18;
  return q_normals <= kMax ? kMax : std::clamp(q_normals / 64, kMin, kMax);
}

}  // namespace

struct NumpyStream::Buffers {
  Normals q[2], k[2];       // two waves of each: one being decoded while the other's dots are taken
  HostArray<Piece> pieces;  // a round's pieces, in split.host memory, allocated once
};
NumpyStream::NumpyStream(std::uint64_t seed, StreamSplit split)
    : gen_(seed), split_(split), bufs_(std::make_unique<Buffers>()) {}
NumpyStream::~NumpyStream() = default;

Moments NumpyStream::next_block(std::uint64_t samples, std::uint32_t d_k, Monitor& monitor) {
  const std::uint64_t rows_per_chunk = std::max<std::uint64_t>(1, 65536 / d_k);
  const std::uint64_t sized = auto_wave(samples * d_k);
  const std::uint64_t wave = split_.wave_normals > 0 ? split_.wave_normals : sized;
  const std::uint64_t wave_rows =
      std::max<std::uint64_t>(1, wave / (rows_per_chunk * d_k)) * rows_per_chunk;

  // Progress: the block's 2 N d_k normals used, reported in step with the normals decoded
  // (3 N d_k when q is located and decoded again), so that time estimates hold.
  const bool keep_q = samples <= wave_rows;
  const double used = 2.0 * static_cast<double>(samples) * d_k;
  const double per_decoded = 2.0 / (keep_q ? 2.0 : 3.0);
  double reported = 0;
  const auto decoded = [&](std::uint64_t normals) {
    const double u = per_decoded * static_cast<double>(normals);
    monitor.advance(u);
    reported += u;
  };

  Pcg64 gq = gen_, gk = gen_;
  Normals* q = bufs_->q;
  Normals* k = bufs_->k;
  q[0].clear();
  if (keep_q) {  // q fits: decode it once and keep it; k starts where it ends
    decode({Job{&gk, samples * d_k, &q[0]}}, split_, {}, &bufs_->pieces);
    decoded(samples * d_k);
  } else {  // locate k's start (q is decoded again, a wave at a time, below)
    // Counting keeps no values: 16 waves a call (fewer rounds and joins), a few ms apiece.
    const std::uint64_t locate_rows = 16 * wave_rows;
    for (std::uint64_t r = 0; r < samples; r += locate_rows) {
      monitor.stop_point();
      const std::uint64_t rows = std::min(locate_rows, samples - r);
      decode({Job{&gk, rows * d_k, nullptr}}, split_, {}, &bufs_->pieces);
      decoded(rows * d_k);
    }
  }

  // A k wave's dot products run beside the next wave's decode (SideWork): a chunk of rows per
  // item, merged left to right after it.
  const std::uint64_t k_wave = split_.k_wave_normals > 0 ? split_.k_wave_normals : sized;
  const std::uint64_t k_rows =
      std::max<std::uint64_t>(1, k_wave / (rows_per_chunk * d_k)) * rows_per_chunk;
  struct Dots {
    const Normals* q;
    const Normals* k;
    std::uint64_t k0, krows;  // k0: the k wave's first row in q's wave
  };
  std::vector<Moments> parts;
  auto dots = [&](const Dots& d) {
    parts.assign((d.krows + rows_per_chunk - 1) / rows_per_chunk, Moments{});
    return SideWork{parts.size(), [&parts, d, rows_per_chunk, d_k](std::size_t c) {
                      const std::uint64_t first = c * rows_per_chunk;
                      parts[c] = chunk_dots(*d.q, d.k0 + first, *d.k, first,
                                            std::min(rows_per_chunk, d.krows - first), d_k);
                    }};
  };
  Moments total;
  auto merge_parts = [&](const Dots& d) {
    for (const Moments& m : parts) total = merge(total, m);
    decoded(d.krows * d_k);
  };
  bool pending = false;
  Dots last{};
  std::uint64_t q_waves = 0, k_waves = 0;
  for (std::uint64_t r0 = 0; r0 < samples; r0 += wave_rows) {
    monitor.stop_point();
    const std::uint64_t rows = std::min(wave_rows, samples - r0);
    Normals& qw = keep_q ? q[0] : q[q_waves++ % 2];
    for (std::uint64_t k0 = 0; k0 < rows; k0 += k_rows) {
      monitor.stop_point();
      const std::uint64_t krows = std::min(k_rows, rows - k0);
      Normals& kw = k[k_waves++ % 2];
      kw.clear();
      const SideWork side = pending ? dots(last) : SideWork{};
      const Job kj{&gk, krows * d_k, &kw};
      if (!keep_q && k0 == 0) {  // q's wave and k's first wave in one go
        qw.clear();
        decode({Job{&gq, rows * d_k, &qw}, kj}, split_, side, &bufs_->pieces);
      } else {
        decode({kj}, split_, side, &bufs_->pieces);
      }
      if (pending) merge_parts(last);
      if (!keep_q && k0 == 0) decoded(rows * d_k);
      last = Dots{&qw, &kw, k0, krows};
      pending = true;
    }
  }
  if (pending) {
    decode({}, split_, dots(last), &bufs_->pieces);
    merge_parts(last);
  }
  monitor.advance(used - reported);  // rounding: the block's total exactly
  gen_ = gk;
  return total;
}

}  // namespace attn::dk_std
