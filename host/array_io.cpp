// array_io.cpp: see array_io.hpp.
#include "host/array_io.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <bit>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <sstream>
#include <stdexcept>
#include <string_view>
#include <xtensor/xnpy.hpp>

#include "host/format.hpp"
#include "host/input.hpp"
#include "host/json.hpp"
#include "host/parse.hpp"
#include "host/progress.hpp"

namespace attn {
namespace {

[[noreturn]] void fail(const std::string& label, const std::string& path, const std::string& why) {
  throw std::runtime_error(label + " " + path + ": " + why);
}

std::string read_file(const std::string& label, const std::string& path, std::size_t max_bytes) {
  try {
    return read_regular_file(path, max_bytes);  // a FIFO or directory refused without waiting
  } catch (const Interrupted&) {
    throw;
  } catch (const std::runtime_error& e) {
    fail(label, path, e.what());
  }
}

// The product of the dimensions, or false when it overflows size_t.
bool checked_size(const std::vector<std::size_t>& shape, std::size_t word, std::size_t& bytes) {
  std::size_t n = word;
  for (std::size_t d : shape)
    if (__builtin_mul_overflow(n, d, &n)) return false;
  bytes = n;
  return true;
}

std::string dtype_name(const std::string& descr) {
  static const std::pair<const char*, const char*> names[] = {
      {"f2", "float16"}, {"f4", "float32"},   {"f8", "float64"},    {"f16", "float128"},
      {"i1", "int8"},    {"i2", "int16"},     {"i4", "int32"},      {"i8", "int64"},
      {"u1", "uint8"},   {"u2", "uint16"},    {"u4", "uint32"},     {"u8", "uint64"},
      {"b1", "bool"},    {"c8", "complex64"}, {"c16", "complex128"}};
  const std::string code = descr.size() > 1 ? descr.substr(1) : descr;
  for (const auto& [c, name] : names)
    if (code == c) return name;
  return "'" + quote_input(descr) + "'";
}

// path's extension in lower case (".NPY" is ".npy", as --per-seed's are read in any case).
std::string extension_of(const std::string& path) {
  std::string ext = std::filesystem::path(path).extension().string();
  for (char& c : ext) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return ext;
}

// descr with numpy's byte-order marks read as numpy reads them on this (little-endian) machine:
// '=' is the machine's order and '|' "not applicable", so both are '<' on a type of several
// bytes ('=f8', '|f8': float64); a one-byte type takes '|' whatever its mark ('<u1': uint8).
std::string native_order(std::string descr) {
  static_assert(std::endian::native == std::endian::little, "demo reads .npy data in place");
  if (descr.size() < 3 || std::string_view("<>=|").find(descr[0]) == std::string_view::npos)
    return descr;
  if (descr.substr(2) == "1")
    descr[0] = '|';
  else if (descr[0] == '=' || descr[0] == '|')
    descr[0] = '<';
  return descr;
}

// The parts of a .npy file's header, checked: magic, version, header length, the header's
// dtype, order and shape.
struct NpyHeader {
  std::string descr;
  bool fortran = false;
  std::vector<std::size_t> shape;
  std::size_t data_at = 0;  // the data's first byte
};

// The header's dictionary, read as the Python literal numpy's format defines (numpy's
// lib/format.py reads it with ast.literal_eval): {KEY: VALUE, ...} with the keys 'descr' (a
// string), 'fortran_order' (True or False) and 'shape' (a tuple of whole numbers: "()",
// "(5,)", "(3, 2)"), each once, in any order, strings in single or double quotes, a trailing
// comma allowed, then spaces and a newline. Anything else is refused naming what: a shape
// entry that is not a whole number ("(5, five)"), a sign, a one-element tuple without its comma
// ("(5)" is 5, not a tuple), a structured dtype (a list), an unknown or repeated key.
class NpyDictReader {
 public:
  NpyDictReader(const std::string& text, NpyHeader& h) : t_(text), h_(h) {}
  // Throws std::invalid_argument saying what is malformed.
  void read() {
    bool descr = false, order = false, shape = false;
    expect('{', "the header is not a dictionary ({...})");
    for (;;) {
      space();
      if (peek() == '}') break;
      const std::string key = string_literal("a key");
      space();
      expect(':', "no ':' after '" + key + "'");
      space();
      if (key == "descr") {
        once(descr, key);
        if (peek() == '[')
          fail("dtype " + quote_input(rest(), 40) + " is a structured dtype (refused)");
        h_.descr = native_order(string_literal("descr's value"));
      } else if (key == "fortran_order") {
        once(order, key);
        h_.fortran = boolean();
      } else if (key == "shape") {
        once(shape, key);
        h_.shape = tuple();
      } else {
        fail("an unknown key '" + quote_input(key) + "'");
      }
      space();
      if (peek() == ',') {
        ++at_;
        continue;
      }
      if (peek() != '}') fail("no ',' or '}' after '" + key + "'");
    }
    ++at_;
    while (at_ < t_.size() && (t_[at_] == ' ' || t_[at_] == '\n' || t_[at_] == '\t')) ++at_;
    if (at_ != t_.size()) fail("text after the dictionary");
    if (!descr) fail("no 'descr'");
    if (!order) fail("no 'fortran_order'");
    if (!shape) fail("no 'shape'");
  }

