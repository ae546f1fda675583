// numpy_block.cpp: see numpy_block.hpp.
#include "kernels/numpy_random/numpy_block.hpp"

#include <cstring>

#include "cpu_clones.hpp"
#include "kernels/numpy_random/numpy_pieces.hpp"

#if ATTN_HAVE_CPU_LEVELS
namespace attn::dk_std::stream {

using Counted = CountedPcg64;

// The normals of the block of words [base, base + words), a true normal start at base: the
// first m entries of `listed` are its vectors with a lane not surely accepted. slot: the
// candidate values by word (null when locating); the normals' values are left at slot[0 .. n).
BlockEnd resolve_block(const Pcg64& proto, std::uint64_t base, std::uint64_t words, unsigned m,
                       const Listed& listed, double* slot) {
  const std::uint64_t end = base + words;
  std::uint64_t c = base, n = 0;  // c: where the next normal starts
  u128 state = 0;
  // Words c .. to-1 start accepted normals: their values move down to slot[n ..).
  auto take_accepted = [&](std::uint64_t to) {
    if (slot != nullptr && n != c - base)
      std::memmove(slot + n, slot + (c - base), (to - c) * sizeof(double));
    n += to - c;
  };
  for (unsigned e = 0; e < m; ++e) {
    const std::uint64_t vbase = base + 8 * std::uint64_t{listed.vix[e]};
    for (unsigned todo = ~listed.accepted[e] & 0xffu; todo != 0; todo &= todo - 1) {
      const unsigned j = static_cast<unsigned>(__builtin_ctz(todo));
      const std::uint64_t w = vbase + j;
      if (w < c) continue;  // drawn by the normal before
      take_accepted(w);
      const u128 s = listed.state(e, j);
      int id;
      std::uint64_t rabs;
      double x;
      c = w + 1;
      if (numpy_rng::ziggurat_first(Pcg64::output(s), id, rabs, x)) {
        // accepted after all (the vector test left it undecided)
      } else if (id != 0 && j < 7 && w + 2 < end) {
        // The wedge, its uniform the next lane's word. Rejected, the normal draws again from
        // word w + 2 as a new normal would: that word's turn in this walk gives its value.
        c = w + 2;
        const std::uint64_t u = Pcg64::output(listed.state(e, j + 1));
        if (!numpy_rng::wedge_accepts(id, x, Pcg64::double_from(u))) continue;
      } else {  // the tail, or a wedge whose uniform or redraw lies past the block
        Pcg64 g = proto;
        g.set_state(s);
        Counted cg{g, w + 1};
        x = numpy_rng::standard_normal_rare(cg, id, rabs, x);
        c = cg.pos;
        state = cg.g.state();
      }
      if (slot != nullptr) slot[n] = x;
      ++n;
    }
  }
  if (c < end) {
    take_accepted(end);
    c = end;
  }
  return BlockEnd{n, c, state};
}

}  // namespace attn::dk_std::stream
#endif
