// input.cpp: see input.hpp.
#include "host/input.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <stdexcept>

#include "host/progress.hpp"

namespace attn {

const char* file_kind(unsigned mode) {
  const mode_t m = static_cast<mode_t>(mode);
  if (S_ISDIR(m)) return "a directory";
  if (S_ISLNK(m)) return "a symbolic link";
  if (S_ISCHR(m) || S_ISBLK(m)) return "a device";
  if (S_ISFIFO(m)) return "a FIFO";
  if (S_ISSOCK(m)) return "a socket";
  return "not a regular file";
}

std::string read_regular_file(const std::string& path, std::size_t max_bytes, bool follow_links) {
  // O_NONBLOCK: a FIFO opens at once (and is refused below) instead of waiting for a writer.
  const int flags = O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY | (follow_links ? 0 : O_NOFOLLOW);
  const int fd = open(path.c_str(), flags);
  if (fd < 0) {
    const int e = errno;
    if (e == ENOENT) throw std::runtime_error("no such file");
    struct stat st {};
    if (e == ELOOP && !follow_links && lstat(path.c_str(), &st) == 0 && S_ISLNK(st.st_mode))
      throw std::runtime_error("a symbolic link, not a regular file");
    throw std::runtime_error(std::string("cannot open it: ") + std::strerror(e));
  }
  struct stat st {};
  if (fstat(fd, &st) != 0) {
    const int e = errno;
    close(fd);
    throw std::runtime_error(std::string("cannot read it: ") + std::strerror(e));
  }
  if (!S_ISREG(st.st_mode)) {
    close(fd);
    const std::string kind = file_kind(st.st_mode);
    throw std::runtime_error(kind == "not a regular file" ? kind : kind + ", not a regular file");
  }
  const auto size = static_cast<std::size_t>(st.st_size);
  if (size > max_bytes) {
    close(fd);
    throw std::runtime_error("file of " + std::to_string(size) +
                             " bytes is larger than the memory available (" +
                             std::to_string(max_bytes) + " bytes)");
  }
  std::string text;
  try {
    text.reserve(size);
    char buf[1 << 16];
    // A stop point every 64 MiB: a file of gigabytes takes seconds to read.
    StopMeter stops("reading " + path, "bytes", double(64 << 20));
    for (;;) {
      const ssize_t n = read(fd, buf, sizeof buf);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) throw std::runtime_error(std::string("cannot read it: ") + std::strerror(errno));
      if (n == 0) break;
      stops.add(double(n));
      if (text.size() + static_cast<std::size_t>(n) > max_bytes)
        throw std::runtime_error("the file grew past the memory available while it was read");
      text.append(buf, static_cast<std::size_t>(n));
    }
  } catch (...) {
    close(fd);
    throw;
  }
  close(fd);
  return text;
}

std::string quote_input(const std::string& text, std::size_t max) {
  const bool cut = text.size() > max;
  std::string s = text.substr(0, cut ? (max > 3 ? max - 3 : 0) : max);
  for (char& c : s) c = one_line_char(c);
  // A cut may split a UTF-8 sequence: drop its leading bytes, so the quote stays valid UTF-8.
  if (cut) {
    std::size_t end = s.size();
    while (end > 0 && (static_cast<unsigned char>(s[end - 1]) & 0xC0) == 0x80) --end;
    if (end > 0 && static_cast<unsigned char>(s[end - 1]) >= 0xC0) s.resize(end - 1);
    s += "...";
  }
  return s;
}

std::string json_error_text(const std::exception& e) {
  std::string why = e.what();
  if (why.rfind("[json.exception.", 0) == 0) {
    const std::size_t tag_end = why.find("] ");
    if (tag_end != std::string::npos) why.erase(0, tag_end + 2);
  }
  static const std::string kLastRead = "; last read: '";
  if (const std::size_t at = why.find(kLastRead); at != std::string::npos) {
    const std::size_t from = at + kLastRead.size();
    std::string token = why.substr(from);
    if (!token.empty() && token.back() == '\'') token.pop_back();
    why = why.substr(0, from) + quote_input(token, 24) + "'";
  }
  return quote_input(why, 160);
}

namespace {
// The library's DOM builder, with a stop point per element (nlohmann-json's SAX events).
struct StoppableDom : nlohmann::detail::json_sax_dom_parser<nlohmann::json> {
  using Base = nlohmann::detail::json_sax_dom_parser<nlohmann::json>;
  using json = nlohmann::json;
  StoppableDom(json& result, StopMeter& meter) : Base(result, true), stops(meter) {}
  StopMeter& stops;
  bool null() { return stops.add(1), Base::null(); }
  bool boolean(bool v) { return stops.add(1), Base::boolean(v); }
  bool number_integer(json::number_integer_t v) { return stops.add(1), Base::number_integer(v); }
  bool number_unsigned(json::number_unsigned_t v) { return stops.add(1), Base::number_unsigned(v); }
  bool number_float(json::number_float_t v, const json::string_t& s) {
    return stops.add(1), Base::number_float(v, s);
  }
  bool string(json::string_t& v) { return stops.add(1), Base::string(v); }
  bool binary(json::binary_t& v) { return stops.add(1), Base::binary(v); }
  bool start_object(std::size_t n) { return stops.add(1), Base::start_object(n); }
  bool start_array(std::size_t n) { return stops.add(1), Base::start_array(n); }
};
}  // namespace

nlohmann::json parse_json(const std::string& text, const std::string& label) {
  StopMeter stops("parsing " + label, "elements", double(1 << 20));
  nlohmann::json doc;
  StoppableDom dom(doc, stops);
  nlohmann::json::sax_parse(text, &dom);
  return doc;
}

JsonNesting json_nesting(const std::string& text, int max_depth) {
  JsonNesting out;
  int depth = 0;
  bool in_string = false, escaped = false;
  StopMeter stops("scanning JSON", "bytes", double(1 << 24));
  std::size_t i = 0;
  for (const char c : text) {
    if ((i++ & 0xFFFF) == 0) stops.add(double(std::min<std::size_t>(0x10000, text.size() - i + 1)));
    if (in_string) {
      if (escaped)
        escaped = false;
      else if (c == '\\')
        escaped = true;
      else if (c == '"')
        in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == ',') {
      ++out.values;
    } else if (c == '[' || c == '{') {
      ++out.values;
      if (++depth > max_depth) {
        out.too_deep = true;
        return out;
      }
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return out;
}

}  // namespace attn