 private:
  [[noreturn]] void fail(const std::string& why) { throw std::invalid_argument(why); }
  char peek() const { return at_ < t_.size() ? t_[at_] : '\0'; }
  std::string rest() const { return t_.substr(at_); }
  void space() {
    while (at_ < t_.size() && (t_[at_] == ' ' || t_[at_] == '\t')) ++at_;
  }
  void expect(char c, const std::string& why) {
    if (peek() != c) fail(why);
    ++at_;
  }
  void once(bool& seen, const std::string& key) {
    if (seen) fail("'" + key + "' twice");
    seen = true;
  }
  std::string string_literal(const std::string& what) {
    const char q = peek();
    if (q != '\'' && q != '"') fail(what + " is not a string: " + quote_input(rest(), 20));
    const std::size_t end = t_.find(q, at_ + 1);
    if (end == std::string::npos) fail(what + ": a string without its closing quote");
    std::string v = t_.substr(at_ + 1, end - at_ - 1);
    if (v.find('\\') != std::string::npos) fail(what + ": an escape in a string (refused)");
    at_ = end + 1;
    return v;
  }
  bool boolean() {
    for (const auto& [word, value] :
         {std::pair<const char*, bool>{"True", true}, {"False", false}}) {
      const std::size_t n = std::strlen(word);
      if (t_.compare(at_, n, word) == 0 &&
          !std::isalnum(static_cast<unsigned char>(at_ + n < t_.size() ? t_[at_ + n] : ' '))) {
        at_ += n;
        return value;
      }
    }
    fail("fortran_order is " + quote_input(rest(), 20) + ", not True or False");
  }
  // A tuple of whole numbers, as written: "(5, five)" is refused naming "five".
  std::vector<std::size_t> tuple() {
    const std::size_t from = at_;
    const std::size_t end = t_.find(')', at_);
    if (peek() != '(' || end == std::string::npos)
      fail("shape " + quote_input(rest(), 30) + " is not a tuple (...)");
    const std::string text = t_.substr(from, end - from + 1);
    const std::string inner = t_.substr(from + 1, end - from - 1);
    at_ = end + 1;
    std::vector<std::size_t> shape;
    const std::vector<std::string> items = split_list(inner);
    const auto trimmed = [](std::string v) {
      while (!v.empty() && (v.front() == ' ' || v.front() == '\t')) v.erase(v.begin());
      while (!v.empty() && (v.back() == ' ' || v.back() == '\t')) v.pop_back();
      return v;
    };
    if (trimmed(inner).empty()) return shape;  // ()
    for (std::size_t i = 0; i < items.size(); ++i) {
      const std::string item = trimmed(items[i]);
      if (item.empty() && i + 1 == items.size() && i > 0) break;  // "(5,)": the trailing comma
      if (!item.empty() && item[0] == '-')
        fail("shape " + quote_input(text) + " has a negative dimension");
      std::size_t v = 0;
      const auto r = std::from_chars(item.data(), item.data() + item.size(), v);
      if (item.empty() || r.ec == std::errc::invalid_argument || r.ptr != item.data() + item.size())
        fail("shape " + quote_input(text) + ": entry " + std::to_string(i) + " '" +
             quote_input(item) + "' is not a whole number");
      if (r.ec == std::errc::result_out_of_range)
        fail("shape " + quote_input(text) + ": entry " + std::to_string(i) + " is too large");
      if (item.size() > 1 && item[0] == '0')
        fail("shape " + quote_input(text) + ": entry " + std::to_string(i) + " '" +
             quote_input(item) + "' has a leading zero (not a Python integer)");
      shape.push_back(v);
    }
    if (shape.size() == 1 && trimmed(items.back()) != "")
      fail("shape " + quote_input(text) + " is a number, not a tuple (one axis is written (n,))");
    return shape;
  }

