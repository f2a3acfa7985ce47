// A growable byte buffer with a consumed front, for socket input: reads append at the tail,
// parsers consume from the front, and the unconsumed bytes move to the front only when that
// makes room, so a pipelined read is parsed in place without copies.
#pragma once

#include <cstdlib>
#include <cstring>
#include <string_view>

namespace bloomproxy::proxy {

class Buffer {
 public:
  Buffer() = default;
  ~Buffer() { std::free(data_); }
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;

  std::string_view view() const { return {data_ + start_, end_ - start_}; }
  size_t size() const { return end_ - start_; }
  bool empty() const { return end_ == start_; }
  size_t capacity() const { return cap_; }
  size_t free_space() const { return cap_ - end_; }

  // Drops n bytes from the front.
  void Consume(size_t n) {
    start_ += n;
    if (start_ == end_) start_ = end_ = 0;
  }

  // Returns a tail with room for at least `min_free` bytes (moving or growing the storage;
  // views from view() are invalidated).
  char* Reserve(size_t min_free) {
    if (cap_ - end_ >= min_free) return data_ + end_;
    const size_t used = end_ - start_;
    if (start_ > 0 && cap_ - used >= min_free) {
      std::memmove(data_, data_ + start_, used);
    } else {
      size_t cap = cap_ ? cap_ : 4096;
      while (cap - used < min_free) cap *= 2;
      char* grown = static_cast<char*>(std::malloc(cap));
      if (used) std::memcpy(grown, data_ + start_, used);
      std::free(data_);
      data_ = grown;
      cap_ = cap;
    }
    start_ = 0;
    end_ = used;
    return data_ + end_;
  }

  // Marks n bytes written at the tail returned by Reserve().
  void Commit(size_t n) { end_ += n; }

  // Gives the memory back when the buffer is empty and has grown large (idle clients stay small).
  void ShrinkIfIdle(size_t keep) {
    if (empty() && cap_ > keep) {
      std::free(data_);
      data_ = nullptr;
      cap_ = start_ = end_ = 0;
    }
  }

 private:
  char* data_ = nullptr;
  size_t cap_ = 0;
  size_t start_ = 0;
  size_t end_ = 0;
};

}  // namespace bloomproxy::proxy
