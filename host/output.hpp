// output.hpp: results on stdout and on disk are complete or absent.
//
// - stderr: an error is one line, "demo: error: ..." ("demo COMMAND: error: ..." for a
//   subcommand's), printed by print_error, the one way demo
//   reports one (spdlog's log carries notices and warnings, and is not set up yet when the
//   command line is refused, or silenced by --quiet).
// - stdout: write_stdout/flush_stdout throw when a write fails (a full disk, a closed pipe end,
//   /dev/full), so that demo exits non-zero instead of reporting success.
// - files: an AtomicFile writes to "PATH.tmp-PID" and renames it to PATH on commit(); if the run
//   stops first (an error, Ctrl-C), the destructor removes the temporary file. While an
//   OutputSet lives, commits wait and the OutputSet renames every file at the end of the run,
//   so one run's files appear together or not at all; a file of the run's outputs that it does
//   not write again (a figure it does not draw) is removed then (retire_file), so that no earlier
//   run's file lies beside the new data.
// - places: a DirLock on DIR (flock) keeps two runs from writing into one folder at once;
//   remove_stale_temporaries clears "NAME.tmp-PID" files that a killed run (PID gone) left.
// - destinations: only a regular file is ever replaced (and only when asked: --force); a
//   directory, symbolic link, device, FIFO or socket is refused, --force or not.
#pragma once

#include <cstdio>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace spdlog {
class logger;
}

namespace attn {

// "PROGRAM: error: MESSAGE" as one line on stderr (a control character in MESSAGE, a newline in
// a path it names, shown as '?'), in one write. Allocates nothing, so that an
// out-of-memory handler can call it with a literal. program: "demo", or "demo COMMAND".
void print_error(std::string_view message, std::string_view program = "demo");
// "PROGRAM: interrupted (SIGINT); no results written" (or SIGTERM) on stderr, the same way; on a
// terminal after a newline (ending a progress line).
void print_interrupted(int signal, std::string_view program = "demo");

// A logger named name on stderr whose lines follow pattern (spdlog's flags), where "%*" is the
// message on one line: a control character in it (a newline in a path it names) shown as '?',
// as print_error shows it. Registered under name; throws spdlog::spdlog_ex if one is already.
std::shared_ptr<spdlog::logger> one_line_stderr_logger(const std::string& name,
                                                       const std::string& pattern);

// Writes text to stdout and flushes it. Throws std::runtime_error("cannot write to stdout: ...")
// when any byte could not be written.
void write_stdout(const std::string& text);
// Flushes std::cout and stdout; throws like write_stdout when anything written to them failed.
void flush_stdout();

// Whether text is valid UTF-8 (JSON files hold only UTF-8; demo refuses other paths up front).
bool is_valid_utf8(const std::string& text);
// Throws std::runtime_error naming option unless path is a name demo can record and report:
// valid UTF-8 (result files record it in JSON) without control characters (a newline would split
// the one-line messages that name it), not starting with '-' ("--out --force" would otherwise
// write into a folder named --force).
void refuse_unusable_name(const std::string& option, const std::string& path);

// Throws std::runtime_error, before any work, unless path can be written: nothing is there, or
// a regular file is there and overwrite is true. Anything else (a directory, symbolic link,
// device, FIFO, socket) is refused whatever overwrite says, and --force is not suggested.
void refuse_existing(const std::string& path, bool overwrite);

// Renames tmp to path now, or, while an OutputSet lives, when it commits. Re-checks path with
// refuse_existing first. Throws std::runtime_error (tmp is then removed).
void commit_file(const std::string& tmp, const std::string& path, bool overwrite);

// A file of a run's outputs that this run does not write again (a figure it does not draw:
// --no-plots, no gnuplot, no data for it), so that an earlier run's copy does not lie beside
// the new data: refused like a destination (refuse_existing) unless overwrite; with it, removed
// now, or, while an OutputSet lives, once it has renamed its files into place. Nothing there:
// nothing to do.
void retire_file(const std::string& path, bool overwrite);

class AtomicFile {
 public:
  // Throws std::runtime_error when PATH may not be written (refuse_existing), or when the
  // temporary file cannot be created.
  AtomicFile(std::string path, bool overwrite);
  ~AtomicFile();
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;

