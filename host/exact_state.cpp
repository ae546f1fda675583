// exact_state.cpp: see exact_state.hpp.
#include "host/exact_state.hpp"

#include <algorithm>
#include <cctype>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <ostream>
#include <stdexcept>
#include <streambuf>

#include "host/format.hpp"
#include "host/input.hpp"
#include "host/progress.hpp"

namespace attn {

using json = nlohmann::json;

bool Domain::holds(double v) const {
  if (!std::isfinite(v)) return non_finite;
  return v >= lo - slack && v <= hi + slack;
}

double Domain::check(double v) const {
  if (!holds(v))
    throw std::invalid_argument(std::string(what) + " of " + human_number(v) + ", outside " +
                                text() + (non_finite ? " (or not finite)" : ""));
  return v;
}

std::string Domain::text() const {
  return (std::isfinite(lo) ? "[" + human_number(lo) : std::string("(-inf")) + ", " +
         (std::isfinite(hi) ? human_number(hi) + "]" : std::string("inf)"));
}

Domain Domain::below(double x) const {
  Domain d = *this;
  d.hi = std::nextafter(x, -INFINITY);
  d.slack = 0;
  return d;
}

json exact(double v) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%a", v);
  return std::string(buf);
}

double exact_double(const json& j) {
  if (!j.is_string()) throw std::invalid_argument("a number is not in exact text");
  const std::string& s = j.get_ref<const std::string&>();
  char* end = nullptr;
  const double v = std::strtod(s.c_str(), &end);
  // strtod skips leading white space; the exact text has none.
  if (s.empty() || std::isspace(static_cast<unsigned char>(s[0])) || end != s.c_str() + s.size())
    throw std::invalid_argument("'" + quote_input(s, 24) + "' is not a number in exact text");
  return v;
}

double exact_double(const json& j, const Domain& d) { return d.check(exact_double(j)); }

// The scale (moments.hpp) is written only when it is not 1, so that states of ordinary values
// read and write as before it existed.
json exact(const Moments& m) {
  json j = json::array({exact(m.n), exact(m.mean), exact(m.m2), exact(m.m3), exact(m.m4)});
  if (m.scale != 1) j.push_back(exact(m.scale));
  return j;
}

Moments exact_moments(const json& j) {
  if (!j.is_array() || (j.size() != 5 && j.size() != 6))
    throw std::invalid_argument("moments are not 5 numbers (n, mean, m2, m3, m4) or 6 (a scale)");
  Moments m;
  m.n = exact_double(j.at(0));
  m.mean = exact_double(j.at(1));
  m.m2 = exact_double(j.at(2));
  m.m3 = exact_double(j.at(3));
  m.m4 = exact_double(j.at(4));
  if (j.size() == 6) {
    // A power of two above 1 (moments.hpp): written only when the sums needed it.
    m.scale = exact_double(j.at(5));
    int exponent = 0;
    if (!(std::isfinite(m.scale) && m.scale > 1 && std::frexp(m.scale, &exponent) == 0.5))
      throw std::invalid_argument("moments with a scale that is not a power of two above 1");
  }
  // What push() and merge() can leave: a whole count; nothing but zeros for no values or for the
  // spread of one; finite moments of finite values, and m2 a sum of squares.
  if (!(m.n >= 0 && m.n <= 0x1p53 && m.n == std::floor(m.n)))
    throw std::invalid_argument("moments of n = " + exact(m.n).get<std::string>() +
                                " values: not a count");
  if (m.n == 0 && (m.mean != 0 || m.m2 != 0 || m.m3 != 0 || m.m4 != 0))
    throw std::invalid_argument("moments of no values that are not zero");
  if (!std::isfinite(m.mean) || !std::isfinite(m.m2) || !std::isfinite(m.m3) ||
      !std::isfinite(m.m4))
    throw std::invalid_argument("moments of " + std::to_string(static_cast<std::uint64_t>(m.n)) +
                                " finite values that are not finite (NaN or infinity)");
  if (m.m2 < 0) throw std::invalid_argument("moments with a negative sum of squares (m2)");
  if (m.n == 1 && (m.m2 != 0 || m.m3 != 0 || m.m4 != 0))
    throw std::invalid_argument("moments of one value with a spread");
  check_moments_within(m, -INFINITY, INFINITY, false);
  return m;
}

