// exact_state.hpp: the exact text of partial states. A bulk experiment's chunk states (chunks.hpp)
// are JSON: they travel between MPI ranks and are kept in --checkpoint files and --shard parts, so
// every number in them is written as text that reads back bit for bit, and every reader checks
// that what it reads is such text (a file may be damaged or edited).
//
// The format:
// - A double: a JSON string, the C99 hex float that printf's "%a" writes: "0x1.8p+1" (3),
//   "-0x0.0000000000001p-1022" (a subnormal), "0x0p+0", "inf", "-inf", "nan". strtod reads it back
//   to the same bits (a NaN as a NaN). The reader takes a string that strtod reads whole, with no
//   white space (a JSON number is refused).
// - Moments (moments.hpp): a JSON array of 5 doubles [n, mean, m2, m3, m4], or of 6 with the
//   scale last; the scale is written only when it is not 1, so that states of ordinary values
//   read and write as before it existed. Read back, they must be what push() and merge() can
//   leave: n a whole count in [0, 2^53]; all zero when n is 0; m2 .. m4 zero when n is 1; every
//   moment finite and m2 >= 0; a scale a power of two above 1; and sums that a sample of real
//   values can have (below).
// - A count: a JSON integer in [0, 2^63).
// - A vector of doubles: one JSON string of lower-case hex digits, 16 a value: its 8 bytes in
//   little-endian order, each as two digits (0x1p+0, 1.0, is "000000000000f03f").
// - A file's checksum (the "checksum" member of a checkpoint or part, chunks.hpp): "fnv1a64:"
//   and 16 lower-case hex digits, the FNV-1a 64 hash (Fowler, Noll and Vo; offset basis
//   0xcbf29ce484222325, prime 0x100000001b3) of the document's canonical text
//   (nlohmann-json's dump(): members sorted by name, no spaces) without its "checksum" member.
//   A change of any one byte of that text always changes it (each step of FNV-1a is a
//   bijection of the hash); it guards against damage and edits, not against someone who
//   recomputes it.
//
// The readers throw std::invalid_argument saying what is wrong with text that is not such a
// state (the driver prefixes the file and chunk).
//
// Values. A file may be edited and signed again (its checksum then holds), so every number read
// from a state is also checked against what it can be: its Domain (a weight in [0, 1], a JSD in
// [0, ln 2], a loss >= 0), declared by each state type next to the field it describes. The
// moments of n values (M2, M3, M4 the central sums, in any scale) must be those of some sample:
//   M2^2 / n <= M4 <= M2^2   (Jensen; a sum of squares is at most the square of the sum),
//   M3^2 <= M2 M4            (Cauchy-Schwarz),
// and of values in [lo, hi] with mean mu, d = max(hi - mu, mu - lo):
//   lo <= mu <= hi,  M2 <= n (hi - mu)(mu - lo) (Bhatia and Davis 2000),  |M3| <= d M2,
//   M4 <= d^2 M2;
// with extremes min < max among them, M2 >= (max - min)^2 / 2 (the two extremes alone). Each
// bound is allowed a relative 1e-6 for the rounding of push() and merge(), and the ends a
// relative 1e-9. The bounds between the sums are checked only where they can hold in double: a
// spread above 1e-6 of the values' size (below it the update formulas' rounded mean breaks
// them), sums above 1e-280 (below, terms underflow), and the lower bound on M4 not for a state
// with a scale (dividing by the scale may drop the smallest terms, moments.hpp).
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

#include "host/json.hpp"
#include "moments.hpp"

namespace attn {

// The values a quantity can take: [lo, hi] widened by `slack` (the rounding of the formula that
// computes it, e.g. a JSD summed from logarithms may fall 1e-17 below 0), and whether a
// non-finite value (NaN or +-inf: a run that diverged) may stand in its place.
struct Domain {
  const char* what = "a value";  // for messages: "a JSD"
  double lo = -std::numeric_limits<double>::infinity();
  double hi = std::numeric_limits<double>::infinity();
  double slack = 0;
  bool non_finite = false;

  bool holds(double v) const;
  // v when it holds, else std::invalid_argument: "a JSD of 5, outside [0, 0.693147]".
  double check(double v) const;
  std::string text() const;  // "[0, 0.693147]", "[0, inf)"
  // The same quantity below x (exclusive): a value counted as below a threshold.
  Domain below(double x) const;
};

// A double, and back.
nlohmann::json exact(double v);
double exact_double(const nlohmann::json& j);
// A double read back and checked against its domain.
double exact_double(const nlohmann::json& j, const Domain& d);

// Moments, and back (checked as above): of any finite values, or of values in a domain.
nlohmann::json exact(const Moments& m);
Moments exact_moments(const nlohmann::json& j);
Moments exact_moments(const nlohmann::json& j, const Domain& values);

// Throws std::invalid_argument when m cannot be the moments of values in [lo, hi] (the bounds
// above, with lo, hi the domain's or the sample's own extremes), or (extremes: lo and hi are
// the sample's min and max) when its spread is below what its extremes alone give.
void check_moments_within(const Moments& m, double lo, double hi, bool extremes);

// A count read back; `what` names it in the message.
std::int64_t exact_count(const nlohmann::json& j, const std::string& what);

// A vector of doubles as one hex string, and back: append_exact_vector appends the values of
// `hex` to out.
std::string exact_vector(const std::vector<double>& v);
void append_exact_vector(const std::string& hex, std::vector<double>& out);

// The checksum of a file demo writes: fnv1a64 of bytes, and content_checksum of a document
// ("fnv1a64:" and 16 hex digits; a "checksum" member of doc is no part of it). stoppable: for a
// file read back, a stop point every 64 MiB of its text (host/progress.hpp); a file being
// written (a checkpoint saved at Ctrl-C) takes none.
std::uint64_t fnv1a64(std::string_view bytes);
std::string content_checksum(const nlohmann::json& doc, bool stoppable = false);

}  // namespace attn
