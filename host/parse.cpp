// parse.cpp: see parse.hpp.
#include "host/parse.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <stdexcept>
#include <thread>

namespace attn {
namespace {

[[noreturn]] void bad(const std::string& option, const std::string& text, const std::string& want,
                      const std::string& hint = "") {
  throw std::invalid_argument(option + ": expected " + want + ", got '" + text + "'" + hint);
}

}  // namespace

std::string joined(const std::vector<std::string>& words, const char* sep) {
  std::string s;
  for (std::size_t i = 0; i < words.size(); ++i) s += (i ? sep : "") + words[i];
  return s;
}

std::string repeated_value(const std::string& option, const std::string& text,
                           const std::string& first, const std::string& again) {
  return option + " " + text + ": " +
         (first == again ? first + " is given twice"
                         : first + " and " + again + " are one value given twice");
}

std::vector<std::string> split_list(const std::string& text, char sep) {
  std::vector<std::string> parts(1);
  for (char c : text) {
    if (c == sep)
      parts.emplace_back();
    else
      parts.back() += c;
  }
  return parts;
}

namespace {

// The whole number text writes exactly, plainly or in exponent form: digits [. digits]
// [e [+] digits]; "1e9" and "2.5e6" are whole numbers, "1.5" and "1.0000000000000001" are not
// (no rounding through a double).
struct Whole {
  enum { kNotWhole, kBeyond, kExact } kind = kNotWhole;  // kBeyond: above 2^64 - 1
  std::uint64_t value = 0;
};
Whole exact_whole(const std::string& text) {
  std::size_t i = 0;
  std::string digits;
  int fraction = 0;
  while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]))) digits += text[i++];
  if (i < text.size() && text[i] == '.') {
    ++i;
    while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]))) {
      digits += text[i++];
      ++fraction;
    }
  }
  int exponent = 0;
  if (i < text.size() && (text[i] == 'e' || text[i] == 'E')) {
    ++i;
    if (i < text.size() && text[i] == '+') ++i;
    const std::size_t start = i;
    while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i])) && i - start < 4)
      exponent = exponent * 10 + (text[i++] - '0');
    if (i == start) return {};
  }
  if (digits.empty() || i != text.size()) return {};
  int shift = exponent - fraction;
  while (shift < 0) {  // digits past the decimal point must be zeros
    if (digits.back() != '0') return {};
    digits.pop_back();
    ++shift;
    if (digits.empty()) digits = "0";
  }
  digits.erase(0, std::min(digits.find_first_not_of('0'), digits.size() - 1));
  if (digits != "0" && digits.size() + static_cast<std::size_t>(shift) > 20)
    return {Whole::kBeyond};
  if (digits != "0") digits.append(static_cast<std::size_t>(shift), '0');
  Whole w{Whole::kExact};
  const auto r = std::from_chars(digits.data(), digits.data() + digits.size(), w.value);
  if (r.ec != std::errc()) return {Whole::kBeyond};
  return w;
}

}  // namespace

std::uint64_t parse_count(const std::string& option, const std::string& text) {
  const std::string want = "a positive whole number such as 10000 or 1e9";
  const Whole w = exact_whole(text);
  if (w.kind == Whole::kBeyond || (w.kind == Whole::kExact && w.value > (std::uint64_t{1} << 53)))
    bad(option, text, "at most 2^53 (about 9e15)");
  if (w.kind != Whole::kExact || w.value < 1) bad(option, text, want);
  return w.value;
}

std::uint64_t parse_u64(const std::string& option, const std::string& text) {
  std::uint64_t v = 0;
  const char* end = text.data() + text.size();
  const auto r = std::from_chars(text.data(), end, v);
  if (!text.empty() && r.ec == std::errc() && r.ptr == end) return v;
  // As a count is written ("1e6", "1000.0"): the same whole number.
  const Whole w = exact_whole(text);
  if (w.kind != Whole::kExact) bad(option, text, "a whole number from 0 to 18446744073709551615");
  return w.value;
}

std::int64_t parse_int(const std::string& option, const std::string& text, std::int64_t lo,
                       std::int64_t hi) {
  std::int64_t v = 0;
  const char* end = text.data() + text.size();
  const auto r = std::from_chars(text.data(), end, v);
  const std::string want =
      "a whole number from " + std::to_string(lo) + " to " + std::to_string(hi);
  if (text.empty() || r.ec != std::errc() || r.ptr != end) {
    // Written as --samples takes it ("1e3", "1000.0"): the same whole number.
    const Whole w = exact_whole(text);
    if (w.kind != Whole::kExact || w.value > std::uint64_t(hi) || hi < 0) bad(option, text, want);
    v = static_cast<std::int64_t>(w.value);
  }
  if (v < lo || v > hi) bad(option, text, want);
  return v;
}

int parse_threads(const std::string& option, const std::string& text) {
  const std::int64_t cores = std::max(1u, std::thread::hardware_concurrency());
  std::int64_t v = 0;
  const char* end = text.data() + text.size();
  const auto r = std::from_chars(text.data(), end, v);
  if (text.empty() || r.ec != std::errc() || r.ptr != end) {  // "1e0", "2.0"
    const Whole w = exact_whole(text);
    v = w.kind == Whole::kExact && w.value <= std::uint64_t(4 * cores)
            ? static_cast<std::int64_t>(w.value)
            : -1;
  }
  if (v < 1 || v > 4 * cores)
    bad(option, text,
        "a whole number from 1 to " + std::to_string(4 * cores) +
            " (at most 4 per core; this machine has " + std::to_string(cores) + ")");
  return static_cast<int>(v);
}

