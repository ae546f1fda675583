// output.cpp: see output.hpp.
#include "host/output.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <stdexcept>

#include <spdlog/pattern_formatter.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include "host/input.hpp"
#include "host/progress.hpp"

namespace attn {
namespace {

OutputSet* g_active_set = nullptr;

std::runtime_error errno_error(const std::string& what, int e) {
  return std::runtime_error(what + ": " + std::strerror(e));
}

bool process_alive(long pid) {
  if (pid <= 0) return true;  // not a process id: leave the file alone
  return kill(static_cast<pid_t>(pid), 0) == 0 || errno == EPERM;
}

// spdlog's "%*": the message with one_line_char's characters.
class OneLineMessage final : public spdlog::custom_flag_formatter {
 public:
  void format(const spdlog::details::log_msg& msg, const std::tm&,
              spdlog::memory_buf_t& dest) override {
    for (const char c : msg.payload) dest.push_back(one_line_char(c));
  }
  std::unique_ptr<custom_flag_formatter> clone() const override {
    return std::make_unique<OneLineMessage>();
  }
};

}  // namespace

std::shared_ptr<spdlog::logger> one_line_stderr_logger(const std::string& name,
                                                       const std::string& pattern) {
  auto logger = spdlog::stderr_color_mt(name);
  auto formatter = std::make_unique<spdlog::pattern_formatter>();
  formatter->add_flag<OneLineMessage>('*').set_pattern(pattern);
  logger->set_formatter(std::move(formatter));
  return logger;
}

void print_error(std::string_view message, std::string_view program) {
  // One line whatever the message names (a path or a value may hold a newline): a control
  // character is shown as '?', as quote_input shows it. Built on the stack and written at once
  // (one write for a line of up to 4 kB, so that the ranks of a job never interleave theirs).
  char line[4096];
  std::size_t n = 0;
  const auto put = [&](std::string_view text, bool escape) {
    for (const char c : text) {
      if (n == sizeof line) {
        std::fwrite(line, 1, n, stderr);
        n = 0;
      }
      line[n++] = escape ? one_line_char(c) : c;
    }
  };
  put(program, true);
  put(": error: ", false);
  put(message, true);
  put("\n", false);
  std::fwrite(line, 1, n, stderr);
}

void print_interrupted(int signal, std::string_view program) {
  // On a terminal a progress line (or the ^C the terminal echoes) may end without a newline.
  std::fprintf(stderr, "%s%.*s: interrupted (%s); no results written\n",
               isatty(STDERR_FILENO) ? "\n" : "", static_cast<int>(program.size()), program.data(),
               signal == SIGTERM ? "SIGTERM" : "SIGINT");
}

void write_stdout(const std::string& text) {
  std::cout.flush();
  errno = 0;
  const bool ok =
      std::fwrite(text.data(), 1, text.size(), stdout) == text.size() && std::fflush(stdout) == 0;
  if (!ok || std::ferror(stdout)) throw errno_error("cannot write to stdout", errno ? errno : EIO);
}

void flush_stdout() {
  errno = 0;
  std::cout.flush();
  const bool ok = !std::cout.fail() && std::fflush(stdout) == 0 && !std::ferror(stdout);
  if (!ok) {
    if (errno == 0) throw std::runtime_error("cannot write to stdout");
    throw errno_error("cannot write to stdout", errno);
  }
}

bool is_valid_utf8(const std::string& s) {
  std::size_t i = 0;
  const auto byte = [&](std::size_t k) { return static_cast<unsigned char>(s[k]); };
  while (i < s.size()) {
    const unsigned c = byte(i);
    std::size_t n;
    unsigned min;
    if (c < 0x80) {
      ++i;
      continue;
    } else if ((c & 0xE0) == 0xC0) {
      n = 1, min = 0x80;
    } else if ((c & 0xF0) == 0xE0) {
      n = 2, min = 0x800;
    } else if ((c & 0xF8) == 0xF0) {
      n = 3, min = 0x10000;
    } else {
      return false;
    }
    if (i + n >= s.size()) return false;  // the sequence is cut short
    unsigned cp = c & (0x3F >> n);
    for (std::size_t k = 1; k <= n; ++k) {
      if ((byte(i + k) & 0xC0) != 0x80) return false;
      cp = (cp << 6) | (byte(i + k) & 0x3F);
    }
    if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return false;
    i += n + 1;
  }
  return true;
}

void note_removed_temporaries(const std::vector<std::string>& removed) {
  if (removed.empty()) return;
  if (removed.size() == 1)
    spdlog::info("removed {}: a temporary file left by an earlier run that was killed", removed[0]);
  else
    spdlog::info("removed {} temporary files left by an earlier run that was killed ({}, ...)",
                 removed.size(), removed[0]);
}

void refuse_unusable_name(const std::string& option, const std::string& path) {
  if (!is_valid_utf8(path))
    throw std::runtime_error(option +
                             ": the path is not valid UTF-8 (result files record it in JSON); "
                             "choose a UTF-8 name");
  if (std::any_of(path.begin(), path.end(), [](char c) { return one_line_char(c) != c; }))
    throw std::runtime_error(option + " " + quote_input(path) +
                             ": the path holds a control character (a newline, a tab, ...); "
                             "choose a name without one");
  // "--out --force" gives --out the value "--force": an option mistaken for a name.
  if (!path.empty() && path[0] == '-')
    throw std::runtime_error(option + " " + path + ": a name that starts with '-' (an option " +
                             option + " took as its value?); for such a name write ./" + path);
}

void refuse_existing(const std::string& path, bool overwrite) {
  struct stat st {};
  if (lstat(path.c_str(), &st) != 0) {
    if (errno == ENOENT) return;
    throw errno_error(path, errno);
  }
  if (!S_ISREG(st.st_mode))
    throw std::runtime_error(path + " is " + file_kind(st.st_mode) +
                             "; demo replaces only regular files: choose another name");
  if (!overwrite) throw std::runtime_error(path + " exists; pass --force to replace it");
}

void commit_file(const std::string& tmp, const std::string& path, bool overwrite) {
  if (g_active_set) {
    g_active_set->files_.push_back({tmp, path, overwrite});
    return;
  }
  try {
    refuse_existing(path, overwrite);
  } catch (...) {
    std::remove(tmp.c_str());
    throw;
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    const int e = errno;
    std::remove(tmp.c_str());
    throw errno_error("cannot write " + path, e);
  }
}

void retire_file(const std::string& path, bool overwrite) {
  refuse_existing(path, overwrite);
  if (g_active_set) {
    g_active_set->retired_.push_back(path);
    return;
  }
  if (std::remove(path.c_str()) != 0 && errno != ENOENT)
    throw errno_error("cannot remove " + path, errno);
}

std::string AtomicFile::temporary_name(const std::string& path) {
  return path + ".tmp-" + std::to_string(getpid());
}

AtomicFile::AtomicFile(std::string path, bool overwrite)
    : path_(std::move(path)), tmp_(temporary_name(path_)), overwrite_(overwrite) {
  refuse_existing(path_, overwrite);
  std::remove(tmp_.c_str());             // this process's own leftover, if any
  f_ = std::fopen(tmp_.c_str(), "wbx");  // x: never through a link planted at the temporary name
  if (!f_) throw errno_error("cannot write " + path_, errno);
}

AtomicFile::~AtomicFile() {
  if (f_) {
    std::fclose(f_);
    std::remove(tmp_.c_str());
  }
}

void AtomicFile::write(const std::string& data) {
  // In pieces with a stop point between them: a file of gigabytes takes seconds to write.
  constexpr std::size_t kPiece = std::size_t(64) << 20;
  for (std::size_t at = 0; at < data.size(); at += kPiece) {
    stop_point();
    const std::size_t len = std::min(kPiece, data.size() - at);
    if (std::fwrite(data.data() + at, 1, len, f_) != len)
      throw errno_error("cannot write " + path_, errno);
  }
}

void AtomicFile::commit() {
  const bool ok = std::fflush(f_) == 0 && fsync(fileno(f_)) == 0;
  const int e = errno;
  const bool closed = std::fclose(f_) == 0;
  f_ = nullptr;
  if (!ok || !closed) {
    std::remove(tmp_.c_str());
    throw errno_error("cannot write " + path_, ok ? errno : e);
  }
  commit_file(tmp_, path_, overwrite_);
}

void write_file_atomic(const std::string& path, const std::string& data, bool overwrite) {
  AtomicFile f(path, overwrite);
  f.write(data);
  f.commit();
}

OutputSet::OutputSet() {
  if (g_active_set) throw std::logic_error("one OutputSet at a time");
  g_active_set = this;
}

OutputSet::~OutputSet() {
  g_active_set = nullptr;
  for (const File& f : files_) std::remove(f.tmp.c_str());
}

void OutputSet::commit_all() {
  for (const File& f : files_) refuse_existing(f.path, f.overwrite);
  for (const std::string& path : retired_) refuse_existing(path, true);
  for (std::size_t i = 0; i < files_.size(); ++i)
    if (std::rename(files_[i].tmp.c_str(), files_[i].path.c_str()) != 0) {
      const int e = errno;
      files_.erase(files_.begin(), files_.begin() + static_cast<std::ptrdiff_t>(i));
      throw errno_error("cannot write " + files_.front().path, e);
    }
  files_.clear();
  for (const std::string& path : retired_)
    if (std::remove(path.c_str()) != 0 && errno != ENOENT)
      throw errno_error("cannot remove " + path, errno);
  retired_.clear();
}

DirLock::DirLock(const std::string& dir, const std::string& what) : dir_(dir) {
  const std::string named = what.empty() ? dir : what;
  // The lock is on the folder itself (flock on its descriptor): no lock file exists, so a run
  // killed at any moment, SIGKILL included, leaves nothing behind, and the kernel releases the
  // lock with the process.
  fd_ = open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd_ < 0) throw errno_error(named + ": cannot open it", errno);
  if (flock(fd_, LOCK_EX | LOCK_NB) != 0) {
    const int e = errno;
    close(fd_);
    fd_ = -1;
    if (e != EWOULDBLOCK) throw errno_error(named + ": cannot lock it", e);
    throw std::runtime_error("another demo run is writing into " + dir +
                             "; wait for it to finish or choose another folder");
  }
  // Whether files can be made there (a read-only file system, /proc, no permission): a probe
  // file, made and removed at once.
  const std::string probe = dir + "/.demo.probe-" + std::to_string(getpid());
  const int p = open(probe.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (p < 0) {
    const int e = errno;
    close(fd_);
    fd_ = -1;
    throw errno_error(named + ": cannot write there", e);
  }
  close(p);
  unlink(probe.c_str());
}

DirLock::~DirLock() {
  if (fd_ >= 0) close(fd_);
}

void CreatedFolders::remove_if_empty() const {
  std::error_code ec;
  for (auto it = made.rbegin(); it != made.rend(); ++it) {
    if (!std::filesystem::is_empty(*it, ec) || ec) return;
    std::filesystem::remove(*it, ec);
  }
}

std::unique_ptr<DirLock> lock_out_dir(const std::string& option, const std::string& dir,
                                      CreatedFolders& created) {
  namespace fs = std::filesystem;
  refuse_unusable_name(option, dir);
  std::error_code ec;
  if (fs::exists(dir, ec) && !fs::is_directory(dir, ec))
    throw std::runtime_error(option + " " + dir + ": not a folder");
  // The folders that are missing, from dir outwards (a trailing '/' names dir itself).
  std::vector<std::string> missing;
  fs::path p(dir);
  if (p.has_parent_path() && !p.has_filename()) p = p.parent_path();
  for (; !p.empty() && !fs::exists(p, ec); p = p.parent_path()) {
    missing.push_back(p.string());
    if (!p.has_parent_path() || p.parent_path() == p) break;
  }
  fs::create_directories(dir, ec);
  if (ec) throw std::runtime_error(option + " " + dir + ": cannot create it: " + ec.message());
  created.made.assign(missing.rbegin(), missing.rend());
  try {
    if (!fs::is_directory(dir)) throw std::runtime_error(option + " " + dir + ": not a folder");
    return std::make_unique<DirLock>(dir, option + " " + dir);
  } catch (...) {
    created.remove_if_empty();  // empty: nothing was written there
    created.made.clear();
    throw;
  }
}

std::vector<std::string> remove_stale_temporaries(const std::string& dir, const std::string& only) {
  namespace fs = std::filesystem;
  std::vector<std::string> removed;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    const auto at = name.rfind(".tmp-");
    if (at == std::string::npos || at == 0) continue;
    if (!only.empty() && name.compare(0, at, only) != 0) continue;
    // Only what demo writes: NAME.csv, .json, .npy, .png, .svg (a user's "notes.tmp-2024" stays).
    const std::string target = name.substr(0, at);
    bool ours = !only.empty();
    for (const char* ext : {".csv", ".json", ".npy", ".png", ".svg"}) {
      const std::size_t n = std::strlen(ext);
      ours = ours || (target.size() > n && target.compare(target.size() - n, n, ext) == 0);
    }
    if (!ours) continue;
    const std::string digits = name.substr(at + 5);
    if (digits.empty() || digits.size() > 9 ||
        digits.find_first_not_of("0123456789") != std::string::npos)
      continue;
    const long pid = std::stol(digits);
    if (pid == getpid() || process_alive(pid)) continue;
    std::error_code rm;
    if (it->is_regular_file(rm) && fs::remove(it->path(), rm)) removed.push_back(it->path());
  }
  return removed;
}