Moments exact_moments(const json& j, const Domain& values) {
  const Moments m = exact_moments(j);
  if (m.n > 0 && !values.holds(m.mean))
    throw std::invalid_argument("moments whose mean is " + std::string(values.what) + " of " +
                                human_number(m.mean) + ", outside " + values.text());
  check_moments_within(m, values.lo - values.slack, values.hi + values.slack, false);
  return m;
}

void check_moments_within(const Moments& m, double lo, double hi, bool extremes) {
  if (m.n < 2) return;  // none or one value: exact_moments checked that nothing spreads
  // In long double: the sums in the values' units (times the scale's powers) stay in range.
  using L = long double;
  constexpr L kTol = 1e-6L;
  const L n = m.n, s = m.scale, mu = m.mean;
  const L m2 = L(m.m2) * s * s, m3 = L(m.m3) * s * s * s, m4 = L(m.m4) * s * s * s * s;
  const auto fail = [&](const std::string& why) {
    throw std::invalid_argument("moments of " + std::to_string(static_cast<std::uint64_t>(m.n)) +
                                " values " + why);
  };
  const auto range = [&] { return "[" + human_number(lo) + ", " + human_number(hi) + "]"; };
  // The size of the values, and the rounding of a deviation from their mean: a sample whose
  // spread is near that rounding has sums that no longer obey the bounds between them (the
  // update formulas assume an exact mean), so those are checked only above it.
  L size = std::fabs(mu);
  if (std::isfinite(lo)) size = std::max(size, L(std::fabs(lo)));
  if (std::isfinite(hi)) size = std::max(size, L(std::fabs(hi)));
  const L rounding = 1e-9L * size;
  const bool spread = m2 / n > (1e3L * rounding) * (1e3L * rounding);
  // Sums near the bottom of the double range have lost terms to underflow (a fourth power of
  // 1e-80 is 0, a square of 1e-161 subnormal): the bounds between them hold only above it.
  constexpr L kTiny = 1e-280L;
  const bool in_range = m2 / n > kTiny && m2 * m2 / n > kTiny;
  if (spread && in_range) {
    if (m4 > m2 * m2 * (1 + kTol) || (m.scale == 1 && n * m4 < m2 * m2 * (1 - kTol)))
      fail("whose fourth central sum M4 = " + human_number(double(m4)) +
           " is outside [M2^2 / n, M2^2] = [" + human_number(double(m2 * m2 / n)) + ", " +
           human_number(double(m2 * m2)) + "]: no sample has it");
    if (m3 * m3 > m2 * m4 * (1 + kTol))
      fail("whose third central sum M3 exceeds sqrt(M2 M4): no sample has it");
  }
  if (!std::isfinite(lo) || !std::isfinite(hi)) return;
  // Deviations from the mean within [lo - mu, hi - mu], each end widened by the rounding.
  const L above = L(hi) - mu + rounding, below = mu - L(lo) + rounding;
  if (above < 0 || below < 0)
    fail("whose mean " + human_number(m.mean) + " lies outside " + range());
  if (!in_range) return;
  const L d = std::max(above, below);
  if (m2 > n * above * below * (1 + kTol))
    fail("in " + range() + " with a spread M2 larger than such values can have");
  if (std::fabs(m3) > d * m2 * (1 + kTol) || m4 > d * d * m2 * (1 + kTol))
    fail("in " + range() + " with third or fourth moments larger than such values can have");
  const L width = L(hi) - L(lo) - 2 * rounding;
  if (extremes && spread && width > 0 && m2 < width * width / 2 * (1 - kTol))
    fail("with min " + human_number(lo) + " and max " + human_number(hi) +
         " and a spread M2 smaller than those two alone give");
}

