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

}  // namespace

// pieces: host memory, updated in place; values: host memory for the run's words (the last
// piece's end), or null.
void decode_pieces_cuda(const numpy_rng::Pcg64& g0, Piece* pieces, std::size_t count, int head,
                        double* values) {
  if (count == 0) return;
  std::uint64_t words = 0;
  for (std::size_t i = 0; i < count; ++i) words = pieces[i].end > words ? pieces[i].end : words;
  DeviceBuffer<Piece> d_pieces = DeviceBuffer<Piece>::from_host(pieces, count);
  DeviceBuffer<double> d_values(values != nullptr ? words : 0);
  numpy_pieces_kernel<<<grid_blocks(static_cast<long long>(count), kThreads), kThreads>>>(
      g0, d_pieces.data(), count, head, values != nullptr ? d_values.data() : nullptr);
  ATTN_CUDA_CHECK_LAUNCH();
  d_pieces.download(pieces, count);
  if (values != nullptr) d_values.download(values, words);
}

}  // namespace attn::dkstd
