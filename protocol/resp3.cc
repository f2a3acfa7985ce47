#include "protocol/resp3.h"

#include <cstdint>
#include <cstring>
#include <vector>

#include "protocol/encoder.h"
#include "protocol/reply_framer.h"
#include "protocol/request_parser.h"

namespace bloomproxy::protocol {
namespace {

// Walks one value at `pos`, appending its RESP2 form to `out` when `out` is not null. False on
// malformed input.
class Converter {
 public:
  explicit Converter(std::string_view in) : in_(in) {}

  bool Value(std::string* out) {
    std::string_view line;
    if (!Line(&line) || line.empty()) return false;
    const char type = line[0];
    const std::string_view rest = line.substr(1);
    switch (type) {
      case '+':
      case '-':
      case ':':
        return Put(out, line, true);
      case '_':
        return Put(out, "$-1", true);
      case '#':
        if (rest == "t") return Put(out, ":1", true);
        if (rest == "f") return Put(out, "$-1", true);
        return false;
      case ',':
      case '(':
        if (out != nullptr) AppendBulk(out, rest);
        return true;
      default:
        break;
    }
    int64_t n = 0;
    if (!StringToInt64(rest, &n) || n < -1) return false;
    if (type == '$' || type == '=' || type == '!') return Blob(type, n, line, out);
    if (type == '*' || type == '~' || type == '>') {
      if (out != nullptr) {
        if (n < 0) {
          out->append("*-1\r\n");
        } else {
          AppendArrayHeader(out, n);
        }
      }
      return Elements(n, out);
    }
    if (type == '%') {
      if (n < 0) return false;
      if (out != nullptr) AppendArrayHeader(out, 2 * n);
      return Elements(2 * n, out);
    }
    if (type == '|') {
      // The attribute's pairs are dropped; the value after them is the reply.
      return n >= 0 && Elements(2 * n, nullptr) && Value(out);
    }
    return false;
  }

  bool at_end() const { return pos_ == in_.size(); }

 private:
  bool Line(std::string_view* line) {
    const size_t eol = in_.find("\r\n", pos_);
    if (eol == std::string_view::npos) return false;
    *line = in_.substr(pos_, eol - pos_);
    pos_ = eol + 2;
    return true;
  }

  static bool Put(std::string* out, std::string_view line, bool ok) {
    if (out != nullptr) {
      out->append(line);
      out->append("\r\n", 2);
    }
    return ok;
  }

  bool Elements(int64_t n, std::string* out) {
    for (int64_t i = 0; i < n; ++i) {
      if (!Value(out)) return false;
    }
    return true;
  }

  bool Blob(char type, int64_t n, std::string_view line, std::string* out) {
    if (n < 0) return type == '$' && Put(out, line, true);
    if (in_.size() - pos_ < static_cast<size_t>(n) + 2 ||
        in_.substr(pos_ + static_cast<size_t>(n), 2) != "\r\n") {
      return false;
    }
    std::string_view body = in_.substr(pos_, static_cast<size_t>(n));
    pos_ += static_cast<size_t>(n) + 2;
    if (out == nullptr) return true;
    if (type == '=') {
      // "txt:..." / "mkd:...": the format prefix is not part of the text.
      if (body.size() < 4 || body[3] != ':') return false;
      AppendBulk(out, body.substr(4));
    } else if (type == '!') {
      AppendError(out, body);
    } else {
      AppendBulk(out, body);
    }
    return true;
  }

  std::string_view in_;
  size_t pos_ = 0;
};

// Whether any value of the frame is of a RESP3 type: a walk over its type bytes that skips
// bulk bodies, so that it costs little for the large RESP2 replies plans read.
bool HasResp3(std::string_view frame) {
  size_t pos = 0;
  while (pos < frame.size()) {
    const char type = frame[pos];
    if (IsResp3Type(type)) return true;
    const size_t eol = frame.find("\r\n", pos);
    if (eol == std::string_view::npos) return false;
    size_t next = eol + 2;
    if (type == '$') {
      int64_t n = 0;
      if (!StringToInt64(frame.substr(pos + 1, eol - pos - 1), &n)) return false;
      if (n > 0) next += static_cast<size_t>(n) + 2;
      if (n == 0) next += 2;
    }
    pos = next;
  }
  return false;
}

}  // namespace

std::string PairsToResp3(std::string_view frame, bool as_pairs) {
  std::vector<std::string_view> elements;
  if (!SplitArray(frame, &elements) || elements.size() % 2 != 0) return std::string(frame);
  const auto pairs = static_cast<int64_t>(elements.size() / 2);
  std::string out;
  if (as_pairs) {
    AppendArrayHeader(&out, pairs);
  } else {
    AppendMapHeader(&out, pairs);
  }
  for (size_t i = 0; i < elements.size(); ++i) {
    if (as_pairs && i % 2 == 0) AppendArrayHeader(&out, 2);
    out.append(elements[i]);
  }
  return out;
}

bool IsSubscribeReplyPush(std::string_view frame) {
  // ">3\r\n$9\r\nsubscribe\r\n...": the first element, a bulk, names the kind.
  if (frame.empty() || frame[0] != '>') return false;
  const size_t head = frame.find("\r\n");
  if (head == std::string_view::npos || frame.size() < head + 3 || frame[head + 2] != '$') {
    return false;
  }
  const size_t eol = frame.find("\r\n", head + 2);
  int64_t n = 0;
  if (eol == std::string_view::npos || !StringToInt64(frame.substr(head + 3, eol - head - 3), &n) ||
      n < 0) {
    return false;
  }
  const std::string_view kind = frame.substr(eol + 2, static_cast<size_t>(n));
  return kind == "subscribe" || kind == "psubscribe" || kind == "ssubscribe" ||
         kind == "unsubscribe" || kind == "punsubscribe" || kind == "sunsubscribe";
}

bool Resp3ToResp2(std::string_view frame, std::string* out) {
  if (!HasResp3(frame)) return false;
  std::string converted;
  Converter c(frame);
  if (!c.Value(&converted) || !c.at_end()) return false;
  *out = std::move(converted);
  return true;
}

}  // namespace bloomproxy::protocol
