// dk_std_cuda.cu: the fused dk-std sampling kernel.
//
// One block per chunk, one thread per lane (dk_std.hpp's layout). Each thread makes its samples'
// q and k in registers (Philox4x32-10 + Box-Muller), takes the dot product and pushes it into
// its own Moments; nothing per sample touches memory. The block then merges its 256 lane
// summaries in shared memory in the same tree as merge_lanes, and thread 0 writes the chunk's
// summary. Built with -fmad=false: every fused multiply-add is an explicit fmaf, as on the CPU.
#include <cuda_runtime.h>

#include "cuda_check.hpp"
#include "device_buffer.hpp"
#include "dk_std.hpp"

namespace attn::dk_std {
namespace {

__global__ void __launch_bounds__(kLanes)
    dk_std_chunks_kernel(Plan p, std::uint64_t first_chunk, Moments* __restrict__ out) {
  __shared__ Moments lanes[kLanes];
  const unsigned lane = threadIdx.x;
  const std::uint64_t chunk = first_chunk + blockIdx.x;
  lanes[lane] = lane_moments(p, chunk, lane);
  __syncthreads();
  for (unsigned stride = kLanes / 2; stride > 0; stride /= 2) {
    if (lane < stride) lanes[lane] = merge(lanes[lane], lanes[lane + stride]);
    __syncthreads();
  }
  if (lane == 0) out[blockIdx.x] = lanes[0];
}

}  // namespace

void chunk_moments_cuda_device(const Plan& p, std::uint64_t first, std::uint64_t count,
                               Moments* d_out) {
  for (std::uint64_t done = 0; done < count; done += kChunksPerLaunch) {
    const std::uint64_t n = count - done < kChunksPerLaunch ? count - done : kChunksPerLaunch;
    dk_std_chunks_kernel<<<static_cast<unsigned>(n), kLanes>>>(p, first + done, d_out + done);
    ATTN_CUDA_CHECK_LAUNCH();
  }
}

void chunk_moments_cuda(const Plan& p, std::uint64_t first, std::uint64_t count, Moments* out) {
  DeviceBuffer<Moments> d_out(count < kChunksPerLaunch ? count : kChunksPerLaunch);
  for (std::uint64_t done = 0; done < count; done += d_out.size()) {
    const std::uint64_t n = count - done < d_out.size() ? count - done : d_out.size();
    chunk_moments_cuda_device(p, first + done, n, d_out.data());
    d_out.download(out + done, n);
  }
}

}  // namespace attn::dk_std
