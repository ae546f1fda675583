// exact_state.hpp: the exact text of partial states. A bulk table's chunk states (chunks.hpp) are
// JSON: they travel between MPI ranks and are kept in --checkpoint files and --shard parts, so
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
//   moment finite and m2 >= 0; a scale a power of two above 1.
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
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "moments.hpp"

namespace attn {

// A double, and back.
nlohmann::json exact(double v);
double exact_double(const nlohmann::json& j);

// Moments, and back (checked as above).
nlohmann::json exact(const Moments& m);
Moments exact_moments(const nlohmann::json& j);

// A count read back; `what` names it in the message.
std::int64_t exact_count(const nlohmann::json& j, const std::string& what);

// A vector of doubles as one hex string, and back: append_exact_vector appends the values of
// `hex` to out.
std::string exact_vector(const std::vector<double>& v);
void append_exact_vector(const std::string& hex, std::vector<double>& out);

// The checksum of a file demo writes: fnv1a64 of bytes, and content_checksum of a document
// ("fnv1a64:" and 16 hex digits; a "checksum" member of doc is no part of it).
std::uint64_t fnv1a64(std::string_view bytes);
std::string content_checksum(const nlohmann::json& doc);

}  // namespace attn
