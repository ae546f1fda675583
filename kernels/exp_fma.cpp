// exp_fma.cpp: glibc 2.36's exp (__exp_fma) on lane packs, bit for bit (lanes.hpp).
//
// sysdeps/ieee754/dbl-64/e_exp.c (Szabolcs Nagy), which glibc's ifunc runs on a CPU with FMA
// and AVX2 and builds with -mfma -mavx2, so GCC fused some of its a * b + c. Every step below
// is an instruction of __ieee754_exp_fma as Debian 12's libm has it (gdb -batch -ex
// 'disassemble __ieee754_exp_fma' /lib/x86_64-linux-gnu/libm.so.6, with libc6-dbg), with the
// same constants and table (exp_fma_table.inc); each rounds as there (IEEE), so the lanes get
// glibc's bits. The disassembly, in e_exp.c's names (N = 128):
//   kd = fma(x, InvLn2N, Shift); ki = bits(kd); kd -= Shift
//   r = fma(kd, NegLn2loN, fma(kd, NegLn2hiN, x))
//   tail = T[2 (ki % N)]; sbits = T[2 (ki % N) + 1] + (ki << 45)
//   r2 = r * r
//   tmp = fma(r2 * r2, fma(r, C5, C4), fma(fma(r, C3, C2), r2, tail + r))
//   exp(x) = fma(scale, tmp, scale), scale = asdouble(sbits)
// for 2^-54 <= |x| < 512; 1 + x below; the rest (|x| >= 512: specialcase(), overflow,
// underflow; inf; nan) goes to std::exp lane by lane.
#include <bit>
#include <cmath>
#include <cstdint>

#include "cpu_clones.hpp"
#include "lanes.hpp"

#if ATTN_HAVE_CPU_LEVELS
#include <immintrin.h>
#endif

