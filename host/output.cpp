// output.cpp: see output.hpp.
#include "host/output.hpp"

#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <stdexcept>

namespace attn {

void refuse_existing(const std::string& path, bool overwrite) {
  if (!overwrite && std::filesystem::exists(path))
    throw std::runtime_error(path + " exists; pass --force to replace it");
}

AtomicFile::AtomicFile(std::string path, bool overwrite)
    : path_(std::move(path)), tmp_(path_ + ".tmp-" + std::to_string(getpid())) {
  refuse_existing(path_, overwrite);
  f_ = std::fopen(tmp_.c_str(), "wb");
  if (!f_) throw std::runtime_error("cannot write " + path_ + ": " + std::strerror(errno));
}

AtomicFile::~AtomicFile() {
  if (f_) {
    std::fclose(f_);
    std::remove(tmp_.c_str());
  }
}

void AtomicFile::write(const std::string& data) {
  if (std::fwrite(data.data(), 1, data.size(), f_) != data.size())
    throw std::runtime_error("cannot write " + path_ + ": " + std::strerror(errno));
}

void AtomicFile::commit() {
  const bool ok = std::fflush(f_) == 0 && fsync(fileno(f_)) == 0;
  std::fclose(f_);
  f_ = nullptr;
  if (!ok || std::rename(tmp_.c_str(), path_.c_str()) != 0) {
    const std::string why = std::strerror(errno);
    std::remove(tmp_.c_str());
    throw std::runtime_error("cannot write " + path_ + ": " + why);
  }
}

void write_file_atomic(const std::string& path, const std::string& data, bool overwrite) {
  AtomicFile f(path, overwrite);
  f.write(data);
  f.commit();
}

}  // namespace attn