  const std::string& t_;
  NpyHeader& h_;
  std::size_t at_ = 0;
};

NpyHeader npy_header_of(const std::string& label, const std::string& path,
                        const std::string& bytes) {
  // Preamble: "\x93NUMPY", major, minor, header length (2 bytes in 1.0, 4 in 2.0 and 3.0).
  // 3.0 is 2.0 with a UTF-8 header (1.0 and 2.0: latin-1); the dictionary is ASCII in both.
  static const std::string magic = "\x93NUMPY";
  if (bytes.size() < 10 || bytes.compare(0, 6, magic) != 0)
    fail(label, path, "not a .npy file (no \\x93NUMPY magic at its start)");
  const unsigned major = static_cast<unsigned char>(bytes[6]);
  const unsigned minor = static_cast<unsigned char>(bytes[7]);
  if (major < 1 || major > 3 || minor != 0)
    fail(label, path,
         "unsupported .npy format version " + std::to_string(major) + "." + std::to_string(minor) +
             " (1.0, 2.0 and 3.0 are read)");
  const std::size_t len_bytes = major == 1 ? 2 : 4;
  if (bytes.size() < 8 + len_bytes) fail(label, path, "truncated .npy header");
  std::size_t header_len = 0;
  for (std::size_t i = 0; i < len_bytes; ++i)
    header_len |= std::size_t(static_cast<unsigned char>(bytes[8 + i])) << (8 * i);
  NpyHeader h;
  h.data_at = 8 + len_bytes + header_len;
  if (bytes.size() < h.data_at) fail(label, path, "truncated .npy header");
  const std::string header = bytes.substr(8 + len_bytes, header_len);
  if (header.empty() || header.back() != '\n')
    fail(label, path, "malformed .npy header (it does not end in a newline)");
  try {
    NpyDictReader(header, h).read();
  } catch (const std::invalid_argument& e) {
    fail(label, path, std::string("malformed .npy header: ") + e.what());
  }
  return h;
}

std::string fortran_to_c(const std::string& label, const std::string& path, const std::string& data,
                         const std::vector<std::size_t>& shape, std::size_t word);

// The data after the header holds exactly the shape's elements of `word` bytes.
void check_npy_size(const std::string& label, const std::string& path, const std::string& bytes,
                    const NpyHeader& h, std::size_t word) {
  std::size_t want = 0;
  if (!checked_size(h.shape, word, want))
    fail(label, path, "shape " + shape_text(h.shape) + " is too large");
  const std::size_t have = bytes.size() - h.data_at;
  if (have < want)
    fail(label, path,
         "truncated .npy: shape " + shape_text(h.shape) + " needs " + std::to_string(want) +
             " bytes of data, the file has " + std::to_string(have));
  if (have > want)
    fail(label, path,
         "malformed .npy: " + std::to_string(have - want) + " bytes after the data of shape " +
             shape_text(h.shape));
}

Array load_npy(const std::string& label, const std::string& path, const std::string& bytes) {
  const NpyHeader h = npy_header_of(label, path, bytes);
  const std::string& descr = h.descr;
  const bool fortran = h.fortran;
  const std::vector<std::size_t>& shape = h.shape;
  const std::string name = dtype_name(descr);
  if (descr != "<f4" && descr != "<f8") {
    if (descr.size() > 1 && descr[0] == '>')
      fail(label, path,
           "big-endian " + dtype_name(descr) +
               " is refused (little-endian float32 or float64 only; numpy: "
               "a.astype('<f8'))");
    fail(label, path,
         "dtype " + name + " is refused (float32 or float64 only; numpy: a.astype(np.float64))");
  }
  const std::size_t word = descr == "<f4" ? 4 : 8;
  check_npy_size(label, path, bytes, h, word);
  if (fortran && shape.size() > 1)
    spdlog::info("{} {}: Fortran order, converted to C order", label, path);
  Array a;
  a.shape = shape;
  a.float32 = word == 4;
  // The data, in C order (Fortran order reordered), as doubles (float32 is exact in double).
  const std::string data = fortran && shape.size() > 1
                               ? fortran_to_c(label, path, bytes.substr(h.data_at), shape, word)
                               : bytes.substr(h.data_at);
  const std::size_t count = data.size() / word;
  a.data.resize(count);
  StopMeter stops("converting " + label + " " + path, "values", double(1 << 22));
  constexpr std::size_t kBlock = std::size_t(1) << 16;
  for (std::size_t at = 0; at < count; at += kBlock) {
    const std::size_t n = std::min(kBlock, count - at);
    stops.add(double(n));
    for (std::size_t i = at; i < at + n; ++i) {
      if (a.float32) {
        float f;
        std::memcpy(&f, data.data() + 4 * i, 4);  // little-endian machines (x86-64, arm64)
        a.data[i] = f;
      } else {
        std::memcpy(&a.data[i], data.data() + 8 * i, 8);
      }
    }
  }
  return a;
}

// Fortran-order elements of `word` bytes, in C order.
std::string fortran_to_c(const std::string& label, const std::string& path, const std::string& data,
                         const std::vector<std::size_t>& shape, std::size_t word) {
  std::string out(data.size(), '\0');
  const std::size_t count = word ? data.size() / word : 0;
  std::vector<std::size_t> idx(shape.size(), 0);  // the C-order index of element i
  StopMeter stops("reordering " + label + " " + path, "values", double(1 << 22));
  for (std::size_t i = 0; i < count; ++i) {
    if ((i & 0xFFFF) == 0) stops.add(double(std::min<std::size_t>(0x10000, count - i)));
    std::size_t f = 0, stride = 1;  // its Fortran-order position: the first axis fastest
    for (std::size_t d = 0; d < shape.size(); ++d) {
      f += idx[d] * stride;
      stride *= shape[d];
    }
    std::copy_n(data.data() + f * word, word, out.data() + i * word);
    for (std::size_t d = shape.size(); d-- > 0;) {
      if (++idx[d] < shape[d]) break;
      idx[d] = 0;
    }
  }
  return out;
}

// A .npy of booleans or integers: the extension, the header, 0 to 4 axes, none empty, the size,
// and the data in C order.
std::string small_npy_data(const std::string& label, const std::string& path, std::size_t max_bytes,
                           const std::string& what, NpyHeader& h,
                           std::size_t (*word_of)(const std::string&), const std::string& refusal) {
  const std::string ext = extension_of(path);
  if (ext != ".npy")
    fail(label, path, "unknown extension '" + ext + "' (expected a .npy file of " + what + ")");
  const std::string bytes = read_file(label, path, max_bytes);
  h = npy_header_of(label, path, bytes);
  const std::size_t word = word_of(h.descr);
  if (word == 0) {
    if (h.descr.size() > 1 && h.descr[0] == '>')
      fail(label, path, "big-endian " + dtype_name(h.descr) + " is refused (" + refusal + ")");
    fail(label, path, "dtype " + dtype_name(h.descr) + " is refused (" + refusal + ")");
  }
  if (h.shape.size() > 4) fail(label, path, "shape " + shape_text(h.shape) + ": more than 4 axes");
  for (std::size_t d : h.shape)
    if (d == 0) fail(label, path, "shape " + shape_text(h.shape) + " is empty");
  check_npy_size(label, path, bytes, h, word);
  std::string data = bytes.substr(h.data_at);
  if (h.fortran && h.shape.size() > 1) data = fortran_to_c(label, path, data, h.shape, word);
  return data;
}

std::size_t bool_word(const std::string& descr) { return descr == "|b1" ? 1 : 0; }

// Little-endian integers of 1, 2, 4 or 8 bytes, signed or not ('|' or '<' byte order).
std::size_t int_word(const std::string& descr) {
  if (descr.size() != 3 || (descr[0] != '<' && descr[0] != '|') ||
      (descr[1] != 'i' && descr[1] != 'u'))
    return 0;
  const char w = descr[2];
  if (w == '1') return 1;
  if (descr[0] == '|') return 0;
  return w == '2' ? 2 : w == '4' ? 4 : w == '8' ? 8 : 0;
}

// Strict number: the whole cell (spaces around allowed) is a decimal number, nan or +-inf; or
// a decimal number past float64's range (1e999, 1e-400: from_chars leaves out unset).
enum class NumberText { number, not_number, out_of_range };
NumberText parse_number(std::string_view cell, double& out) {
  while (!cell.empty() && (cell.front() == ' ' || cell.front() == '\t')) cell.remove_prefix(1);
  while (!cell.empty() && (cell.back() == ' ' || cell.back() == '\t' || cell.back() == '\r'))
    cell.remove_suffix(1);
  if (!cell.empty() && cell.front() == '+') cell.remove_prefix(1);
  if (cell.empty()) return NumberText::not_number;
  const auto r = std::from_chars(cell.data(), cell.data() + cell.size(), out);
  if (r.ptr != cell.data() + cell.size()) return NumberText::not_number;
  if (r.ec == std::errc::result_out_of_range) return NumberText::out_of_range;
  return r.ec == std::errc() ? NumberText::number : NumberText::not_number;
}

Array load_csv(const std::string& label, const std::string& path, const std::string& bytes) {
  // One pass: every line's cells parsed (line and column named on error) into the values, with
  // a stop point every few MiB of text (a line may hold millions of cells).
  StopMeter stops("parsing " + label + " " + path, "bytes", double(1 << 22));
  Array a;
  std::size_t line_no = 0, cols = 0, rows = 0, first_line = 0;
  // A UTF-8 byte order mark (spreadsheets write one before the first cell) is not text.
  const std::size_t bom = bytes.compare(0, 3, "\xEF\xBB\xBF") == 0 ? 3 : 0;
  // Text this reader does not take, named as such (its bytes would read as a bad number).
  if (bytes.compare(0, 2, "\xFF\xFE") == 0 || bytes.compare(0, 2, "\xFE\xFF") == 0)
    fail(label, path, "UTF-16 text; save it as UTF-8 (or ASCII)");
  if (bytes.find('\n') == std::string::npos && bytes.find('\r') < bytes.size() - 1)
    fail(label, path, "its lines end in CR alone; save it with LF (or CRLF) line ends");
  if (bytes.find("\xEF\xBB\xBF", bom) != std::string::npos)
    fail(label, path, "a byte order mark (U+FEFF) inside the text, not at its start");
  for (std::size_t at = bom; at < bytes.size();) {
    std::size_t end = bytes.find('\n', at);
    if (end == std::string::npos) end = bytes.size();
    std::string_view line(bytes.data() + at, end - at);
    at = end + 1;
    ++line_no;
    stops.add(1);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.find_first_not_of(" \t") == std::string_view::npos || line[0] == '#') continue;
    std::size_t count = 0, start = 0;
    for (;;) {
      const std::size_t comma = line.find(',', start);
      const std::string_view cell =
          line.substr(start, (comma == std::string_view::npos ? line.size() : comma) - start);
      stops.add(double(cell.size() + 1));
      double v;
      const NumberText read = parse_number(cell, v);
      if (read != NumberText::number)
        fail(label, path,
             "line " + std::to_string(line_no) + ", column " + std::to_string(count + 1) + ": '" +
                 quote_input(std::string(cell)) + "' " +
                 (read == NumberText::out_of_range
                      ? "is outside float64's range (magnitudes about 4.9e-324 to 1.8e308, and 0; "
                        "write inf or 0 where that is meant)"
                      : "is not a number (nan and inf are allowed)"));
      a.data.push_back(v);
      ++count;
      if (comma == std::string_view::npos) break;
      start = comma + 1;
    }
    if (rows == 0) {
      cols = count;
      first_line = line_no;
    } else if (count != cols) {
      fail(label, path,
           "ragged CSV: line " + std::to_string(line_no) + " has " + std::to_string(count) +
               " values, line " + std::to_string(first_line) + " has " + std::to_string(cols));
    }
    ++rows;
  }
  if (rows == 0) fail(label, path, "empty CSV (no rows of numbers)");
  a.shape = {rows, cols};
  return a;
}

// One JSON value as a number: numbers, and the strings "nan", "inf", "-inf".
bool json_number(const nlohmann::json& v, double& out) {
  if (v.is_number()) {
    out = v.get<double>();
    return true;
  }
  if (v.is_string()) {
    const std::string s = v.get<std::string>();
    if (s == "nan" || s == "NaN") return (out = NAN), true;
    if (s == "inf" || s == "Infinity") return (out = INFINITY), true;
    if (s == "-inf" || s == "-Infinity") return (out = -INFINITY), true;
  }
  return false;
}

void json_walk(const std::string& label, const std::string& path, const nlohmann::json& v,
               std::size_t depth, const std::string& where, Array& a, StopMeter& stops) {
  if (depth == a.shape.size()) {
    stops.add(1);
    double x;
    if (!json_number(v, x))
      fail(label, path,
           "entry " + where + " is not a number (" + std::string(v.type_name()) +
               "; nan and inf are written \"nan\", \"inf\", \"-inf\")");
    a.data.push_back(x);
    return;
  }
  if (!v.is_array() || v.size() != a.shape[depth])
    fail(label, path,
         "not a rectangular array: " + (where.empty() ? std::string("the top level") : where) +
             " has " +
             (v.is_array() ? human_count(v.size(), "entry", "entries")
                           : std::string("a ") + v.type_name()) +
             ", expected " + human_count(a.shape[depth], "entry", "entries"));
  for (std::size_t i = 0; i < v.size(); ++i)
    json_walk(label, path, v[i], depth + 1, where + "[" + std::to_string(i) + "]", a, stops);
}

Array load_json(const std::string& label, const std::string& path, const std::string& bytes) {
  nlohmann::json doc;
  try {
    doc = parse_json(bytes, label + " " + path);
  } catch (const Interrupted&) {
    throw;
  } catch (const std::exception& e) {
    fail(label, path, "malformed JSON: " + json_error_text(e));
  }
  Array a;
  // The shape from the first entry at each level; json_walk then checks every entry.
  for (const nlohmann::json* v = &doc; v->is_array(); v = &(*v)[0]) {
    if (v->empty())
      fail(label, path,
           a.shape.empty() ? std::string("an empty array: no numbers")
                           : "an empty array as the first entry under shape " +
                                 shape_text(a.shape) + ": no numbers there");
    a.shape.push_back(v->size());
    if (a.shape.size() > 3) break;
  }
  if (a.shape.empty()) fail(label, path, "not an array (expected nested arrays of numbers)");
  if (a.shape.size() > 3) fail(label, path, "more than 3 levels of arrays");
  StopMeter stops("converting " + label + " " + path, "values", double(1 << 20));
  json_walk(label, path, doc, 0, "", a, stops);
  return a;
}

}  // namespace

