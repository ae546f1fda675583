// output.hpp: result files that are either complete or absent.
//
// An AtomicFile writes to "PATH.tmp-PID" and renames it to PATH on commit(); if the run stops
// first (an error, Ctrl-C), the destructor removes the temporary file, so no half-written
// result ever carries the real name. An existing PATH is refused unless overwriting was asked.
#pragma once

#include <cstdio>
#include <string>

namespace attn {

class AtomicFile {
 public:
  // Throws std::runtime_error when PATH exists and !overwrite, or when it cannot be created.
  AtomicFile(std::string path, bool overwrite);
  ~AtomicFile();
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;

  void write(const std::string& data);  // throws on a write error
  void commit();                        // flush, close, rename into place

 private:
  std::string path_, tmp_;
  std::FILE* f_ = nullptr;
};

// Writes a whole file atomically (AtomicFile in one go).
void write_file_atomic(const std::string& path, const std::string& data, bool overwrite);

// Throws std::runtime_error when path exists and !overwrite (checked before any work starts).
void refuse_existing(const std::string& path, bool overwrite);

}  // namespace attn
