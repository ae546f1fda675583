// dk_std_numpy_dots.cpp: see dk_std_numpy_dots.hpp.
#include "dk_std_numpy_dots.hpp"

#include <cstring>
#include <initializer_list>
#include <vector>

#include "cpu_clones.hpp"
#include "hd.hpp"

namespace attn::dk_std::stream {
namespace {

// Eight rows' dot products a[i] . b[i] (d_k values each) into out[0 .. 8), each summed from
// j = 0 in order with a rounded product per term (as the sequential loop sums it): the products
// of eight j's are taken along each row, the 8 x 8 block is transposed, and its columns are added
// to the eight sums in order, one vector add per j. GCC's vector extensions: each level's copy
// is compiled for its ISA (one AVX-512 register, two AVX2 ones, four SSE2 ones).
using V8 = double __attribute__((vector_size(64)));
ATTN_INLINE V8 load8(const double* p) {
  V8 v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
ATTN_INLINE void dots8_body(const double* const* a, const double* const* b, std::uint32_t d_k,
                            double* out) {
  V8 d = {};
  std::uint32_t j = 0;
#if __has_builtin(__builtin_shufflevector)  // GCC 12 and later, clang; else the loop below
  for (; j + 8 <= d_k; j += 8) {
    V8 p[8], t[8], u[8], c[8];  // p[i][x]: row i's product at j + x; c[x][i] = p[i][x]
    for (int i = 0; i < 8; ++i) p[i] = load8(a[i] + j) * load8(b[i] + j);
    for (int i = 0; i < 8; i += 2) {  // t[i]: p[i], p[i+1] at even x; t[i+1]: at odd x
      t[i] = __builtin_shufflevector(p[i], p[i + 1], 0, 8, 2, 10, 4, 12, 6, 14);
      t[i + 1] = __builtin_shufflevector(p[i], p[i + 1], 1, 9, 3, 11, 5, 13, 7, 15);
    }
    for (int i : {0, 1, 4, 5}) {  // u[i]: rows i&~3 .. +3 at x = i&1 and 4 + (i&1); u[i+2]: +2
      u[i] = __builtin_shufflevector(t[i], t[i + 2], 0, 1, 8, 9, 4, 5, 12, 13);
      u[i + 2] = __builtin_shufflevector(t[i], t[i + 2], 2, 3, 10, 11, 6, 7, 14, 15);
    }
    for (int x = 0; x < 4; ++x) {  // rows 0-3 from u[x], rows 4-7 from u[x + 4]
      c[x] = __builtin_shufflevector(u[x], u[x + 4], 0, 1, 2, 3, 8, 9, 10, 11);
      c[x + 4] = __builtin_shufflevector(u[x], u[x + 4], 4, 5, 6, 7, 12, 13, 14, 15);
    }
    for (int x = 0; x < 8; ++x) d += c[x];
  }
#endif
  for (; j < d_k; ++j)
    for (int i = 0; i < 8; ++i) d[i] += a[i][j] * b[i][j];
  for (int i = 0; i < 8; ++i) out[i] = d[i];
}
ATTN_CPU_LEVELS(void, dots8,
                (const double* const* a, const double* const* b, std::uint32_t d_k, double* out),
                (a, b, d_k, out))

}  // namespace

// Moments of `rows` rows: row r's dot is q[qrow0 + r] . k[krow0 + r], summed from j = 0 in order
// (as the sequential loop sums it), eight rows at once (dots8); q and k hold their waves' rows.
Moments chunk_dots(const Normals& q, std::uint64_t qrow0, const Normals& k, std::uint64_t krow0,
                   std::uint64_t rows, std::uint32_t d_k) {
  constexpr int kRows = 8;
  Moments m;
  std::vector<double> scratch(2 * kRows * static_cast<std::size_t>(d_k));
  Rows qr(q, qrow0 * d_k), kr(k, krow0 * d_k);
  const double *a[kRows], *b[kRows];
  std::uint64_t r = 0;
  for (; r + kRows <= rows; r += kRows) {
    for (int i = 0; i < kRows; ++i) {
      a[i] = qr.values((qrow0 + r + i) * d_k, d_k, scratch.data() + i * d_k);
      b[i] = kr.values((krow0 + r + i) * d_k, d_k, scratch.data() + (kRows + i) * d_k);
    }
    double d[kRows];
    dots8(a, b, d_k, d);
    for (int i = 0; i < kRows; ++i) m.push(d[i]);
  }
  for (; r < rows; ++r) {
    const double* x = qr.values((qrow0 + r) * d_k, d_k, scratch.data());
    const double* y = kr.values((krow0 + r) * d_k, d_k, scratch.data() + d_k);
    double dot = 0;
    for (std::uint32_t j = 0; j < d_k; ++j) dot += x[j] * y[j];
    m.push(dot);
  }
  return m;
}

}  // namespace attn::dk_std::stream