namespace attn::exp_fma_detail {
namespace {

#include "exp_fma_table.inc"

// y = std::exp(x) on the lanes where |x| >= 512 or x is inf or nan: out of line, so that the
// common path keeps y in registers.
__attribute__((noinline, cold)) void rare_lanes(const double* x, double* y, int n) {
  for (int l = 0; l < n; ++l)
    if (((std::bit_cast<std::uint64_t>(x[l]) >> 52) & 0x7ff) >= 0x408) y[l] = std::exp(x[l]);
}

#if ATTN_HAVE_CPU_LEVELS
// The steps above in intrinsics, for AVX2 and for AVX-512: GCC 12's vectorizer turns them,
// written once on GCC's vectors, into a mix of vector and scalar instructions at AVX2 (some of
// the fused multiply-adds scalar, vectors spilled to the stack: hardly faster than 4 calls of
// glibc's exp), and at AVX-512 reads the table with 16 scalar loads and inserts.
ATTN_TARGET_V3 ATTN_INLINE __m256d exp_fma_avx2(__m256d x) {
  const __m256i abstop =
      _mm256_and_si256(_mm256_srli_epi64(_mm256_castpd_si256(x), 52), _mm256_set1_epi64x(0x7ff));
  const __m256d shift = _mm256_set1_pd(kExp_shift);
  const __m256d kd_shifted = _mm256_fmadd_pd(x, _mm256_set1_pd(kExp_invln2N), shift);
  const __m256i ki = _mm256_castpd_si256(kd_shifted);
  const __m256d kd = _mm256_sub_pd(kd_shifted, shift);
  const __m256d r = _mm256_fmadd_pd(kd, _mm256_set1_pd(kExp_negln2loN),
                                    _mm256_fmadd_pd(kd, _mm256_set1_pd(kExp_negln2hiN), x));
  // Each lane's T[2j] (tail) and T[2j + 1] lie side by side: one 16-byte load a lane, two
  // lanes' pairs to a register, and unpacks sort the tails from the sbits (lane order: unpacklo
  // of (0, 2) and (1, 3) is (0, 1 | 2, 3)). Loads, not two four-lane gathers: on
  // AVX2 a gather can cost more than four loads (the numpy stream's decoder reads its layer
  // tables the same way, numpy_isa.hpp).
  alignas(32) std::uint64_t j[4];
  _mm256_store_si256(reinterpret_cast<__m256i*>(j),
                     _mm256_slli_epi64(_mm256_and_si256(ki, _mm256_set1_epi64x(0x7f)), 1));
  const auto pair = [&](int l) {
    return _mm_loadu_si128(reinterpret_cast<const __m128i*>(kExpTab + j[l]));
  };
  const __m256i p02 = _mm256_inserti128_si256(_mm256_castsi128_si256(pair(0)), pair(2), 1);
  const __m256i p13 = _mm256_inserti128_si256(_mm256_castsi128_si256(pair(1)), pair(3), 1);
  const __m256d tail = _mm256_castsi256_pd(_mm256_unpacklo_epi64(p02, p13));
  const __m256i sbits =
      _mm256_add_epi64(_mm256_unpackhi_epi64(p02, p13), _mm256_slli_epi64(ki, 45));
  const __m256d scale = _mm256_castsi256_pd(sbits);
  const __m256d r2 = _mm256_mul_pd(r, r);
  const __m256d c23 = _mm256_fmadd_pd(r, _mm256_set1_pd(kExp_C3), _mm256_set1_pd(kExp_C2));
  const __m256d c45 = _mm256_fmadd_pd(r, _mm256_set1_pd(kExp_C5), _mm256_set1_pd(kExp_C4));
  const __m256d tmp =
      _mm256_fmadd_pd(_mm256_mul_pd(r2, r2), c45, _mm256_fmadd_pd(c23, r2, _mm256_add_pd(tail, r)));
  __m256d y = _mm256_fmadd_pd(scale, tmp, scale);
  const __m256i tiny = _mm256_cmpgt_epi64(_mm256_set1_epi64x(0x3c9), abstop);  // 1 + x
  const __m256i rare = _mm256_cmpgt_epi64(abstop, _mm256_set1_epi64x(0x407));
  y = _mm256_blendv_pd(y, _mm256_add_pd(_mm256_set1_pd(1.0), x), _mm256_castsi256_pd(tiny));
  if (__builtin_expect(!_mm256_testz_si256(rare, rare), 0)) {
    alignas(32) double xs[4], ys[4];
    _mm256_store_pd(xs, x);
    _mm256_store_pd(ys, y);
    rare_lanes(xs, ys, 4);
    y = _mm256_load_pd(ys);
  }
  return y;
}
#endif

#if ATTN_HAVE_CPU_LEVELS
// The AVX-512 copy: the table read by two gathers, the lanes off the main path found by mask
// compares. (The pragma: GCC 12's false positive of the shift and gather intrinsics' undefined
// operand under -Wextra.)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
ATTN_TARGET_V4 ATTN_INLINE __m512d exp_fma_avx512(__m512d x) {
  const __m512i abstop =
      _mm512_and_si512(_mm512_srli_epi64(_mm512_castpd_si512(x), 52), _mm512_set1_epi64(0x7ff));
  const __m512d shift = _mm512_set1_pd(kExp_shift);
  const __m512d kd_shifted = _mm512_fmadd_pd(x, _mm512_set1_pd(kExp_invln2N), shift);
  const __m512i ki = _mm512_castpd_si512(kd_shifted);
  const __m512d kd = _mm512_sub_pd(kd_shifted, shift);
  const __m512d r = _mm512_fmadd_pd(kd, _mm512_set1_pd(kExp_negln2loN),
                                    _mm512_fmadd_pd(kd, _mm512_set1_pd(kExp_negln2hiN), x));
  const __m512i idx = _mm512_slli_epi64(_mm512_and_si512(ki, _mm512_set1_epi64(0x7f)), 1);
  const __m512d tail = _mm512_castsi512_pd(_mm512_i64gather_epi64(idx, kExpTab, 8));
  const __m512i sbits =
      _mm512_add_epi64(_mm512_i64gather_epi64(idx, kExpTab + 1, 8), _mm512_slli_epi64(ki, 45));
  const __m512d scale = _mm512_castsi512_pd(sbits);
  const __m512d r2 = _mm512_mul_pd(r, r);
  const __m512d c23 = _mm512_fmadd_pd(r, _mm512_set1_pd(kExp_C3), _mm512_set1_pd(kExp_C2));
  const __m512d c45 = _mm512_fmadd_pd(r, _mm512_set1_pd(kExp_C5), _mm512_set1_pd(kExp_C4));
  const __m512d tmp =
      _mm512_fmadd_pd(_mm512_mul_pd(r2, r2), c45, _mm512_fmadd_pd(c23, r2, _mm512_add_pd(tail, r)));
  __m512d y = _mm512_fmadd_pd(scale, tmp, scale);
  const __mmask8 tiny = _mm512_cmplt_epi64_mask(abstop, _mm512_set1_epi64(0x3c9));  // 1 + x
  const __mmask8 rare = _mm512_cmpgt_epi64_mask(abstop, _mm512_set1_epi64(0x407));
  y = _mm512_mask_add_pd(y, tiny, _mm512_set1_pd(1.0), x);
  if (__builtin_expect(rare != 0, 0)) {
    alignas(64) double xs[8], ys[8];
    _mm512_store_pd(xs, x);
    _mm512_store_pd(ys, y);
    rare_lanes(xs, ys, 8);
    y = _mm512_load_pd(ys);
  }
  return y;
}

ATTN_TARGET_V4 void exp_pack_avx512(const PackD* x, PackD* y) {
  _mm512_storeu_pd(reinterpret_cast<double*>(y),
                   exp_fma_avx512(_mm512_loadu_pd(reinterpret_cast<const double*>(x))));
}
#pragma GCC diagnostic pop
#endif

// exp_pack against std::exp on a fixed sample of 4096 inputs: [-50, 50], glibc's whole main
// path [-512, 512], the neighbours of table boundaries k ln2 / 128, and random bit patterns.
// A libm with another exp (algorithm, table, polynomial) differs on a good share of these; one
// step fused differently changes about 1 result in 10^6, which only tests/test_lanes.cpp's
// 1.2e7 inputs see.
bool agrees_with_libm(ExpPack exp_pack) {
  std::uint64_t s = 0;
  auto next = [&s] {  // splitmix64
    std::uint64_t z = (s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  };
  auto unit = [&next] { return static_cast<double>(next() >> 11) * 0x1p-53; };
  for (int pack = 0; pack < 512; ++pack) {
    PackD x, y;
    for (int l = 0; l < kPackLanes; ++l) {
      switch (l % 4) {
        case 0:
          x[l] = -50 + 100 * unit();
          break;
        case 1:
          x[l] = -512 + 1024 * unit();
          break;
        case 2: {  // next to k ln2 / 128, k in [-1000, 1000)
          const double k = static_cast<double>(next() % 2000) - 1000;
          const double toward = (next() & 1) ? 1e300 : -1e300;
          x[l] = std::nextafter(k * 0x1.62e42fefa39efp-1 / 128, toward);
          break;
        }
        default:
          x[l] = std::bit_cast<double>(next());
      }
    }
    exp_pack(&x, &y);
    for (int l = 0; l < kPackLanes; ++l)
      if (std::bit_cast<std::uint64_t>(y[l]) != std::bit_cast<std::uint64_t>(std::exp(x[l])))
        return false;
  }
  return true;
}

#if ATTN_HAVE_CPU_LEVELS
// *y = exp(*x) in two AVX2 vectors. x is read lane by lane (volatile: GCC must not merge the
// reads into vector loads). The AVX2 copy of the CPU twins builds packs with 8-byte stores, and
// a 32-byte load of those cannot take them from the store buffer: it waits until they are
// written (as long as exp_fma_avx2).
ATTN_TARGET_V3 void exp_pack_avx2(const PackD* x, PackD* y) {
  const volatile double* in = reinterpret_cast<const volatile double*>(x);
  double* out = reinterpret_cast<double*>(y);
  _mm256_storeu_pd(out, exp_fma_avx2(_mm256_set_pd(in[3], in[2], in[1], in[0])));
  _mm256_storeu_pd(out + 4, exp_fma_avx2(_mm256_set_pd(in[7], in[6], in[5], in[4])));
}
#endif

// *y = exp(*x) at level L: glibc's __exp_fma in vectors at v4 and v3, std::exp lane by lane at
// the baseline (where glibc may pick its exp without FMA).
template <CpuLevel L>
ATTN_INLINE void exp_pack_body(const PackD* x, PackD* y) {
#if ATTN_HAVE_CPU_LEVELS
  if constexpr (L == CpuLevel::v4) return exp_pack_avx512(x, y);
  if constexpr (L == CpuLevel::v3) return exp_pack_avx2(x, y);
#endif
  for (int l = 0; l < kPackLanes; ++l) (*y)[l] = std::exp((*x)[l]);
}

// x[i] ← exp(x[i] − *shift) for i < count, each as exp_pack_body, and *sum ← their sum,
// added from 0 in the order of i.
template <CpuLevel L>
ATTN_INLINE void exp_shifted_body(PackD* x, int count, const PackD* shift, PackD* sum) {
  const PackD by = *shift;
  PackD total = {};
  for (int i = 0; i < count; ++i) {
    const PackD d = x[i] - by;
    exp_pack_body<L>(&d, x + i);
    total = total + x[i];
  }
  *sum = total;
}

}  // namespace

ATTN_CPU_LEVELS_BY_LEVEL(void, exp_pack, (const PackD* x, PackD* y), (x, y))
ATTN_CPU_LEVELS_BY_LEVEL(void, exp_shifted, (PackD * x, int count, const PackD* shift, PackD* sum),
                         (x, count, shift, sum))

bool exp_pack_agrees() { return cpu_level() == CpuLevel::baseline || agrees_with_libm(exp_pack); }

}  // namespace attn::exp_fma_detail