  void write(const std::string& data);  // throws on a write error
  void commit();                        // flush, fsync, close, rename (see commit_file)

  // "PATH.tmp-PID": the temporary name for path in this process.
  static std::string temporary_name(const std::string& path);

 private:
  std::string path_, tmp_;
  bool overwrite_;
  std::FILE* f_ = nullptr;
};

// Writes a whole file atomically (AtomicFile in one go).
void write_file_atomic(const std::string& path, const std::string& data, bool overwrite);

// Writes a whole file atomically and renames it into place now, even while an OutputSet lives:
// for state that must survive an interrupted run (a --checkpoint). Replaces a regular file at
// path; refuses anything else (refuse_existing). Throws std::runtime_error.
void write_file_now(const std::string& path, const std::string& data);

// Throws std::runtime_error, before any work, unless a file can be made at path and written:
// path names a file in a folder that exists, and that folder takes path's temporary file (see
// AtomicFile) with one block of bytes, synced (a read-only or full file system, /proc, no
// permission are refused). The temporary is removed again. option names the flag in messages.
void probe_writable(const std::string& option, const std::string& path);

// One run's files, made visible together. At most one lives at a time (the run's); commits
// made while it lives are deferred to commit_all(). Destroyed without commit_all(), it removes
// every temporary file it holds.
class OutputSet {
 public:
  OutputSet();
  ~OutputSet();
  OutputSet(const OutputSet&) = delete;
  OutputSet& operator=(const OutputSet&) = delete;

  // Checks every destination again, then renames every file into place. Throws
  // std::runtime_error (nothing renamed) when a destination was taken meanwhile.
  void commit_all();
  std::size_t pending() const { return files_.size(); }

 private:
  friend void commit_file(const std::string&, const std::string&, bool);
  friend void retire_file(const std::string&, bool);
  struct File {
    std::string tmp, path;
    bool overwrite;
  };
  std::vector<File> files_;
  std::vector<std::string> retired_;  // removed after the renames
};

// An exclusive lock on the folder DIR itself (flock), held while the object lives and released
// by the kernel when the process ends, however it ends: no lock file is ever left behind.
// Throws std::runtime_error when another process holds it ("another demo run is writing into
// DIR") or when no file can be made in DIR (read-only file system, /proc, no permission): both
// before any work. what names the folder in those messages ("--out results", "--per-seed's
// folder results"); "": the folder's path alone.
class DirLock {
 public:
  explicit DirLock(const std::string& dir, const std::string& what = "");
  ~DirLock();
  DirLock(const DirLock&) = delete;
  DirLock& operator=(const DirLock&) = delete;
  const std::string& dir() const { return dir_; }  // the folder locked

 private:
  std::string dir_;
  int fd_ = -1;
};

// The folders a run made for an --out option: the folder and the parents that were missing,
// outermost first. A failed run removes them again, innermost first, as far as they are empty
// (remove_if_empty); a successful one leaves them.
struct CreatedFolders {
  std::vector<std::string> made;
  bool any() const { return !made.empty(); }
  void remove_if_empty() const;
};

// Makes the folder of an --out option ready, before any work: refuses a name demo cannot record
// (refuse_unusable_name), creates the folder and its missing parents (recorded in created),
// refuses what is not a folder, and locks it (DirLock: refuses a folder that cannot be written,
// or that another run writes into). Throws std::runtime_error, after removing the folders it
// created.
std::unique_ptr<DirLock> lock_out_dir(const std::string& option, const std::string& dir,
                                      CreatedFolders& created);

// Removes "NAME.tmp-PID" files of dir whose process PID no longer runs (temporaries of a run
// killed with SIGKILL), where NAME ends in .csv, .json, .npy, .png or .svg (what demo writes); when
// only is non-empty, exactly the temporaries of the file named only. Returns the paths removed.
std::vector<std::string> remove_stale_temporaries(const std::string& dir,
                                                  const std::string& only = "");
// The notice of what remove_stale_temporaries removed: one line (the count and the first name),
// none when nothing was.
void note_removed_temporaries(const std::vector<std::string>& removed);

}  // namespace attn
