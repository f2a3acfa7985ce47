#include "protocol/reply_framer.h"

#include <cstring>

#include "protocol/request_parser.h"

namespace bloomproxy::protocol {
namespace {

constexpr int64_t kMaxElements = int64_t{1} << 40;
constexpr int64_t kMaxBulk = int64_t{4} << 30;

}  // namespace

void ReplyFramer::Reset() {
  pos_ = 0;
  owed_ = 1;
  error_.clear();
}

FrameStatus ReplyFramer::Next(std::string_view input, size_t* length) {
  if (!error_.empty()) return FrameStatus::kError;
  const char* base = input.data();
  const size_t size = input.size();
  while (owed_ > 0) {
    if (pos_ >= size) return FrameStatus::kNeedMore;
    const char* line = base + pos_;
    const void* cr = std::memchr(line, '\r', size - pos_);
    if (cr == nullptr || static_cast<const char*>(cr) + 1 >= base + size) {
      return FrameStatus::kNeedMore;
    }
    const char* end = static_cast<const char*>(cr);
    if (end[1] != '\n') {
      error_ = "line not terminated by CRLF";
      return FrameStatus::kError;
    }
    const size_t after_line = static_cast<size_t>(end - base) + 2;
    const char type = line[0];
    if (type == '+' || type == '-' || type == ':') {
      pos_ = after_line;
      --owed_;
      continue;
    }
    int64_t n = 0;
    if ((type != '$' && type != '*') ||
        !StringToInt64(std::string_view(line + 1, static_cast<size_t>(end - line - 1)), &n) ||
        n < -1) {
      error_ = std::string("bad reply type or length: '") + type + "'";
      return FrameStatus::kError;
    }
    // A reply claiming more elements or bytes than any Redis can send is not trusted: the
    // counter must not overflow, and a bulk is at most a Redis string (512 MB by default,
    // configurable; 4 GB here).
    if ((type == '*' && n > kMaxElements - owed_) || (type == '$' && n > kMaxBulk)) {
      error_ = std::string("reply length out of range: '") + type + "'";
      return FrameStatus::kError;
    }
    if (type == '*') {
      pos_ = after_line;
      owed_ += (n > 0 ? n : 0) - 1;
      continue;
    }
    if (n == -1) {
      pos_ = after_line;
      --owed_;
      continue;
    }
    const size_t need = after_line + static_cast<size_t>(n) + 2;
    if (need > size) return FrameStatus::kNeedMore;
    if (base[need - 2] != '\r' || base[need - 1] != '\n') {
      error_ = "bulk not terminated by CRLF";
      return FrameStatus::kError;
    }
    pos_ = need;
    --owed_;
  }
  *length = pos_;
  pos_ = 0;
  owed_ = 1;
  return FrameStatus::kComplete;
}

}  // namespace bloomproxy::protocol
