#include "protocol/reply_framer.h"

#include <algorithm>
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
    switch (type) {
      case '+':
      case '-':
      case ':':  // RESP2 lines
      case '_':
      case '#':
      case ',':
      case '(':  // RESP3: null, boolean, double, big number
        pos_ = after_line;
        --owed_;
        continue;
      default:
        break;
    }
    int64_t n = 0;
    const bool aggregate = type == '*' || type == '%' || type == '~' || type == '>' || type == '|';
    const bool blob = type == '$' || type == '=' || type == '!';
    if ((!aggregate && !blob) ||
        !StringToInt64(std::string_view(line + 1, static_cast<size_t>(end - line - 1)), &n) ||
        n < -1 || (n == -1 && type != '*' && type != '$')) {
      error_ = std::string("bad reply type or length: '") + type + "'";
      return FrameStatus::kError;
    }
    // A reply claiming more elements or bytes than any Redis can send is not trusted: the
    // counter must not overflow, and a bulk is at most a Redis string (512 MB by default,
    // configurable; 4 GB here). A map or an attribute of n pairs holds 2n values.
    const int64_t values = (type == '%' || type == '|') && n <= kMaxElements ? 2 * n : n;
    if ((aggregate && values > kMaxElements - owed_) || (blob && n > kMaxBulk)) {
      error_ = std::string("reply length out of range: '") + type + "'";
      return FrameStatus::kError;
    }
    if (aggregate) {
      pos_ = after_line;
      // An attribute is not a value of its own: the value it describes follows its pairs.
      owed_ += (values > 0 ? values : 0) - (type == '|' ? 0 : 1);
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

bool SplitArray(std::string_view reply, std::vector<std::string_view>* elements) {
  elements->clear();
  const size_t eol = reply.find("\r\n");
  int64_t n = 0;
  if (reply.empty() || reply[0] != '*' || eol == std::string_view::npos ||
      !StringToInt64(reply.substr(1, eol - 1), &n) || n < 0) {
    return false;
  }
  // The count is the upstream's word, not a size to allocate by.
  elements->reserve(static_cast<size_t>(std::min<int64_t>(n, 1024)));
  std::string_view rest = reply.substr(eol + 2);
  ReplyFramer framer;
  for (int64_t i = 0; i < n; ++i) {
    size_t len = 0;
    if (framer.Next(rest, &len) != FrameStatus::kComplete) return false;
    elements->push_back(rest.substr(0, len));
    rest.remove_prefix(len);
  }
  return rest.empty();
}

}  // namespace bloomproxy::protocol
