// numpy_decode.hpp: runs of numpy's normals decoded in parallel, bit for bit: the pieces of each
// round over the threads, their joins resynced (numpy_stream.hpp says how). Host only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <initializer_list>

#include "kernels/numpy_random/numpy_rows.hpp"
#include "kernels/numpy_random/numpy_stream.hpp"

namespace attn::dk_std::stream {

using numpy_rng::Pcg64;

// One run of normals to decode: the next `count` from *g (standing at a normal's start; it then
// stands after them), values kept in *out, or only counted (q located) when out is null.
struct Job {
  Pcg64* g;
  std::uint64_t count;
  Normals* out;
};

// Items run by the first round's threads beside its pieces (the previous wave's dot products),
// so that one join serves both. They are handed out first: an item is several pieces' work, and
// one taken last would leave the other threads waiting at the join.
struct SideWork {
  std::size_t count = 0;
  std::function<void(std::size_t)> run;
};

// Decodes the jobs, their pieces in one parallel loop per round. Rounds: the words
// [S, S + rest) hold at most `rest` normal starts (each normal takes at least one word), so each
// round decodes those words of every unfinished job in pieces, and the next round goes on from
// the first start past them (about 1.5% of words are rejections: rounds after the first are
// small, and run on one thread below kSerialWords); a job's last kFinishNormals or fewer are
// decoded one at a time, counted, instead of in further rounds.
// Values go to buffers of split.host memory, pieces to *pieces (kept by the caller from call to
// call, so that page-locked memory is allocated once), or to memory of this call when null.
// With split.wait, a round's pieces go to the decoder, the side work runs, then the round waits.
void decode(std::initializer_list<Job> jobs_in, const StreamSplit& split, const SideWork& side = {},
            HostArray<Piece>* pieces = nullptr);

}  // namespace attn::dk_std::stream
