// numpy_stream.hpp: runs of numpy's default_rng normals decoded in parallel, bit for bit, on this
// CPU's threads or on the GPU.
//
// numpy's ziggurat takes one 64-bit PCG64 word per normal except on rare rejections (about 1%),
// and PCG64 jumps ahead any number of words in O(log n) (Pcg64::advance). So a run of normals is
// cut at word offsets into pieces; each piece decodes from its offset as if a normal started
// there, recording where its first normals start. The piece before it decodes past its end to
// its first normal starting at or after that offset, which is a true start; the two decodings
// agree from the first start they share on (a normal is a function of where it starts), usually
// at once. Prefix counts of the pieces' true normals then place every normal. A piece that does
// not meet its predecessor within its first head_starts normals (never seen in practice) is
// decoded again from the true start (kernels/numpy_random/numpy_decode.hpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

#include "kernels/numpy_random/numpy_pieces.hpp"
#include "kernels/numpy_random/numpy_random.hpp"
#include "kernels/numpy_random/numpy_rows.hpp"

namespace attn::dk_std {

// Decodes pieces[0 .. count) of the stream g0 stands at the start of, each from its begin
// (decode_piece), with values at values + piece.begin when values is not null: a round's pieces
// handed to another device (Backend::numpy_pieces sends them to the GPU). With a DecodeWait in
// the split, it may return before the pieces and values are written: they are then complete when
// the wait returns, and the caller neither reads nor frees them before.
using PieceDecoder = std::function<void(const numpy_rng::Pcg64& g0, Piece* pieces,
                                        std::size_t count, int head, double* values)>;
// Waits until every decode the decoder was handed since the last wait has completed; throws
// what the device reported (std::runtime_error).
using DecodeWait = std::function<void()>;

// How a run of normals is cut. Defaults: each run of normals a round decodes in 8 pieces per
// thread, of at least 2^12 words.
struct StreamSplit {
  std::uint64_t piece_words = 0;  // words per piece; 0: automatic
  int threads = 0;                // OpenMP threads; 0: OpenMP's default
  // Normal starts a piece records for the resync, 1 .. 64, decoded one at a time (the vector
  // loop records none). A piece's speculative decode meets the true starts at its first normal
  // unless that word belongs to a rare normal's extra words (about 1.5%), and each later step
  // misses again with about that chance: eight leave a miss at about 1e-15 (then the piece is
  // decoded again, same bits), and cost an eighth of the scalar steps of 64.
  int head_starts = 8;
  std::uint64_t wave_normals = 0;    // next_block: q normals per wave; 0: by the block's size
  std::uint64_t k_wave_normals = 0;  // next_block: k normals per wave; 0: as q's
  PieceDecoder decoder;              // decodes the pieces; empty: this CPU's threads
  // Asynchronous decoders (the GPU's): each round hands the decoder its pieces, runs the side
  // work (the previous wave's dot products) on this CPU's threads meanwhile, then waits. Empty:
  // the decoder returns when its pieces are done.
  DecodeWait wait;
  // Where a round's pieces and the decoded values are kept (page-locked for the GPU's copies).
  HostMemory host;
};

// The split for a device that decodes a piece per thread (the GPU): pieces of 128 words, 16
// recorded starts, waves of 2^25 normals (256 MiB): 2^18 = 262,144 threads a wave, 1.55 times
// the threads an H200 holds of the decoder at once (168,960: 40 warps per SM at its 48
// registers, tests/test_residency.cpp), where waves of 2^22 in pieces of 256 words gave it
// 16,384. A piece's jump (Pcg64::advance, about 25 128-bit multiplies at this
// size) stays small beside its 128 words' decode. wait and host: as in StreamSplit (the GPU's
// asynchronous decoder, decode_pieces_cuda_start, with decode_pieces_cuda_wait and
// pinned_host_memory()).
StreamSplit device_split(PieceDecoder decoder, DecodeWait wait = {}, HostMemory host = {});

// PieceDecoders: the CPU's threads (a plain loop over decode_piece, for tests and as the
// reference) and the GPU (one thread per piece; CUDA builds). The GPU's normals equal the CPU's
// bit for bit: the tail's log1p and the wedge's exp are glibc's algorithms on the device too
// (hd.hpp's log1p_t and exp_t).
void decode_pieces_cpu(const numpy_rng::Pcg64& g0, Piece* pieces, std::size_t count, int head,
                       double* values, int threads = 0);
#if defined(ATTNLAB_WITH_CUDA)
void decode_pieces_cuda(const numpy_rng::Pcg64& g0, Piece* pieces, std::size_t count, int head,
                        double* values);
// decode_pieces_cuda in two halves, for the overlap of the GPU's decode with the host's work:
// _start queues the copy of the pieces to the device, the kernel and the copies of pieces and
// values back on this host thread's stream and returns; _wait waits for that stream. pieces and
// values should be page-locked (pinned_host_memory), or the copies are not asynchronous. Errors
// (a launch, a copy, out of device memory) throw std::runtime_error, from either half.
void decode_pieces_cuda_start(const numpy_rng::Pcg64& g0, Piece* pieces, std::size_t count,
                              int head, double* values);
void decode_pieces_cuda_wait();
// Page-locked host memory (cudaHostAlloc, freed by cudaFreeHost); allocate throws
// std::runtime_error when the runtime refuses.
HostMemory pinned_host_memory();
#endif

// The next `count` standard normals of numpy's stream from g, in order, exactly as `count`
// calls of numpy_rng::standard_normal(g) give them; g then stands where those calls leave it.
std::vector<double> parallel_normals(numpy_rng::Pcg64& g, std::uint64_t count,
                                     const StreamSplit& split = {});

}  // namespace attn::dk_std
