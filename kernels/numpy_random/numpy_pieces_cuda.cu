// numpy_pieces_cuda.cu: pieces of numpy's normal stream decoded on the GPU, one thread per piece
// (numpy_pieces.hpp's decode_piece, the code the CPU's threads run); the host joins them
// (kernels/numpy_random/numpy_decode.cpp). Each thread jumps to its piece's first word
// (Pcg64::advance, O(log n) 128-bit multiplies) and decodes about piece-size normals into its own
// stretch of the values, so a piece of a few hundred words keeps the jump's cost small beside the
// decode.
//
// The copies and the kernel are queued on a stream of the calling host thread
// (decode_pieces_cuda_start) and waited for apart (decode_pieces_cuda_wait), so that the host's
// dot products of one wave run while the next wave decodes; with page-locked host memory
// (pinned_host_memory) the copies are asynchronous DMA, and the host's buffers of one wave stay
// untouched by the device while it writes the next wave's (NumpyStream keeps two of each).
#include <cuda_runtime.h>

#include "cuda_check.hpp"
#include "device_buffer.hpp"
#include "kernels/numpy_random/numpy_stream.hpp"

namespace attn::dk_std {
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

// A CUDA stream, created on first use and destroyed with its owner.
class Stream {
 public:
  Stream() = default;
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  ~Stream() {
    if (s_ != nullptr) cudaStreamDestroy(s_);
  }
  cudaStream_t get() {
    if (s_ == nullptr) ATTN_CUDA_CHECK(cudaStreamCreateWithFlags(&s_, cudaStreamNonBlocking));
    return s_;
  }

 private:
  cudaStream_t s_ = nullptr;
};

// The device buffers and the stream of decode_pieces_cuda, per host thread, kept from call to
// call and grown only when a call needs more: a run's waves (numpy_stream.hpp's device_split)
// allocate once. Calls queued on the stream before a wait share the buffers: the stream runs
// them in order, each one's copies back before the next one's copy in.
struct Scratch {
  DeviceBuffer<Piece> pieces;
  DeviceBuffer<double> values;
  Stream stream;
};
Scratch& scratch() {
  thread_local Scratch s;
  return s;
}

void* pinned_allocate(std::size_t bytes) {
  void* p = nullptr;
  ATTN_CUDA_CHECK(cudaHostAlloc(&p, bytes, cudaHostAllocDefault));
  return p;
}
void pinned_release(void* p) { cudaFreeHost(p); }

}  // namespace

// pieces: host memory, updated in place; values: host memory for the run's words (the last
// piece's end), or null. Both are written when decode_pieces_cuda_wait returns.
void decode_pieces_cuda_start(const numpy_rng::Pcg64& g0, Piece* pieces, std::size_t count,
                              int head, double* values) {
  if (count == 0) return;
  std::uint64_t words = 0;
  for (std::size_t i = 0; i < count; ++i) words = pieces[i].end > words ? pieces[i].end : words;
  Scratch& s = scratch();
  const cudaStream_t stream = s.stream.get();
  const bool grow_pieces = s.pieces.size() < count;
  const bool grow_values = values != nullptr && s.values.size() < words;
  // Growing frees buffers that earlier calls' queued work may still use: wait for it first.
  if (grow_pieces || grow_values) ATTN_CUDA_CHECK(cudaStreamSynchronize(stream));
  if (grow_pieces) s.pieces = DeviceBuffer<Piece>(count);
  if (grow_values) s.values = DeviceBuffer<double>(words);
  ATTN_CUDA_CHECK(cudaMemcpyAsync(s.pieces.data(), pieces, count * sizeof(Piece),
                                  cudaMemcpyHostToDevice, stream));
  const unsigned blocks = grid_blocks(static_cast<long long>(count), kThreads);
  double* d_values = values != nullptr ? s.values.data() : nullptr;
  numpy_pieces_kernel<<<blocks, kThreads, 0, stream>>>(g0, s.pieces.data(), count, head, d_values);
  ATTN_CUDA_CHECK_LAUNCH();
  ATTN_CUDA_CHECK(cudaMemcpyAsync(pieces, s.pieces.data(), count * sizeof(Piece),
                                  cudaMemcpyDeviceToHost, stream));
  if (values != nullptr)
    ATTN_CUDA_CHECK(cudaMemcpyAsync(values, s.values.data(), words * sizeof(double),
                                    cudaMemcpyDeviceToHost, stream));
}

void decode_pieces_cuda_wait() { ATTN_CUDA_CHECK(cudaStreamSynchronize(scratch().stream.get())); }

void decode_pieces_cuda(const numpy_rng::Pcg64& g0, Piece* pieces, std::size_t count, int head,
                        double* values) {
  decode_pieces_cuda_start(g0, pieces, count, head, values);
  decode_pieces_cuda_wait();
}

HostMemory pinned_host_memory() { return HostMemory{&pinned_allocate, &pinned_release}; }

}  // namespace attn::dk_std
