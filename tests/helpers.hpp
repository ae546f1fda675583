// helpers.hpp: small things several tests need: running demo and checking its refusals, asking
// numpy, reading and writing files (whole, CSV, test data), comparing bits. Only ATTN_DEMO and
// ATTN_TEST_DATA are used here (test_gpu_attention defines no other); running a table in-process
// is table_helpers.hpp's.
#pragma once

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <sstream>
#include <string>
#include <type_traits>
#include <vector>

#include "host/json.hpp"

namespace attn::test {

struct ProcessResult {
  int exit_code = -1;
  std::string out, err;
};

// Runs a shell command line; captures stdout and stderr (stderr through a temporary file).
inline ProcessResult run_command(const std::string& cmd) {
  ProcessResult r;
  char err_path[] = "/tmp/attn-test-stderr-XXXXXX";
  const int fd = mkstemp(err_path);
  if (fd >= 0) close(fd);
  std::FILE* p = popen((cmd + " 2>" + err_path).c_str(), "r");
  if (!p) return r;
  std::array<char, 4096> buf;
  std::size_t n;
  while ((n = std::fread(buf.data(), 1, buf.size(), p)) > 0) r.out.append(buf.data(), n);
  const int status = pclose(p);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  std::ifstream e(err_path);
  std::stringstream ss;
  ss << e.rdbuf();
  r.err = ss.str();
  std::remove(err_path);
  return r;
}

// The demo binary of this build, with arguments (shell words: quotes and redirections work).
// prefix goes before demo on the command line: environment assignments (ATTNLAB_STOP_AUDIT=1) or
// a wrapper (timeout 20).
inline ProcessResult run_demo(const std::string& args, const std::string& prefix = "") {
  return run_command((prefix.empty() ? "" : prefix + " ") + std::string(ATTN_DEMO) + " " + args);
}

// The process id of a process that has ended (a child that exited at once).
inline pid_t dead_pid() {
  const pid_t pid = fork();
  if (pid == 0) _exit(0);
  waitpid(pid, nullptr, 0);
  return pid;
}

// True when Debian's python3 with numpy can be run (tests that ask numpy skip otherwise).
inline bool have_numpy() {
  static const bool ok =
      run_command("/usr/bin/python3 -c 'import numpy' >/dev/null").exit_code == 0;
  return ok;
}

// Runs a Python program (with numpy) and returns its stdout.
inline std::string run_python(const std::string& program) {
  char path[] = "/tmp/attn-test-py-XXXXXX";
  const int fd = mkstemp(path);
  if (fd < 0) return "";
  close(fd);
  {
    std::ofstream f(path);
    f << program;
  }
  const ProcessResult r = run_command(std::string("/usr/bin/python3 ") + path);
  std::remove(path);
  return r.out;
}

// The k-th double of a hex dump of little-endian float64s (numpy: x.astype('<f8').tobytes().hex()).
inline double f64_from_hex(const std::string& hex, std::size_t k) {
  std::uint64_t bits = 0;
  for (int byte = 7; byte >= 0; --byte)
    bits = (bits << 8) |
           std::stoul(hex.substr(k * 16 + 2 * static_cast<std::size_t>(byte), 2), nullptr, 16);
  double x;
  std::memcpy(&x, &bits, sizeof x);
  return x;
}

// The fields of text between separators (an empty text is one empty field).
inline std::vector<std::string> split(const std::string& text, char sep) {
  std::vector<std::string> out(1);
  for (char c : text) {
    if (c == sep)
      out.emplace_back();
    else
      out.back() += c;
  }
  return out;
}

// The lines of s, without their newlines (a last line without one counts too).
inline std::vector<std::string> lines_of(const std::string& s) {
  std::vector<std::string> out;
  std::string cur;
  for (char c : s) {
    if (c == '\n') {
      out.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  if (!cur.empty()) out.push_back(cur);
  return out;
}

// True when s is exactly one line: not empty, one newline, at its end.
inline bool is_one_line(const std::string& s) {
  return s.size() > 1 && s.back() == '\n' && std::count(s.begin(), s.end(), '\n') == 1;
}

// What a refusal must also show, beyond its exit status, its one line and its empty stdout;
// built by naming each, e.g. Refusal().under("timeout 20").leaves_no(out).shorter_than(300).
struct Refusal {
  std::string prefix;                     // before demo on the command line (see run_demo)
  std::string never_made;                 // a path the refused run must not make ("": none)
  std::size_t max_err = 0;                // stderr shorter than this many bytes (0: any length)
  std::vector<std::string> must_not_say;  // texts stderr must not hold
  bool before_work = false;               // see before_any_work()

  Refusal& under(const std::string& p) {
    prefix = p;
    return *this;
  }
  Refusal& leaves_no(const std::string& path) {
    never_made = path;
    return *this;
  }
  Refusal& shorter_than(std::size_t bytes) {
    max_err = bytes;
    return *this;
  }
  Refusal& not_saying(const std::string& text) {
    must_not_say.push_back(text);
    return *this;
  }
  // Refused before any work: run with the stop audit on (ATTNLAB_STOP_AUDIT=1,
  // host/progress.hpp), whose "stop audit: ..." line a run that had started its work would print
  // when it ends, and that line absent.
  Refusal& before_any_work() {
    before_work = true;
    return *this;
  }
};

// An exit status that expect_refused takes as any error: 1 to 127 (not 0, not a signal).
constexpr int kAnyError = -1;

// Runs `demo args` and expects it refused: exit status exit_code (or any error, kAnyError),
// nothing on stdout, stderr exactly one line holding each of must_say, and what `also` adds.
// Returns the run, for any further checks.
inline ProcessResult expect_refused(const std::string& args, int exit_code,
                                    const std::vector<std::string>& must_say = {},
                                    const Refusal& also = {}) {
  SCOPED_TRACE("demo " + args);
  const ProcessResult r =
      run_demo(args, also.before_work ? "ATTNLAB_STOP_AUDIT=1 " + also.prefix : also.prefix);
  // Output quoted in failure messages: its first 1000 bytes (a refusal that quoted a whole file
  // must not flood the log).
  const auto cut = [](const std::string& s) {
    return s.size() <= 1000 ? s
                            : s.substr(0, 1000) + "... (" + std::to_string(s.size()) + " bytes)";
  };
  const std::string err = cut(r.err);
  if (exit_code == kAnyError) {
    EXPECT_NE(r.exit_code, 0) << "accepted; stdout:\n" << cut(r.out);
    EXPECT_LT(r.exit_code, 128) << "crashed (signal); stderr:\n" << err;
  } else {
    EXPECT_EQ(r.exit_code, exit_code) << err;
  }
  EXPECT_TRUE(r.out.empty()) << "something on stdout:\n" << cut(r.out);
  EXPECT_TRUE(is_one_line(r.err)) << "stderr is not exactly one line:\n" << err;
  for (const std::string& s : must_say) {
    EXPECT_NE(r.err.find(s), std::string::npos) << "no '" << s << "' in:\n" << err;
  }
  for (const std::string& s : also.must_not_say) {
    EXPECT_EQ(r.err.find(s), std::string::npos) << "'" << s << "' in:\n" << err;
  }
  if (also.before_work) {
    EXPECT_EQ(r.err.find("stop audit"), std::string::npos) << "refused only after work began";
  }
  if (also.max_err > 0) {
    EXPECT_LT(r.err.size(), also.max_err) << err;
  }
  if (!also.never_made.empty()) {
    EXPECT_FALSE(std::filesystem::exists(also.never_made)) << also.never_made << " was made";
  }
  return r;
}

// A file's bytes, whole ("" when it cannot be read).
inline std::string read_file(const std::filesystem::path& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// Writes text as a file's whole content (replacing any).
inline void write_file(const std::filesystem::path& path, const std::string& text) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << text;
}

// A CSV file without quoted fields (demo's per-seed rows): its header's names and its rows'
// fields. A row with another number of fields than the header is a test failure.
struct Csv {
  std::vector<std::string> names;
  std::vector<std::vector<std::string>> rows;

  std::size_t index(const std::string& name) const {
    const auto it = std::find(names.begin(), names.end(), name);
    if (it == names.end()) {
      ADD_FAILURE() << "no column " << name;
      return 0;
    }
    return static_cast<std::size_t>(it - names.begin());
  }
  // A column's fields as numbers (strtod: nan and inf too); a field that is not wholly a
  // number is a test failure.
  std::vector<double> numbers(const std::string& name) const {
    const std::size_t i = index(name);
    std::vector<double> out;
    for (const auto& row : rows) {
      char* end = nullptr;
      out.push_back(std::strtod(row.at(i).c_str(), &end));
      EXPECT_TRUE(!row[i].empty() && *end == '\0') << name << ": '" << row[i] << "' is no number";
    }
    return out;
  }
  // Every column as numbers (a table of numbers only): name -> values, in file order.
  std::map<std::string, std::vector<double>> columns() const {
    std::map<std::string, std::vector<double>> out;
    for (const std::string& name : names) out[name] = numbers(name);
    return out;
  }
};

inline Csv read_csv(const std::string& path) {
  Csv c;
  std::ifstream in(path);
  std::string line;
  if (!std::getline(in, line)) {
    ADD_FAILURE() << path << ": no header";
    return c;
  }
  c.names = split(line, ',');
  while (std::getline(in, line)) {
    c.rows.push_back(split(line, ','));
    EXPECT_EQ(c.rows.back().size(), c.names.size()) << path << ": " << line;
  }
  return c;
}

// True when a and b hold the same bits (-0 is not 0, a NaN equals only its own bits).
template <class T>
requires std::is_trivially_copyable_v<T>
bool same_bits(const T& a, const T& b) { return std::memcmp(&a, &b, sizeof(T)) == 0; }

// A fresh directory, removed with its contents when the test ends.
struct TempDir {
  std::filesystem::path path;
  TempDir() {
    static std::atomic<int> counter{0};
    path = std::filesystem::temp_directory_path() /
           ("attn-test-" + std::to_string(getpid()) + "-" + std::to_string(counter++));
    std::filesystem::remove_all(path);
    std::filesystem::create_directories(path);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  std::string file(const std::string& name) const { return (path / name).string(); }
  std::string write(const std::string& name, const std::string& text) const {
    std::ofstream(path / name) << text;
    return file(name);
  }
};

// A run of demo that was sent a signal once it said it was ready.
struct SignalledRun {
  bool ready = false;  // the ready text appeared on stderr before demo ended
  bool hung = false;   // demo had not ended hang_seconds after the signal (it was killed)
  int exit_code = -1;  // the exit status, or 128 + signal when killed
  std::string err;     // all of demo's stderr
};

// Starts demo with args (stdout to /dev/null, env prepended to the command line), reads its
// stderr until a line holds ready_text, then runs on_ready (when given), sends sig to demo (when
// not 0: to demo's process group, as a terminal's Ctrl-C) and waits for it. What is asserted is the
// outcome, never a time: hang_seconds only keeps a demo that ignores the signal from hanging the
// test (it is then killed, and hung is set).
inline SignalledRun signal_when_ready(const std::string& args, const std::string& ready_text,
                                      int sig, const std::string& env = "", int hang_seconds = 120,
                                      const std::function<void()>& on_ready = nullptr) {
  SignalledRun r;
  int fds[2];
  if (pipe(fds) != 0) return r;
  const std::string cmd = env + " exec " + std::string(ATTN_DEMO) + " " + args + " >/dev/null";
  const pid_t pid = fork();
  if (pid < 0) return r;
  if (pid == 0) {
    setpgid(0, 0);  // a group of its own: the signal reaches demo's children too, as Ctrl-C does
    dup2(fds[1], 2);
    close(fds[0]);
    close(fds[1]);
    execl("/bin/sh", "sh", "-c", cmd.c_str(), nullptr);
    _exit(127);
  }
  setpgid(pid, pid);
  close(fds[1]);
  std::FILE* in = fdopen(fds[0], "r");
  char buf[4096];
  while (!r.ready && std::fgets(buf, sizeof buf, in)) {
    r.err += buf;
    r.ready = r.err.find(ready_text) != std::string::npos;
  }
  if (r.ready && on_ready) on_ready();
  if (r.ready && sig != 0) kill(-pid, sig);
  // The rest of stderr, with the hang guard: a watcher kills demo if it outlives it.
  const pid_t watcher = fork();
  if (watcher == 0) {
    sleep(static_cast<unsigned>(hang_seconds));
    kill(-pid, SIGKILL);
    _exit(0);
  }
  while (std::fgets(buf, sizeof buf, in)) r.err += buf;
  std::fclose(in);
  int status = 0;
  waitpid(pid, &status, 0);
  kill(watcher, SIGKILL);
  waitpid(watcher, nullptr, 0);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  r.hung = WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL;
  return r;
}

// What demo's stop audit said (ATTNLAB_STOP_AUDIT, host/progress.hpp): the most work units
// between two stop checks in the run of the table `name`, or -1 when stderr has no audit of it.
inline double stop_audit(const std::string& err, const std::string& name) {
  const std::string key = "stop audit: " + name + ": at most ";
  const std::size_t at = err.find(key);
  if (at == std::string::npos) return -1;
  return std::stod(err.substr(at + key.size()));
}

inline nlohmann::json read_json(const std::string& path) {
  std::ifstream f(path);
  return nlohmann::json::parse(f);
}

inline nlohmann::json test_data(const std::string& name) {
  return read_json(std::string(ATTN_TEST_DATA) + "/" + name);
}

}  // namespace attn::test
