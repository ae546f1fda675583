// settings.hpp: what a table reads from the command line, declared once by the table itself.
//
// Each experiment lists its Params (flag, kind, help, default, parser). The command line
// (host/cli.cpp) registers every declared flag once, whichever tables declare it; for each chosen
// table it parses the given text, or that table's own default, with that table's parser, into
// the table's Settings. So a default lives in exactly one place (the declaration), the help text
// and the "has no effect here" warning come from the declarations, and cli.cpp knows no table.
//
// Errors: a parser throws std::invalid_argument with one line naming the flag and the value
// (host/parse.hpp); Settings::get on an undeclared flag or the wrong type is a programming
// error and throws std::logic_error.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <set>
#include <stdexcept>
#include <string>
#include <variant>
#include <vector>

#include "host/parse.hpp"

namespace attn {

// One parsed value. choice() gives std::string; names() std::vector<std::string>.
using Value = std::variant<double, std::int64_t, std::uint64_t, std::string,
                           std::vector<std::int64_t>, std::vector<std::string>, SeedSet>;

struct Param {
  std::string flag;          // "--d-k"
  std::string kind;          // what --help shows for the value: "LIST", "X", "N", "numpy|philox"
  std::string help;          // one line, without the default
  std::string default_text;  // parsed like user input; "" for an output file that is off
  std::function<Value(const std::string& flag, const std::string& text)> parse;
  bool output_file = false;  // a file the run writes: checked before any work, --force applies
  // The value of the flag given alone (`--causal` for `--causal on`); "" when it needs one.
  std::string implicit_value;
};

// Parameter constructors, one per kind of value (each checks what host/parse.hpp checks).
namespace param {
// A finite real in [lo, hi], or (lo, hi] when lo_open.
Param real(std::string flag, std::string def, std::string help, double lo, double hi, bool lo_open);
// An integer in [lo, hi].
Param integer(std::string flag, std::string def, std::string help, std::int64_t lo,
              std::int64_t hi);
// Comma-separated integers, each in [lo, hi].
Param int_list(std::string flag, std::string def, std::string help, std::int64_t lo,
               std::int64_t hi);
// A positive count, plain or in exponent form ("1e9"), at most 2^53.
Param count(std::string flag, std::string def, std::string help);
// A count from 0 to max, plain or in exponent form ("0", "1e6").
Param count_up_to(std::string flag, std::string def, std::string help, std::uint64_t max);
// A non-negative integer below 2^64 (a seed).
Param u64(std::string flag, std::string def, std::string help);
// One of `allowed`.
Param choice(std::string flag, std::string def, std::string help, std::vector<std::string> allowed);
// Comma-separated names, each one of `allowed`.
Param names(std::string flag, std::string def, std::string help, std::vector<std::string> allowed);
// Seeds: "A:B" or "0,1,7", at most max_count of them; a larger set of n is refused with
// "FLAG: n seeds; " + why(n) (what the table would need for them).
Param seeds(std::string flag, std::string def, std::string help, std::uint64_t max_count,
            std::function<std::string(std::uint64_t n)> why);
// A file the run writes (off unless given; an empty path is refused), in one of the formats its
// extension names: `extensions` (".csv", ".npy"; in any case), the first one also for a name
// without an extension. Another extension (rows.parquet, rows.csv.gz) is refused, naming the
// ones it takes: the file would not be what its name says.
Param output_file(std::string flag, std::string help, std::vector<std::string> extensions);
}  // namespace param

// One table's parsed values: every declared flag has one (given or default).
class Settings {
 public:
  // Parses `given` (flag -> text) over the declared defaults. Throws std::invalid_argument for
  // a bad value, std::logic_error for a flag that is not declared.
  static Settings parse(const std::vector<Param>& params,
                        const std::map<std::string, std::string>& given);

  template <class T>
  const T& get(const std::string& flag) const {
    const auto it = values_.find(flag);
    if (it == values_.end()) throw std::logic_error("setting " + flag + " is not declared");
    if (const T* v = std::get_if<T>(&it->second)) return *v;
    throw std::logic_error("setting " + flag + " read with the wrong type");
  }
  // Whether the user gave the flag (rather than the default applying).
  bool given(const std::string& flag) const { return given_.count(flag) != 0; }
  // The text the value came from (given or default), for provenance and messages.
  const std::string& text(const std::string& flag) const { return texts_.at(flag); }

 private:
  std::map<std::string, Value> values_;
  std::map<std::string, std::string> texts_;
  std::set<std::string> given_;
};

}  // namespace attn
