// settings.cpp: see settings.hpp.
#include "host/settings.hpp"

#include <algorithm>
#include <cctype>
#include <stdexcept>
#include <utility>

namespace attn {
namespace param {

namespace {
Param make(std::string flag, std::string kind, std::string def, std::string help,
           std::function<Value(const std::string&, const std::string&)> parse) {
  Param p;
  p.flag = std::move(flag);
  p.kind = std::move(kind);
  p.help = std::move(help);
  p.default_text = std::move(def);
  p.parse = std::move(parse);
  return p;
}
}  // namespace

Param real(std::string flag, std::string def, std::string help, double lo, double hi,
           bool lo_open) {
  return make(std::move(flag), "X", std::move(def), std::move(help),
              [=](const std::string& f, const std::string& t) -> Value {
                return parse_real(f, t, lo, hi, lo_open);
              });
}
Param integer(std::string flag, std::string def, std::string help, std::int64_t lo,
              std::int64_t hi) {
  return make(
      std::move(flag), "N", std::move(def), std::move(help),
      [=](const std::string& f, const std::string& t) -> Value { return parse_int(f, t, lo, hi); });
}
// A list's value given twice (compared as values: 2 and 02 are one) is refused: it would make
// the same row twice.
template <class T>
void refuse_repeats(const std::string& f, const std::string& text, const std::vector<T>& values) {
  for (std::size_t i = 0; i < values.size(); ++i)
    for (std::size_t k = 0; k < i; ++k)
      if (values[k] == values[i]) {
        const auto items = split_list(text);
        throw std::invalid_argument(repeated_value(f, text, items[k], items[i]));
      }
}

Param int_list(std::string flag, std::string def, std::string help, std::int64_t lo,
               std::int64_t hi) {
  return make(std::move(flag), "LIST", std::move(def), std::move(help),
              [=](const std::string& f, const std::string& t) -> Value {
                const std::vector<std::int64_t> v = parse_int_list(f, t, lo, hi);
                refuse_repeats(f, t, v);
                return v;
              });
}
Param count(std::string flag, std::string def, std::string help) {
  return make(
      std::move(flag), "N", std::move(def), std::move(help),
      [](const std::string& f, const std::string& t) -> Value { return parse_count(f, t); });
}
Param count_up_to(std::string flag, std::string def, std::string help, std::uint64_t max) {
  return make(std::move(flag), "N", std::move(def), std::move(help),
              [=](const std::string& f, const std::string& t) -> Value {
                const std::uint64_t v = t == "0" ? 0 : parse_count(f, t);
                if (v > max)
                  throw std::invalid_argument(f + ": expected at most " + std::to_string(max) +
                                              ", got '" + t + "'");
                return v;
              });
}
Param u64(std::string flag, std::string def, std::string help) {
  return make(std::move(flag), "N", std::move(def), std::move(help),
              [](const std::string& f, const std::string& t) -> Value { return parse_u64(f, t); });
}
Param choice(std::string flag, std::string def, std::string help,
             std::vector<std::string> allowed) {
  const std::string kind = joined(allowed, "|");
  return make(std::move(flag), kind, std::move(def), std::move(help),
              [allowed = std::move(allowed)](const std::string& f, const std::string& t) -> Value {
                return parse_choice(f, t, allowed);
              });
}
Param names(std::string flag, std::string def, std::string help, std::vector<std::string> allowed) {
  return make(std::move(flag), "LIST", std::move(def), std::move(help),
              [allowed = std::move(allowed)](const std::string& f, const std::string& t) -> Value {
                const std::vector<std::string> v = parse_name_list(f, t, allowed);
                refuse_repeats(f, t, v);
                return v;
              });
}
Param seeds(std::string flag, std::string def, std::string help, std::uint64_t max_count,
            std::function<std::string(std::uint64_t n)> why) {
  return make(std::move(flag), "SEEDS", std::move(def), std::move(help),
              [=](const std::string& f, const std::string& t) -> Value {
                SeedSet s = parse_seed_set(f, t);
                if (s.size() > max_count)
                  throw std::invalid_argument(f + ": " + std::to_string(s.size()) + " seeds; " +
                                              why(s.size()));
                return s;
              });
}
Param output_file(std::string flag, std::string help, std::vector<std::string> extensions) {
  Param p = make(
      std::move(flag), "FILE", "", std::move(help),
      [extensions = std::move(extensions)](const std::string& f, const std::string& t) -> Value {
        if (t.empty()) throw std::invalid_argument(f + ": an empty file name");
        // The extension: the name's last '.' and what follows, none for ".name".
        const std::size_t slash = t.find_last_of('/');
        const std::string name = slash == std::string::npos ? t : t.substr(slash + 1);
        const std::size_t dot = name.rfind('.');
        if (dot == std::string::npos || dot == 0) return t;
        std::string ext = name.substr(dot);
        for (char& c : ext) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
        if (std::find(extensions.begin(), extensions.end(), ext) != extensions.end()) return t;
        throw std::invalid_argument(f + " " + t + ": unknown extension '" + name.substr(dot) +
                                    "' (it writes " + joined(extensions, " or ") + ")");
      });
  p.output_file = true;
  return p;
}

}  // namespace param

Settings Settings::parse(const std::vector<Param>& params,
                         const std::map<std::string, std::string>& given) {
  Settings s;
  for (const auto& [flag, text] : given) {
    bool declared = false;
    for (const Param& p : params) declared = declared || p.flag == flag;
    if (!declared) throw std::logic_error("setting " + flag + " is not declared");
  }
  for (const Param& p : params) {
    const auto it = given.find(p.flag);
    const std::string& text = it != given.end() ? it->second : p.default_text;
    if (it != given.end()) s.given_.insert(p.flag);
    s.texts_[p.flag] = text;
    // An output file that is off (not given) has no value to parse.
    s.values_[p.flag] =
        p.output_file && it == given.end() ? Value(std::string()) : p.parse(p.flag, text);
  }
  return s;
}

}  // namespace attn
