// input.hpp: reading the files demo is given (a --checkpoint, demo merge's parts, compare's
// result files, attention's arrays) and quoting what they hold in messages.
//
// - Only a regular file is read. It is opened without waiting (O_NONBLOCK: opening a FIFO that
//   has no writer returns at once instead of hanging the run) and checked with fstat on the
//   descriptor opened, so nothing can be swapped in between the check and the read; a FIFO,
//   device, socket or directory is refused.
// - A message quotes at most kQuoteMax characters of anything read from a file: a damaged file
//   may hold megabytes on one line, and nlohmann-json's parse errors quote the token they
//   stopped in, however long ("last read: '...'").
#pragma once

#include <cstddef>
#include <cstdint>
#include <exception>
#include <limits>
#include <string>

#include "host/json.hpp"

namespace attn {

inline constexpr std::size_t kQuoteMax = 40;

// "a directory", "a FIFO", "a symbolic link", "a device", "a socket" or "not a regular file":
// what kind of thing a struct stat's st_mode describes, for messages.
const char* file_kind(unsigned mode);

// The bytes of the regular file at path. A symbolic link is followed when follow_links is true
// (inputs), refused when false (a file demo also replaces, such as a --checkpoint, where only a
// regular file is ever replaced). Throws std::runtime_error with the reason alone, the caller
// names the file: "no such file", "a FIFO, not a regular file", "cannot read it: ...", or, when
// the file is larger than max_bytes, "file of N bytes is larger than the memory available (M
// bytes)".
std::string read_regular_file(const std::string& path,
                              std::size_t max_bytes = std::numeric_limits<std::size_t>::max(),
                              bool follow_links = true);

// text cut to at most max characters ("..." marks a cut), control characters shown as '?': a
// piece of input fit to be quoted in a one-line message.
std::string quote_input(const std::string& text, std::size_t max = kQuoteMax);
// c as a one-line message shows it: a control character (a newline, a tab, DEL) as '?'.
inline char one_line_char(char c) {
  const auto u = static_cast<unsigned char>(c);
  return u < 0x20 || u == 0x7f ? '?' : c;
}

// A JSON parser's error on one short line: nlohmann-json's text without its
// "[json.exception...] " tag, the input it quotes cut with quote_input, the whole at most 160
// characters.
std::string json_error_text(const std::exception& e);

// JSON text parsed into a document (nlohmann-json's DOM), with a stop point every 2^20 of its
// elements (host/progress.hpp's StopMeter, audited as "parsing LABEL"): its SAX interface with
// the library's own DOM builder (a parse callback would cost time quadratic in the objects of
// an array). Throws nlohmann::json::parse_error as json::parse does, Interrupted at a stop.
nlohmann::json parse_json(const std::string& text, const std::string& label);

// JSON text as seen before parsing it, by one pass over its characters outside strings:
// too_deep when [ and { nest more than max_depth levels (the pass stops there), else values,
// the number of values it holds at most (one, plus one per [, { and ','), from which the
// memory its parsed document takes is planned. Parsing a deeper document, destroying it and
// dumping it each recurse once per level.
struct JsonNesting {
  bool too_deep = false;
  double values = 1;
};
JsonNesting json_nesting(const std::string& text, int max_depth);

}  // namespace attn