std::size_t Array::size() const {
  std::size_t n = 1;
  for (std::size_t d : shape) n *= d;
  return n;
}

std::string shape_text(const std::vector<std::size_t>& shape) {
  std::string s = "(";
  for (std::size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + (shape.size() == 1 ? ",)" : ")");
}

std::string Array::shape_text() const { return attn::shape_text(shape); }

Array load_array(const std::string& label, const std::string& path, std::size_t max_bytes) {
  const std::string ext = extension_of(path);
  if (ext != ".npy" && ext != ".csv" && ext != ".json")
    fail(label, path, "unknown extension '" + ext + "' (expected .npy, .csv or .json)");
  const std::string bytes = read_file(label, path, max_bytes);
  Array a = ext == ".npy"   ? load_npy(label, path, bytes)
            : ext == ".csv" ? load_csv(label, path, bytes)
                            : load_json(label, path, bytes);
  // The attention command indexes shape[size - 2]: a scalar or a vector must never reach it.
  if (a.shape.size() < 2 || a.shape.size() > 3)
    fail(label, path,
         "shape " + a.shape_text() + ": expected a matrix or a batch of matrices (2 or 3 axes)");
  for (std::size_t d : a.shape)
    if (d == 0) fail(label, path, "shape " + a.shape_text() + " is empty");
  return a;
}

Bools load_npy_bools(const std::string& label, const std::string& path, std::size_t max_bytes) {
  NpyHeader h;
  const std::string data =
      small_npy_data(label, path, max_bytes, "booleans", h, bool_word,
                     "booleans only, True where a query may attend; numpy: m.astype(bool)");
  Bools b;
  b.shape = h.shape;
  b.data.resize(data.size());
  StopMeter stops("converting " + label + " " + path, "values", double(1 << 22));
  for (std::size_t i = 0; i < data.size(); ++i) {
    if ((i & 0xFFFF) == 0) stops.add(double(std::min<std::size_t>(0x10000, data.size() - i)));
    b.data[i] = data[i] != 0;
  }
  return b;
}

Integers load_npy_integers(const std::string& label, const std::string& path,
                           std::size_t max_bytes) {
  NpyHeader h;
  const std::string data = small_npy_data(label, path, max_bytes, "whole numbers", h, int_word,
                                          "little-endian integers only; numpy: a.astype(np.int64)");
  const std::size_t word = int_word(h.descr);
  const bool is_signed = h.descr[1] == 'i';
  Integers a;
  a.shape = h.shape;
  a.data.resize(data.size() / word);
  if (!is_signed && word == 8) a.u64.reserve(a.data.size());
  StopMeter stops("converting " + label + " " + path, "values", double(1 << 22));
  for (std::size_t i = 0; i < a.data.size(); ++i) {
    if ((i & 0xFFFF) == 0) stops.add(double(std::min<std::size_t>(0x10000, a.data.size() - i)));
    std::uint64_t u = 0;
    for (std::size_t b = 0; b < word; ++b)
      u |= std::uint64_t(static_cast<unsigned char>(data[i * word + b])) << (8 * b);
    if (is_signed && word < 8 && (u >> (8 * word - 1)) != 0) u |= ~std::uint64_t(0) << (8 * word);
    if (!is_signed && word == 8) a.u64.push_back(u);
    // uint64 beyond int64's range: kept as the largest int64, out of any caller's range too.
    if (!is_signed && u > std::uint64_t(INT64_MAX)) u = std::uint64_t(INT64_MAX);
    a.data[i] = static_cast<std::int64_t>(u);
  }
  return a;
}

NpyArray npy_array(const std::string& label, const std::string& path, std::string bytes) {
  const NpyHeader h = npy_header_of(label, path, bytes);
  std::size_t word = h.descr == "<f4" ? 4 : h.descr == "<f8" ? 8 : bool_word(h.descr);
  if (word == 0) word = int_word(h.descr);
  if (word == 0)
    fail(label, path,
         (h.descr.size() > 1 && h.descr[0] == '>' ? "big-endian " : "dtype ") +
             dtype_name(h.descr) +
             " is refused (demo's arrays are little-endian float32, float64, bool or integers; "
             "numpy: a.astype(a.dtype.newbyteorder('<')))");
  if (h.shape.size() > 32)
    fail(label, path, "shape " + shape_text(h.shape) + ": more than 32 axes");
  check_npy_size(label, path, bytes, h, word);
  NpyArray a;
  a.descr = h.descr;
  a.shape = h.shape;
  bytes.erase(0, h.data_at);
  a.data = h.fortran && h.shape.size() > 1 ? fortran_to_c(label, path, bytes, h.shape, word)
                                           : std::move(bytes);
  return a;
}

template <class T>
std::string npy_bytes(const T* data, const std::vector<std::size_t>& shape) {
  std::size_t n = 1;
  for (std::size_t d : shape) n *= d;
  // xtensor's header, then the values as they lie in memory (little-endian machines), copied in
  // blocks with a stop point every 2^22 values: an output of gigabytes takes seconds to copy.
  std::string bytes = npy_header(sizeof(T) == 4 ? "<f4" : "<f8", shape);
  const std::size_t at = bytes.size();
  bytes.resize(at + n * sizeof(T));
  StopMeter stops("writing an array", "values", double(1 << 22));
  constexpr std::size_t kBlock = std::size_t(1) << 16;
  for (std::size_t i = 0; i < n; i += kBlock) {
    const std::size_t count = std::min(kBlock, n - i);
    stops.add(double(count));
    std::memcpy(bytes.data() + at + i * sizeof(T), data + i, count * sizeof(T));
  }
  return bytes;
}

std::string npy_header(const std::string& descr, const std::vector<std::size_t>& shape) {
  std::ostringstream out;
  xt::detail::write_header(out, descr, false, shape);
  return out.str();
}

template std::string npy_bytes<float>(const float*, const std::vector<std::size_t>&);
template std::string npy_bytes<double>(const double*, const std::vector<std::size_t>&);

}  // namespace attn