void write_file_now(const std::string& path, const std::string& data) {
  refuse_existing(path, true);
  const std::string tmp = AtomicFile::temporary_name(path);
  std::remove(tmp.c_str());                       // this process's own leftover, if any
  std::FILE* f = std::fopen(tmp.c_str(), "wbx");  // x: a new file, never a FIFO or link there
  if (!f) throw std::runtime_error("cannot write " + path + ": " + std::strerror(errno));
  const bool ok = std::fwrite(data.data(), 1, data.size(), f) == data.size() &&
                  std::fflush(f) == 0 && fsync(fileno(f)) == 0;
  const int err = errno;
  std::fclose(f);
  if (!ok || std::rename(tmp.c_str(), path.c_str()) != 0) {
    const std::string why = std::strerror(ok ? errno : err);
    std::remove(tmp.c_str());
    throw std::runtime_error("cannot write " + path + ": " + why);
  }
}

void probe_writable(const std::string& option, const std::string& path) {
  namespace fs = std::filesystem;
  const fs::path p(path);
  if (!p.has_filename() || p.filename() == "." || p.filename() == "..")
    throw std::runtime_error(option + " " + path + ": names a folder, not a file");
  const std::string dir = p.parent_path().empty() ? "." : p.parent_path().string();
  std::error_code ec;
  if (!fs::is_directory(dir, ec))
    throw std::runtime_error(option + " " + path + ": no folder " + dir);
  const std::string tmp = AtomicFile::temporary_name(path);
  std::remove(tmp.c_str());  // this process's own leftover, if any
  const int fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0644);
  if (fd < 0) throw errno_error(option + " " + path + ": cannot write there", errno);
  // One block of bytes, synced: a full file system refuses it here rather than at the first save.
  const std::string block(4096, '\n');
  const bool ok =
      write(fd, block.data(), block.size()) == static_cast<ssize_t>(block.size()) && fsync(fd) == 0;
  const int e = errno;
  close(fd);
  unlink(tmp.c_str());
  if (!ok) throw errno_error(option + " " + path + ": cannot write there", e);
}

}  // namespace attn
