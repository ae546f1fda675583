// parse.hpp: strict parsing of the command line's values. Every function throws
// std::invalid_argument with a one-line message naming the option and the bad value.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace attn {

// The words of text between the separators, empty ones kept: "a,,b" gives "a", "", "b", and ""
// gives one empty word. Never throws.
std::vector<std::string> split_list(const std::string& text, char sep = ',');

// The words with sep between them (split_list's inverse).
std::string joined(const std::vector<std::string>& words, const char* sep);

// The refusal of a list's value given twice (it would run the same row twice): "OPTION TEXT:
// FIRST and AGAIN are one value given twice", or "OPTION TEXT: FIRST is given twice" when the
// two are spelled alike.
std::string repeated_value(const std::string& option, const std::string& text,
                           const std::string& first, const std::string& again);

// A positive whole number, written plainly or in exponent form: "10000", "1e9", "2.5e6".
// At most 2^53 (so that counts stay exact in double).
std::uint64_t parse_count(const std::string& option, const std::string& text);

// A non-negative integer below 2^64 ("0", "42"), or up to 2^53 as a count is written ("1e6").
std::uint64_t parse_u64(const std::string& option, const std::string& text);

// An integer in [lo, hi], written plainly or as --samples takes a count ("1e3", "1000.0").
std::int64_t parse_int(const std::string& option, const std::string& text, std::int64_t lo,
                       std::int64_t hi);

// A CPU thread count: 1 to 4 per core of this machine (more never helps, and thousands make
// libgomp abort when it cannot create them). The message states this machine's range.
int parse_threads(const std::string& option, const std::string& text);

// A finite real in (lo, hi] when lo_open, else [lo, hi].
double parse_real(const std::string& option, const std::string& text, double lo, double hi,
                  bool lo_open);

// Comma-separated integers, each in [lo, hi]; at least one.
std::vector<std::int64_t> parse_int_list(const std::string& option, const std::string& text,
                                         std::int64_t lo, std::int64_t hi);

// Seeds: "A:B" (A <= s < B, A < B) or a comma list "0,1,7" of distinct seeds (a repeated seed
// is refused: each seed is one run).
struct SeedSet {
  bool is_range = false;
  std::uint64_t first = 0, end = 0;  // the range
  std::vector<std::uint64_t> list;   // or the list
  std::uint64_t size() const { return is_range ? end - first : list.size(); }
  std::uint64_t at(std::uint64_t i) const { return is_range ? first + i : list[i]; }
  std::string text() const;  // as the user would write it
};
SeedSet parse_seed_set(const std::string& option, const std::string& text);

// Part I of N, written "I/N": N from 1 to 10^6, 0 <= I < N.
struct ShardPart {
  std::uint64_t index = 0, count = 0;
};
ShardPart parse_shard(const std::string& option, const std::string& text);

// Exactly one of `allowed`.
std::string parse_choice(const std::string& option, const std::string& text,
                         const std::vector<std::string>& allowed);

// Comma-separated names, each one of `allowed`.
std::vector<std::string> parse_name_list(const std::string& option, const std::string& text,
                                         const std::vector<std::string>& allowed);

}  // namespace attn