double parse_real(const std::string& option, const std::string& text, double lo, double hi,
                  bool lo_open) {
  double v = 0;
  const char* end = text.data() + text.size();
  const auto r = std::from_chars(text.data(), end, v);
  char range[96];
  std::snprintf(range, sizeof range, "a finite number %s %g and <= %g", lo_open ? ">" : ">=", lo,
                hi);
  if (text.empty() || r.ec != std::errc() || r.ptr != end || !std::isfinite(v) || v > hi ||
      (lo_open ? v <= lo : v < lo))
    bad(option, text, range);
  return v;
}

std::vector<std::int64_t> parse_int_list(const std::string& option, const std::string& text,
                                         std::int64_t lo, std::int64_t hi) {
  std::vector<std::int64_t> out;
  for (const std::string& part : split_list(text)) out.push_back(parse_int(option, part, lo, hi));
  return out;
}

ShardPart parse_shard(const std::string& option, const std::string& text) {
  const auto slash = text.find('/');
  if (slash == std::string::npos)
    throw std::invalid_argument(option + " " + text + ": expected I/N, e.g. 0/3");
  ShardPart s;
  try {
    s.count = static_cast<std::uint64_t>(parse_int(option, text.substr(slash + 1), 1, 1000000));
    s.index = static_cast<std::uint64_t>(
        parse_int(option, text.substr(0, slash), 0, static_cast<std::int64_t>(s.count) - 1));
  } catch (const std::invalid_argument&) {  // named whole: "got 'b'" alone hides the rest
    throw std::invalid_argument(option + " " + text +
                                ": expected I/N, N parts from 1 to 1000000 and the part I from 0 "
                                "to N-1, e.g. 0/3");
  }
  return s;
}

std::string SeedSet::text() const {
  if (is_range) return std::to_string(first) + ":" + std::to_string(end);
  std::string s;
  for (std::size_t i = 0; i < list.size(); ++i) s += (i ? "," : "") + std::to_string(list[i]);
  return s;
}

SeedSet parse_seed_set(const std::string& option, const std::string& text) {
  SeedSet s;
  const auto colon = text.find(':');
  if (colon != std::string::npos) {
    s.is_range = true;
    s.first = parse_u64(option, text.substr(0, colon));
    s.end = parse_u64(option, text.substr(colon + 1));
    if (s.end <= s.first) bad(option, text, "a range A:B with A < B (seeds A .. B-1)");
    return s;
  }
  for (const std::string& part : split_list(text)) s.list.push_back(parse_u64(option, part));
  // A seed is one run: given twice, it would count twice in a sweep's statistics.
  std::vector<std::uint64_t> sorted = s.list;
  std::sort(sorted.begin(), sorted.end());
  const auto twice = std::adjacent_find(sorted.begin(), sorted.end());
  if (twice != sorted.end())
    throw std::invalid_argument(option + ": seed " + std::to_string(*twice) +
                                " is given twice in '" + text +
                                "' (each seed is one run; give it once)");
  return s;
}

namespace {

// Levenshtein distance (insertions, deletions, substitutions), for "did you mean".
std::size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diagonal = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = up;
    }
  }
  return row[b.size()];
}

// " (did you mean NAME?)" for the allowed name nearest to text, when it is near: at most a third
// of its letters to change.
std::string nearest(const std::string& text, const std::vector<std::string>& allowed) {
  std::string best;
  std::size_t best_d = std::string::npos;
  for (const auto& a : allowed) {
    const std::size_t d = edit_distance(text, a);
    if (d < best_d) best_d = d, best = a;
  }
  if (best.empty() || best_d == 0 || best_d > std::max<std::size_t>(1, best.size() / 3)) return "";
  return " (did you mean " + best + "?)";
}

}  // namespace

std::string parse_choice(const std::string& option, const std::string& text,
                         const std::vector<std::string>& allowed) {
  for (const auto& a : allowed)
    if (text == a) return text;
  std::string choices;
  for (const auto& a : allowed) choices += (choices.empty() ? "" : ", ") + a;
  bad(option, text, "one of " + choices, nearest(text, allowed));
}

std::vector<std::string> parse_name_list(const std::string& option, const std::string& text,
                                         const std::vector<std::string>& allowed) {
  std::vector<std::string> out;
  std::string choices;
  for (const auto& a : allowed) choices += (choices.empty() ? "" : ", ") + a;
  for (const std::string& part : split_list(text)) {
    if (part.empty() && !text.empty())
      throw std::invalid_argument(option + " " + text +
                                  ": an empty item (two commas, or one at "
                                  "an end); expected one or more of " +
                                  choices);
    bool ok = false;
    for (const auto& a : allowed) ok = ok || part == a;
    if (!ok) bad(option, part, "one or more of " + choices, nearest(part, allowed));
    out.push_back(part);
  }
  return out;
}

}  // namespace attn
