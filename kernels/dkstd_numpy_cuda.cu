// dkstd_numpy_cuda.cu: pieces of numpy's normal stream decoded on the GPU, one thread per piece
// (numpy_pieces.hpp's decode_piece, the code the CPU's threads run); the host joins them
// (kernels/numpy_decode.cpp). Each thread jumps to its piece's first word (Pcg64::advance,
// O(log n) 128-bit multiplies) and decodes about piece-size normals into its own stretch of the
// values, so a piece of a few hundred words keeps the jump's cost small beside the decode.
#include <cuda_runtime.h>

#include "cuda_check.hpp"
#include "device_buffer.hpp"
#include "dkstd_numpy.hpp"

namespace attn::dkstd {
namespace {

constexpr int kThreads = 128;

__global__ void __launch_bounds__(kThreads)
    numpy_pieces_kernel(numpy_rng::Pcg64 g0, Piece* __restrict__ pieces, std::size_t count,
                        int head, double* __restrict__ values) {
  const std::size_t i = static_cast<std::size_t>(blockIdx.x) * kThreads + threadIdx.x;
  if (i >= count) return;
  Piece p = pieces[i];
  decode_piece(g0, p.begin, p, head, values != nullptr ? values + p.begin : nullptr);
  pieces[i] = p;
}

// The device buffers of decode_pieces_cuda, per host thread, kept from call to call and grown
// only when a call needs more: a run's waves (dkstd_numpy.hpp's device_split) allocate once.
struct Scratch {
  DeviceBuffer<Piece> pieces;
  DeviceBuffer<double> values;
};
Scratch& scratch() {
  thread_local Scratch s;
  return s;
}

}  // namespace

// pieces: host memory, updated in place; values: host memory for the run's words (the last
// piece's end), or null.
void decode_pieces_cuda(const numpy_rng::Pcg64& g0, Piece* pieces, std::size_t count, int head,
                        double* values) {
  if (count == 0) return;
  std::uint64_t words = 0;
  for (std::size_t i = 0; i < count; ++i) words = pieces[i].end > words ? pieces[i].end : words;
  Scratch& s = scratch();
  if (s.pieces.size() < count) s.pieces = DeviceBuffer<Piece>(count);
  if (values != nullptr && s.values.size() < words) s.values = DeviceBuffer<double>(words);
  s.pieces.upload(pieces, count);
  numpy_pieces_kernel<<<grid_blocks(static_cast<long long>(count), kThreads), kThreads>>>(
      g0, s.pieces.data(), count, head, values != nullptr ? s.values.data() : nullptr);
  ATTN_CUDA_CHECK_LAUNCH();
  s.pieces.download(pieces, count);
  if (values != nullptr) s.values.download(values, words);
}

}  // namespace attn::dkstd
