#include "filters/common/plan_requests.h"

#include <string>
#include <vector>

#include "protocol/encoder.h"
#include "protocol/errors.h"
#include "protocol/request_parser.h"

namespace bloomproxy::filters {

std::string What(const ReplyCheck& c) {
  std::string out = c.command;
  switch (c.role) {
    case ReplyCheck::Role::kNone:
      break;
    case ReplyCheck::Role::kShard:
      out += " of link " + std::to_string(c.link) + " shard " + std::to_string(c.shard);
      break;
    case ReplyCheck::Role::kCount:
      out += " of the count of link " + std::to_string(c.link);
      break;
    case ReplyCheck::Role::kCounts:
      out += " of the counts";
      break;
    case ReplyCheck::Role::kAdd:
      out += " setting bits in link " + std::to_string(c.link);
      break;
  }
  return out;
}

bool IsNil(const redisReply* r) { return r != nullptr && r->type == REDIS_REPLY_NIL; }
std::string_view Str(const redisReply* r) {
  if (r == nullptr) return {};
  if (r->type == REDIS_REPLY_STRING || r->type == REDIS_REPLY_STATUS ||
      r->type == REDIS_REPLY_ERROR) {
    return {r->str, r->len};
  }
  return {};
}
int64_t Int(const redisReply* r, int64_t fallback) {
  if (r == nullptr) return fallback;
  if (r->type == REDIS_REPLY_INTEGER) return r->integer;
  int64_t v = 0;
  if ((r->type == REDIS_REPLY_STRING || r->type == REDIS_REPLY_STATUS) &&
      protocol::StringToInt64(Str(r), &v)) {
    return v;
  }
  return fallback;
}

std::string_view FrameLine(std::string_view f) {
  if (f.empty()) return {};
  const size_t eol = f.find('\r');
  return f.substr(1, eol == std::string_view::npos ? std::string_view::npos : eol - 1);
}

std::string DescribeFrame(std::string_view f) {
  if (f.empty()) return "nothing";
  const std::string_view line = FrameLine(f);
  auto quoted = [](std::string_view s) {
    return "'" + std::string(s.substr(0, 60)) + (s.size() > 60 ? "...'" : "'");
  };
  switch (f[0]) {
    case '*':
      return line == "-1" ? "a nil array" : "an array of " + std::string(line);
    case ':':
      return "the integer " + std::string(line);
    case '$':
      return line == "-1" ? "nil" : "a bulk string of " + std::string(line) + " bytes";
    case '+':
      return "the status " + quoted(line);
    case '-':
      return "the error " + quoted(line);
    default:
      return "a reply of unknown type";
  }
}

std::string Described(const redisReply* r, std::string_view f) {
  return r == nullptr ? "a reply that could not be decoded" : DescribeFrame(f);
}

std::string Unexpected(const ReplyCheck& c, std::string_view detail) {
  return protocol::errors::UnexpectedUpstreamReply(What(c), detail);
}

std::string UpstreamError(std::string_view frame, const ReplyCheck& c) {
  const std::string_view text = FrameLine(frame);
  const std::string_view code = text.substr(0, text.find(' '));
  bool state_error = !code.empty() && code != "ERR" && code != "WRONGTYPE" && frame.size() >= 2 &&
                     frame.substr(frame.size() - 2) == "\r\n";
  for (char ch : code) state_error = state_error && ch >= 'A' && ch <= 'Z';
  if (state_error) return std::string(frame);
  return Unexpected(c, text);
}

bool FrameInt(std::string_view f, int64_t* v) {
  return !f.empty() && f[0] == ':' && protocol::StringToInt64(FrameLine(f), v);
}

bool ParseCount(std::string_view s, int64_t* v) { return protocol::StringToInt64(s, v) && *v >= 0; }

bool CheckReply(StepReplies& r, size_t i, const ReplyCheck& c, std::string* error) {
  using Kind = ReplyCheck::Kind;
  if (c.kind == Kind::kAny) return true;
  if (i >= r.size()) {
    *error = Unexpected(c, "the reply is missing");
    return false;
  }
  const std::string_view f = r.Frame(i);
  if (r.IsErrorReply(i)) {
    *error = UpstreamError(f, c);
    return false;
  }
  int64_t v = 0;
  switch (c.kind) {
    case Kind::kAny:
    case Kind::kNoError:
      return true;
    case Kind::kInteger:
      if (FrameInt(f, &v)) return true;
      *error = Unexpected(c, "expected an integer, got " + DescribeFrame(f));
      return false;
    case Kind::kLength:
    case Kind::kPresent:
      if (!FrameInt(f, &v)) {
        *error = Unexpected(c, "expected an integer, got " + DescribeFrame(f));
        return false;
      }
      if (v == 0) {
        *error = Unexpected(c, "the key is missing");
        return false;
      }
      if (c.kind == Kind::kLength && static_cast<uint64_t>(v) != c.n) {
        *error = Unexpected(
            c, "the key holds " + std::to_string(v) + " bytes, expected " + std::to_string(c.n));
        return false;
      }
      return true;
    case Kind::kBits: {
      const std::vector<int64_t>* values = r.Ints(i);
      if (values == nullptr || values->size() != c.n) {
        *error = Unexpected(c, "expected an array of " + std::to_string(c.n) +
                                   " integers 0 or 1, got " + DescribeFrame(f) +
                                   (values == nullptr && f[0] == '*' && FrameLine(f) != "-1"
                                        ? " with elements other than integers"
                                        : ""));
        return false;
      }
      for (int64_t b : *values) {
        if (b != 0 && b != 1) {
          *error = Unexpected(c, "expected bits 0 or 1, got the integer " + std::to_string(b));
          return false;
        }
      }
      return true;
    }
    case Kind::kAddResults: {
      if (FrameInt(f, &v) && v == -1) return true;  // the filter changed: nothing written
      const std::vector<int64_t>* values = r.Ints(i);
      if (values == nullptr || values->size() != c.n) {
        *error = Unexpected(c, "expected -1 or an array of " + std::to_string(c.n) +
                                   " integers 0, 1 or 2, got " + DescribeFrame(f));
        return false;
      }
      for (int64_t b : *values) {
        if (b < 0 || b > 2) {
          *error =
              Unexpected(c, "expected results 0, 1 or 2, got the integer " + std::to_string(b));
          return false;
        }
      }
      return true;
    }
    case Kind::kBulk: {
      const redisReply* reply = r.Get(i);
      if (reply == nullptr || reply->type != REDIS_REPLY_STRING) {
        *error = Unexpected(c, "expected a bulk string, got " + Described(reply, f));
        return false;
      }
      if (reply->len == 0) {
        *error = Unexpected(c, "the key is missing");
        return false;
      }
      if (reply->len != c.n) {
        *error = Unexpected(c, "the key holds " + std::to_string(reply->len) +
                                   " bytes in the range, expected " + std::to_string(c.n));
        return false;
      }
      return true;
    }
    case Kind::kCounts: {
      const redisReply* reply = r.Get(i);
      if (reply == nullptr || reply->type != REDIS_REPLY_ARRAY || reply->elements != c.n) {
        *error = Unexpected(
            c, "expected an array of " + std::to_string(c.n) + ", got " + Described(reply, f));
        return false;
      }
      for (size_t l = 0; l < reply->elements; ++l) {
        const redisReply* e = reply->element[l];
        if (e->type == REDIS_REPLY_NIL) {
          // MGET answers nil for a missing key and for a key of another type alike.
          *error = Unexpected(
              c, "the count of link " + std::to_string(l) + " is missing or not a string");
          return false;
        }
        if (e->type != REDIS_REPLY_STRING || !ParseCount(Str(e), &v)) {
          *error =
              Unexpected(c, "the count of link " + std::to_string(l) + " is not an integer >= 0");
          return false;
        }
      }
      return true;
    }
    case Kind::kCount: {
      const redisReply* reply = r.Get(i);
      if (IsNil(reply)) {
        *error = Unexpected(c, "the key is missing");
        return false;
      }
      if (reply == nullptr || reply->type != REDIS_REPLY_STRING || !ParseCount(Str(reply), &v)) {
        *error = Unexpected(c, "expected an integer >= 0, got " + Described(reply, f));
        return false;
      }
      return true;
    }
  }
  return true;
}

std::string Reencode(const redisReply* r, std::string_view command) {
  std::string out;
  ReplyCheck c;
  c.command.assign(command);
  if (r == nullptr) return Unexpected(c, "the reply could not be decoded");
  switch (r->type) {
    case REDIS_REPLY_INTEGER:
      protocol::AppendInteger(&out, r->integer);
      break;
    case REDIS_REPLY_STATUS:
      protocol::AppendSimple(&out, Str(r));
      break;
    case REDIS_REPLY_ERROR:
      out = "-" + std::string(Str(r)) + "\r\n";
      break;
    case REDIS_REPLY_STRING:
      protocol::AppendBulk(&out, Str(r));
      break;
    case REDIS_REPLY_NIL:
      protocol::AppendNullBulk(&out);
      break;
    default:
      out =
          Unexpected(c, "expected a simple reply, got an array of " + std::to_string(r->elements));
  }
  return out;
}

std::string Integer(int64_t v) {
  std::string out;
  protocol::AppendInteger(&out, v);
  return out;
}

std::string U64(uint64_t v) { return std::to_string(v); }

ReplyCheck Named(std::string_view command) {
  ReplyCheck c;
  c.command.assign(command);
  return c;
}

}  // namespace bloomproxy::filters
