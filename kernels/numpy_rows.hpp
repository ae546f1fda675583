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

namespace attn::dkstd::stream {

// Memory for decoded normals, reused from wave to wave and block to block.
class Buffer {
 public:
  double* reserve(std::size_t n) {
    if (n > capacity_) {
      constexpr std::size_t kAlign = 64;
      const std::size_t bytes = (n * sizeof(double) + kAlign - 1) / kAlign * kAlign;
      void* p = std::aligned_alloc(kAlign, bytes);
      if (p == nullptr) throw std::bad_alloc();
      p_.reset(static_cast<double*>(p));
      capacity_ = bytes / sizeof(double);
    }
    return p_.get();
  }

 private:
  struct Free {
    void operator()(double* p) const { std::free(p); }
  };
  std::unique_ptr<double, Free> p_;
  std::size_t capacity_ = 0;
};

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
  double* buffer(std::size_t n) {
    if (used == buffers.size()) buffers.emplace_back();
    return buffers[used++].reserve(n);
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

}  // namespace attn::dkstd::stream
