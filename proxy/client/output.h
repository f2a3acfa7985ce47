// The bytes waiting to go out on one socket. Replies and requests are appended to pending();
// Flush() hands them to the kernel, first with uv_try_write (no callback, no copy) and only the
// rest with uv_write, so a loop turn's worth of replies leaves in one system call. On a TLS
// connection pending() is plaintext: Flush() seals it into sealed() (where the handshake's own
// messages go too) and writes that.
#pragma once

#include <uv.h>

#include <string>

#include "proxy/server/tls.h"

namespace bloomproxy::proxy {

class Output {
 public:
  std::string& pending() { return pending_; }
  std::string& sealed() { return sealed_; }
  size_t size() const { return pending_.size() + sealed_.size() + writing_.size() - write_off_; }
  bool empty() const { return size() == 0; }
  bool writing() const { return !writing_.empty(); }

  // Writes what it can. `req->data` must point at the owner; `cb` fires when a uv_write
  // finishes and must call OnWriteDone() and then Flush() again. Returns 0 or a libuv error
  // (UV_EPROTO when TLS fails to seal).
  int Flush(uv_stream_t* stream, uv_write_t* req, uv_write_cb cb, TlsSession* tls = nullptr) {
    if (tls != nullptr && !tls->Seal(&pending_, &sealed_)) return UV_EPROTO;
    std::string& out = tls != nullptr ? sealed_ : pending_;
    if (writing() || out.empty()) return 0;
    uv_buf_t buf = uv_buf_init(out.data(), static_cast<unsigned>(out.size()));
    int n = uv_try_write(stream, &buf, 1);
    if (n == static_cast<int>(out.size())) {
      Recycle(&out);
      return 0;
    }
    if (n < 0 && n != UV_EAGAIN) return n;
    write_off_ = n > 0 ? static_cast<size_t>(n) : 0;
    writing_.swap(out);
    buf = uv_buf_init(writing_.data() + write_off_,
                      static_cast<unsigned>(writing_.size() - write_off_));
    return uv_write(req, stream, &buf, 1, cb);
  }

  void OnWriteDone() {
    Recycle(&writing_);
    write_off_ = 0;
  }

  // Frees the buffers of an idle connection (nothing pending, nothing being written).
  void ReleaseIfIdle() {
    if (empty() && !writing()) {
      std::string().swap(pending_);
      std::string().swap(sealed_);
      std::string().swap(writing_);
    }
  }

  void Clear() {
    pending_.clear();
    Recycle(&pending_);
  }

 private:
  // Keeps a modest buffer for reuse but returns large ones, so an idle connection that once
  // carried a big reply does not hold on to it.
  static void Recycle(std::string* s) {
    if (s->capacity() > kKeep) {
      std::string().swap(*s);
    } else {
      s->clear();
    }
  }
  static constexpr size_t kKeep = 64 * 1024;

  std::string pending_;
  std::string sealed_;  // TLS: ciphertext ready to go
  std::string writing_;
  size_t write_off_ = 0;
};

}  // namespace bloomproxy::proxy
