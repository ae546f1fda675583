// input.cpp: see input.hpp.
#include "host/input.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

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
    // A stop point every 1024 reads (64 MiB): a file of gigabytes takes seconds to read.
    for (std::size_t reads = 1;; ++reads) {
      if (reads % 1024 == 0) stop_point();
      const ssize_t n = read(fd, buf, sizeof buf);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) throw std::runtime_error(std::string("cannot read it: ") + std::strerror(errno));
      if (n == 0) break;
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
  for (char& c : s)
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = '?';
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

JsonNesting json_nesting(const std::string& text, int max_depth) {
  JsonNesting out;
  int depth = 0;
  bool in_string = false, escaped = false;
  for (const char c : text) {
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
