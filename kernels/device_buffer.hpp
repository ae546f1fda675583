// device_buffer.hpp: the one owner of GPU memory in attnlab. Every .cu file allocates through
// DeviceBuffer, so memory is freed on every path, exceptions included.
//
//   DeviceBuffer<T> buf(count);   // cudaMalloc of count elements (count 0: no allocation)
//   buf.upload(host, n);          // host -> device, n <= count elements from the start
//   buf.download(host, n);        // device -> host
//   buf.data(), buf.size()        // the device pointer, for the device-resident entry points
//   buf.reserve(count)            // grown to at least count elements (contents not kept)
//
// PinnedBuffer<T> is page-locked host memory (cudaMallocHost) that copies go through, so that
// cudaMemcpyAsync is a DMA transfer that returns at once instead of a staged, synchronous copy.
//
// Errors (out of memory, a bad copy) throw std::runtime_error with file and line
// (cuda_check.hpp). Move-only. The destructor frees without checking: it may run during
// unwinding, and a failing cudaFree then has nothing better to report than the first error.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <stdexcept>
#include <string>
#include <utility>

#include "cuda_check.hpp"

namespace attn {

template <class T>
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(std::size_t count) : size_(count) {
    if (count > 0) ATTN_CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&ptr_), bytes()));
  }
  // A buffer holding a copy of host[0, count).
  static DeviceBuffer from_host(const T* host, std::size_t count) {
    DeviceBuffer b(count);
    b.upload(host, count);
    return b;
  }
  ~DeviceBuffer() {
    if (ptr_) cudaFree(ptr_);
  }
  DeviceBuffer(DeviceBuffer&& o) noexcept
      : ptr_(std::exchange(o.ptr_, nullptr)), size_(std::exchange(o.size_, 0)) {}
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept {
    if (this != &o) {
      if (ptr_) cudaFree(ptr_);
      ptr_ = std::exchange(o.ptr_, nullptr);
      size_ = std::exchange(o.size_, 0);
    }
    return *this;
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  T* data() { return ptr_; }
  const T* data() const { return ptr_; }
  std::size_t size() const { return size_; }
  std::size_t bytes() const { return size_ * sizeof(T); }

  void upload(const T* host, std::size_t count) {
    check_count(count);
    if (count > 0)
      ATTN_CUDA_CHECK(cudaMemcpy(ptr_, host, count * sizeof(T), cudaMemcpyHostToDevice));
  }
  void upload(const T* host) { upload(host, size_); }
  void download(T* host, std::size_t count) const {
    check_count(count);
    if (count > 0)
      ATTN_CUDA_CHECK(cudaMemcpy(host, ptr_, count * sizeof(T), cudaMemcpyDeviceToHost));
  }
  void download(T* host) const { download(host, size_); }

  // Grows the buffer to at least count elements, contents not kept; never shrinks. For buffers
  // kept from call to call: no queued work may still use the old memory (cudaFree does not
  // promise to wait for it), so the caller waits first where work may be queued.
  void reserve(std::size_t count) {
    if (count > size_) *this = DeviceBuffer(count);
  }

 private:
  void check_count(std::size_t count) const {
    if (count > size_)
      throw std::out_of_range("DeviceBuffer: copy of " + std::to_string(count) +
                              " elements into a buffer of " + std::to_string(size_));
  }
  T* ptr_ = nullptr;
  std::size_t size_ = 0;
};

// Page-locked host memory for count elements of T, grown by reserve, never shrunk; move-only.
// Errors throw as DeviceBuffer's; the destructor frees without checking.
template <class T>
class PinnedBuffer {
 public:
  PinnedBuffer() = default;
  ~PinnedBuffer() {
    if (ptr_) cudaFreeHost(ptr_);
  }
  PinnedBuffer(PinnedBuffer&& o) noexcept
      : ptr_(std::exchange(o.ptr_, nullptr)), size_(std::exchange(o.size_, 0)) {}
  PinnedBuffer& operator=(PinnedBuffer&& o) noexcept {
    if (this != &o) {
      if (ptr_) cudaFreeHost(ptr_);
      ptr_ = std::exchange(o.ptr_, nullptr);
      size_ = std::exchange(o.size_, 0);
    }
    return *this;
  }
  PinnedBuffer(const PinnedBuffer&) = delete;
  PinnedBuffer& operator=(const PinnedBuffer&) = delete;

  // At least count elements (contents not kept when it grows): the same memory as long as it
  // suffices. No queued copy may still use the old memory when it grows.
  T* reserve(std::size_t count) {
    if (count > size_) {
      if (ptr_) cudaFreeHost(std::exchange(ptr_, nullptr));
      size_ = 0;
      ATTN_CUDA_CHECK(cudaMallocHost(reinterpret_cast<void**>(&ptr_), count * sizeof(T)));
      size_ = count;
    }
    return ptr_;
  }
  T* data() { return ptr_; }
  std::size_t size() const { return size_; }

 private:
  T* ptr_ = nullptr;
  std::size_t size_ = 0;
};

}  // namespace attn
