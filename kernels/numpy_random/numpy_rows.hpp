// numpy_rows.hpp: where decoded normals are kept (buffers reused from wave to wave, spans in
// order), and the row cursor that reads them a row of d_k values at a time. Host only.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <new>
#include <vector>

namespace attn::dk_std {

// Host memory that the decoded values and the pieces live in: plain (aligned_alloc) for the CPU's
// threads, page-locked (cudaHostAlloc) for the GPU's decoder, whose asynchronous copies need it.
// allocate returns at least `bytes` bytes aligned to 64 or throws; release frees what it gave.
struct HostMemory {
  void* (*allocate)(std::size_t bytes) = nullptr;  // null: std::aligned_alloc, 64-byte aligned
  void (*release)(void* p) = nullptr;              // null: std::free
};

// Memory for n values of T, reused from wave to wave and block to block: grown only when a call
// needs more (or asks for another kind of host memory), freed by its destructor.
template <class T>
class HostArray {
 public:
  T* reserve(std::size_t n, const HostMemory& mem = {}) {
    if (n > capacity_ || mem.allocate != p_.get_deleter().mem.allocate) {
      // Memory of another kind (page-locked: a system call and pinned pages each time) grows at
      // least twofold and from 4096 values up, so that the small requests of a wave's later
      // rounds and of its last normals, and the sizes that vary from wave to wave, settle within
      // the first block instead of allocating again.
      if (mem.allocate != nullptr && mem.allocate == p_.get_deleter().mem.allocate)
        n = std::max({n, 2 * capacity_, std::size_t{4096}});
      else if (mem.allocate != nullptr)
        n = std::max(n, std::size_t{4096});
      constexpr std::size_t kAlign = 64;
      const std::size_t bytes =
          (std::max<std::size_t>(n, 1) * sizeof(T) + kAlign - 1) / kAlign * kAlign;
      p_.reset();
      void* p = mem.allocate != nullptr ? mem.allocate(bytes) : std::aligned_alloc(kAlign, bytes);
      if (p == nullptr) throw std::bad_alloc();
      p_ = std::unique_ptr<T, Free>(static_cast<T*>(p), Free{mem});
      capacity_ = bytes / sizeof(T);
    }
    return p_.get();
  }

 private:
  struct Free {
    HostMemory mem;
    void operator()(T* p) const {
      if (mem.release != nullptr)
        mem.release(p);
      else
        std::free(p);
    }
  };
  std::unique_ptr<T, Free> p_{nullptr, Free{}};
  std::size_t capacity_ = 0;
};
using Buffer = HostArray<double>;

}  // namespace attn::dk_std

namespace attn::dk_std::stream {

using dk_std::HostArray;
using dk_std::HostMemory;

// A run of decoded normals, in order, as spans of the buffers that hold them.
struct Span {
  const double* p;
  std::uint64_t first;  // index of p[0] in the run
  std::uint64_t n;
};
struct Normals {
  std::vector<Buffer> buffers;
  std::size_t used = 0;  // buffers in use by spans
  std::vector<Span> spans;
  void clear() {
    used = 0;
    spans.clear();
  }
  double* buffer(std::size_t n, const HostMemory& mem = {}) {
    if (used == buffers.size()) buffers.emplace_back();
    return buffers[used++].reserve(n, mem);
  }
};

// Row values [i, i + d_k) of a run as one pointer: into the buffer that holds them when one
// span does, else copied into `scratch` (d_k values; rows cross spans at the pieces' joins).
// Rows are asked for in increasing order from value `first` on: the span of the last row asked
// is kept, not searched for per row (rows may be as short as d_k = 2).
class Rows {
 public:
  Rows(const Normals& v, std::uint64_t first)
      : it_(std::upper_bound(v.spans.begin(), v.spans.end(), first,
                             [](std::uint64_t x, const Span& s) { return x < s.first; }) -
            1) {}
  const double* values(std::uint64_t i, std::uint32_t d_k, double* scratch) {
    while (i >= it_->first + it_->n) ++it_;
    if (i + d_k <= it_->first + it_->n) return it_->p + (i - it_->first);
    auto it = it_;
    for (std::uint64_t j = 0; j < d_k; ++it) {
      const std::uint64_t from = i + j - it->first,
                          n = std::min<std::uint64_t>(d_k - j, it->n - from);
      std::copy(it->p + from, it->p + from + n, scratch + j);
      j += n;
    }
    return scratch;
  }

 private:
  std::vector<Span>::const_iterator it_;
};

}  // namespace attn::dk_std::stream
