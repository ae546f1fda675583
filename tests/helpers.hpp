// helpers.hpp: small things several tests need: running demo, asking numpy, reading test data.
#pragma once

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

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

// The demo binary of this build, with arguments.
inline ProcessResult run_demo(const std::string& args) {
  return run_command(std::string(ATTN_DEMO) + " " + args);
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