std::int64_t exact_count(const json& j, const std::string& what) {
  if (j.is_number_unsigned() && j.get<std::uint64_t>() <= std::uint64_t{INT64_MAX})
    return j.get<std::int64_t>();
  if (j.is_number_integer() && !j.is_number_unsigned() && j.get<std::int64_t>() >= 0)
    return j.get<std::int64_t>();
  throw std::invalid_argument(what + " " + quote_input(j.dump(), 24) + " is not a count");
}

std::string exact_vector(const std::vector<double>& v) {
  static const char* hex = "0123456789abcdef";
  std::string s(v.size() * 16, '0');
  for (std::size_t i = 0; i < v.size(); ++i) {
    std::uint64_t b;
    std::memcpy(&b, &v[i], 8);
    for (int k = 0; k < 8; ++k) {  // little-endian bytes, each as two hex digits
      const unsigned byte = (b >> (8 * k)) & 0xff;
      s[i * 16 + 2 * k] = hex[byte >> 4];
      s[i * 16 + 2 * k + 1] = hex[byte & 15];
    }
  }
  return s;
}

void append_exact_vector(const std::string& hex, std::vector<double>& out) {
  if (hex.size() % 16 != 0)
    throw std::invalid_argument("a vector of " + std::to_string(hex.size()) +
                                " hex digits, not a multiple of 16 (8 bytes a value)");
  const auto digit = [](char c) -> unsigned {
    if (c >= '0' && c <= '9') return static_cast<unsigned>(c - '0');
    if (c >= 'a' && c <= 'f') return static_cast<unsigned>(c - 'a' + 10);
    throw std::invalid_argument("a vector holds a character that is not a hex digit");
  };
  for (std::size_t i = 0; i < hex.size(); i += 16) {
    if ((i & ((std::size_t(16) << 20) - 1)) == 0 && i > 0) stop_point();  // every 2^20 values
    std::uint64_t b = 0;
    for (int k = 0; k < 8; ++k)
      b |= static_cast<std::uint64_t>(digit(hex[i + 2 * k]) << 4 | digit(hex[i + 2 * k + 1]))
           << (8 * k);
    double d;
    std::memcpy(&d, &b, 8);
    out.push_back(d);
  }
}

std::uint64_t fnv1a64(std::string_view bytes) {
  std::uint64_t h = 0xcbf29ce484222325ULL;
  for (const char c : bytes) {
    h ^= static_cast<unsigned char>(c);
    h *= 0x100000001b3ULL;
  }
  return h;
}

std::string content_checksum(const json& doc, bool stoppable) {
  if (doc.is_object() && doc.contains("checksum")) {  // the content is the rest
    json rest = doc;
    rest.erase("checksum");
    return content_checksum(rest, stoppable);
  }
  // The hash of doc.dump(), taken as the text is made (a document of gigabytes is not copied
  // into one string), with a stop point every 64 MiB of it.
  struct Hash : std::streambuf {
    std::uint64_t h = 0xcbf29ce484222325ULL;
    std::optional<StopMeter> stops;
    void add(const char* s, std::size_t n) {
      for (std::size_t i = 0; i < n; ++i) {
        h ^= static_cast<unsigned char>(s[i]);
        h *= 0x100000001b3ULL;
      }
      if (stops) stops->add(double(n));
    }
    int_type overflow(int_type c) override {
      if (c != traits_type::eof()) {
        const char ch = traits_type::to_char_type(c);
        add(&ch, 1);
      }
      return traits_type::not_eof(c);
    }
    std::streamsize xsputn(const char* s, std::streamsize n) override {
      add(s, static_cast<std::size_t>(n));
      return n;
    }
  } hash;
  if (stoppable) hash.stops.emplace("checking a checksum", "bytes", double(64 << 20));
  std::ostream out(&hash);
  out.exceptions(std::ios::badbit);  // a stop (Interrupted) inside is rethrown as it is
  out << doc;                        // width 0: dump() without indentation
  char buf[32];
  std::snprintf(buf, sizeof buf, "fnv1a64:%016" PRIx64, hash.h);
  return buf;
}

}  // namespace attn
