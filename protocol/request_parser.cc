#include "protocol/request_parser.h"

#include <algorithm>
#include <climits>
#include <cstring>
#include <limits>

namespace bloomproxy::protocol {
namespace {

constexpr size_t kNpos = std::string_view::npos;

// Redis caps the argv it allocates up front at 1024 entries: a client claiming 2^31 arguments
// must send them before it costs memory.
constexpr int64_t kMaxArgReserve = 1024;

// The reply texts, verbatim from Redis 7.0 src/networking.c (with the "ERR " addReplyError adds).
constexpr const char* kTooBigInline = "ERR Protocol error: too big inline request";
constexpr const char* kUnbalancedQuotes = "ERR Protocol error: unbalanced quotes in request";
constexpr const char* kTooBigMbulkCount = "ERR Protocol error: too big mbulk count string";
constexpr const char* kInvalidMbulkLength = "ERR Protocol error: invalid multibulk length";
constexpr const char* kUnauthMbulkLength = "ERR Protocol error: unauthenticated multibulk length";
constexpr const char* kTooBigBulkCount = "ERR Protocol error: too big bulk count string";
constexpr const char* kInvalidBulkLength = "ERR Protocol error: invalid bulk length";
constexpr const char* kUnauthBulkLength = "ERR Protocol error: unauthenticated bulk length";

// isspace() in the C locale, which is what Redis runs its sdssplitargs() under.
inline bool IsSpace(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r';
}

inline bool IsHexDigit(char c) {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

inline int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return c - 'A' + 10;
}

}  // namespace

void Command::Clear() {
  args.clear();
  raw = std::string_view();
  is_inline = false;
  owned.clear();
}

bool StringToInt64(std::string_view s, int64_t* out) {
  const size_t n = s.size();
  // 20 characters hold every int64 ("-9223372036854775808"); Redis rejects 21 and more upfront.
  if (n == 0 || n > 20) return false;
  if (n == 1 && s[0] == '0') {
    if (out != nullptr) *out = 0;
    return true;
  }
  size_t i = 0;
  bool negative = false;
  if (s[0] == '-') {
    negative = true;
    i = 1;
    if (n == 1) return false;
  }
  // No leading zero, no '+', no space: exactly one spelling per value, like string2ll.
  if (s[i] < '1' || s[i] > '9') return false;
  uint64_t v = static_cast<uint64_t>(s[i] - '0');
  for (++i; i < n; ++i) {
    const char c = s[i];
    if (c < '0' || c > '9') return false;
    if (v > std::numeric_limits<uint64_t>::max() / 10) return false;
    v *= 10;
    const uint64_t digit = static_cast<uint64_t>(c - '0');
    if (v > std::numeric_limits<uint64_t>::max() - digit) return false;
    v += digit;
  }
  constexpr uint64_t kMaxPositive = static_cast<uint64_t>(std::numeric_limits<int64_t>::max());
  if (negative) {
    if (v > kMaxPositive + 1) return false;
    if (out != nullptr) {
      *out = v == kMaxPositive + 1 ? std::numeric_limits<int64_t>::min() : -static_cast<int64_t>(v);
    }
  } else {
    if (v > kMaxPositive) return false;
    if (out != nullptr) *out = static_cast<int64_t>(v);
  }
  return true;
}

ParseStatus RequestParser::Parse(std::string_view input, bool authenticated, size_t* consumed,
                                 Command* cmd) {
  *consumed = 0;
  cmd->Clear();
  if (!error_.empty()) return ParseStatus::kError;

  // `base` is where the current command starts: past any empty commands skipped in this call.
  // The resume state is relative to it, which is the caller's input start on the next call.
  size_t base = 0;
  while (base < input.size()) {
    const std::string_view in(input.data() + base, input.size() - base);
    size_t length = 0;
    // As in Redis, the first byte decides; a multibulk in progress always starts with '*'.
    const Step step = (multibulk_left_ > 0 || in[0] == '*')
                          ? ParseMultibulk(in, authenticated, cmd, &length)
                          : ParseInline(in, cmd, &length);
    switch (step) {
      case Step::kCommand:
        ResetCommandState();
        *consumed = base + length;
        return ParseStatus::kOk;
      case Step::kEmpty:
        ResetCommandState();
        cmd->Clear();
        base += length;
        break;
      case Step::kPartial:
        *consumed = base;
        cmd->Clear();
        return ParseStatus::kNeedMore;
      case Step::kFailed:
        cmd->Clear();
        return ParseStatus::kError;
    }
  }
  *consumed = base;
  return ParseStatus::kNeedMore;
}

void RequestParser::Reset() {
  error_.clear();
  ResetCommandState();
}

void RequestParser::ResetCommandState() {
  multibulk_left_ = 0;
  bulk_len_ = -1;
  pos_ = 0;
  scan_ = 0;
  line_blocked_ = false;
  canonical_ = true;
  expected_size_ = 0;
  arg_spans_.clear();
}

RequestParser::Step RequestParser::Fail(std::string message) {
  error_ = std::move(message);
  ResetCommandState();
  return Step::kFailed;
}

size_t RequestParser::FindLineEnd(std::string_view in, size_t start, char terminator) {
  // Redis looks for line ends with strchr() on its NUL-terminated query buffer, so a NUL byte
  // before the terminator makes the line endless: Redis then waits until the "too big" limit
  // closes the connection (its "protocol desync" tests rely on that). Mirror it, remembering it
  // so the line is not searched again.
  if (line_blocked_) return kNpos;
  const size_t from = std::max(scan_, start);
  if (from >= in.size()) return kNpos;
  const char* begin = in.data() + from;
  const size_t avail = in.size() - from;
  const char* hit = static_cast<const char*>(std::memchr(begin, terminator, avail));
  const size_t stop = hit != nullptr ? static_cast<size_t>(hit - begin) : avail;
  if (stop > 0 && std::memchr(begin, '\0', stop) != nullptr) {
    line_blocked_ = true;
    return kNpos;
  }
  // Either way nothing before `from + stop` needs looking at again.
  scan_ = from + stop;
  return hit != nullptr ? from + stop : kNpos;
}

RequestParser::Step RequestParser::ParseInline(std::string_view in, Command* cmd, size_t* length) {
  const size_t newline = FindLineEnd(in, 0, '\n');
  if (newline == kNpos) {
    if (in.size() > limits_.max_inline_len) return Fail(kTooBigInline);
    return Step::kPartial;
  }
  // Redis strips one '\r' before the '\n'; any other '\r' is a separator for sdssplitargs.
  const size_t line_len = (newline > 0 && in[newline - 1] == '\r') ? newline - 1 : newline;
  if (!SplitInline(std::string_view(in.data(), line_len), cmd)) return Fail(kUnbalancedQuotes);
  *length = newline + 1;
  if (cmd->args.empty()) return Step::kEmpty;
  cmd->is_inline = true;
  return Step::kCommand;
}

bool RequestParser::SplitInline(std::string_view line, Command* cmd) {
  // A port of Redis's sdssplitargs() (src/sds.c). The line holds no NUL (FindLineEnd), so
  // at(i) == '\0' exactly where the C code sees the string's terminator.
  const size_t n = line.size();
  const auto at = [&](size_t i) -> char { return i < n ? line[i] : '\0'; };
  // While a word's bytes are a contiguous run of the line, the word is a view of it (zero
  // copy); the first escape or quote that breaks the run copies it into cmd->owned. Owned words
  // are recorded as (arg index, owned index) and pointed at only once cmd->owned stops growing.
  arg_spans_.clear();
  size_t p = 0;
  while (true) {
    while (p < n && IsSpace(line[p])) ++p;
    if (p >= n) break;

    bool in_dq = false;
    bool in_sq = false;
    bool done = false;
    size_t run_start = p;
    size_t run_len = 0;
    std::string* copy = nullptr;  // stable until the next emplace_back, i.e. the next word
    const auto start_copy = [&]() {
      cmd->owned.emplace_back(line.data() + run_start, run_len);
      copy = &cmd->owned.back();
    };
    // Appends line[i] itself: extends the run when it is adjacent.
    const auto append_in_place = [&](size_t i) {
      if (copy == nullptr) {
        if (run_len == 0) {
          run_start = i;
          run_len = 1;
          return;
        }
        if (run_start + run_len == i) {
          ++run_len;
          return;
        }
        start_copy();
      }
      copy->push_back(line[i]);
    };
    // Appends a byte that is not in the line (the value of an escape).
    const auto append_byte = [&](char c) {
      if (copy == nullptr) start_copy();
      copy->push_back(c);
    };

    while (!done) {
      const char c = at(p);
      if (in_dq) {
        if (c == '\\' && at(p + 1) == 'x' && IsHexDigit(at(p + 2)) && IsHexDigit(at(p + 3))) {
          append_byte(static_cast<char>(HexValue(at(p + 2)) * 16 + HexValue(at(p + 3))));
          p += 3;
        } else if (c == '\\' && at(p + 1) != '\0') {
          ++p;
          switch (line[p]) {
            case 'n':
              append_byte('\n');
              break;
            case 'r':
              append_byte('\r');
              break;
            case 't':
              append_byte('\t');
              break;
            case 'b':
              append_byte('\b');
              break;
            case 'a':
              append_byte('\a');
              break;
            default:  // the escaped byte itself, e.g. \" or \\ .
              append_in_place(p);
              break;
          }
        } else if (c == '"') {
          // The closing quote must be followed by a space or the end of the line.
          if (at(p + 1) != '\0' && !IsSpace(at(p + 1))) return false;
          done = true;
        } else if (c == '\0') {
          return false;  // unterminated quotes
        } else {
          append_in_place(p);
        }
      } else if (in_sq) {
        if (c == '\\' && at(p + 1) == '\'') {
          ++p;
          append_in_place(p);
        } else if (c == '\'') {
          if (at(p + 1) != '\0' && !IsSpace(at(p + 1))) return false;
          done = true;
        } else if (c == '\0') {
          return false;
        } else {
          append_in_place(p);
        }
      } else {
        switch (c) {
          // Unlike the blank skipping above, only these end an unquoted word ('\v' and '\f'
          // do not), as in sdssplitargs.
          case ' ':
          case '\n':
          case '\r':
          case '\t':
          case '\0':
            done = true;
            break;
          case '"':
            in_dq = true;
            break;
          case '\'':
            in_sq = true;
            break;
          default:
            append_in_place(p);
            break;
        }
      }
      if (p < n) ++p;
    }

    if (copy != nullptr) {
      arg_spans_.emplace_back(cmd->args.size(), cmd->owned.size() - 1);
      cmd->args.emplace_back();
    } else {
      cmd->args.emplace_back(line.data() + run_start, run_len);
    }
  }
  for (const auto& [arg, owned] : arg_spans_) cmd->args[arg] = cmd->owned[owned];
  arg_spans_.clear();
  return true;
}

RequestParser::Step RequestParser::ParseMultibulk(std::string_view in, bool authenticated,
                                                  Command* cmd, size_t* length) {
  const size_t n = in.size();
  if (multibulk_left_ == 0) {
    // "*<count>\r\n". The checks and their order are Redis's processMultibulkBuffer().
    const size_t cr = FindLineEnd(in, 0, '\r');
    if (cr == kNpos) {
      // Only a line without its '\r' is "too big": Redis does not look at the length once the
      // '\r' is there.
      if (n > limits_.max_inline_len) return Fail(kTooBigMbulkCount);
      return Step::kPartial;
    }
    // Redis wants one more byte after the '\r' and skips it unseen.
    if (n - cr < 2) return Step::kPartial;
    int64_t count = 0;
    if (!StringToInt64(std::string_view(in.data() + 1, cr - 1), &count) || count > INT_MAX) {
      return Fail(kInvalidMbulkLength);
    }
    if (!authenticated && count > limits_.unauth_max_multibulk_len) {
      return Fail(kUnauthMbulkLength);
    }
    canonical_ = in[cr + 1] == '\n';
    pos_ = cr + 2;
    scan_ = pos_;
    if (count <= 0) {
      *length = pos_;
      return Step::kEmpty;
    }
    multibulk_left_ = count;
    arg_spans_.clear();
    arg_spans_.reserve(static_cast<size_t>(std::min(count, kMaxArgReserve)));
  }

  while (multibulk_left_ > 0) {
    if (bulk_len_ < 0) {
      // "$<len>\r\n".
      if (pos_ > n) return Step::kPartial;  // the caller passed fewer bytes than before
      const size_t cr = FindLineEnd(in, pos_, '\r');
      if (cr == kNpos) {
        if (n - pos_ > limits_.max_inline_len) return Fail(kTooBigBulkCount);
        return Step::kPartial;
      }
      if (n - cr < 2) return Step::kPartial;
      const char first = in[pos_];
      if (first != '$') {
        // Redis formats this with %c and then turns CR and LF into spaces. (A NUL cannot get
        // here: FindLineEnd does not find a line holding one.)
        std::string message = "ERR Protocol error: expected '$', got '";
        message.push_back(first == '\r' || first == '\n' ? ' ' : first);
        message.push_back('\'');
        return Fail(std::move(message));
      }
      int64_t len = 0;
      if (!StringToInt64(std::string_view(in.data() + pos_ + 1, cr - pos_ - 1), &len) || len < 0 ||
          len > limits_.max_bulk_len) {
        return Fail(kInvalidBulkLength);
      }
      if (!authenticated && len > limits_.unauth_max_bulk_len) return Fail(kUnauthBulkLength);
      if (in[cr + 1] != '\n') canonical_ = false;
      pos_ = cr + 2;
      scan_ = pos_;
      bulk_len_ = len;
    }

    // The data and the two bytes after it, which Redis skips without looking at them. Resuming
    // lands here directly: the data is only ever looked at once, at its end.
    const uint64_t end = static_cast<uint64_t>(pos_) + static_cast<uint64_t>(bulk_len_) + 2;
    if (end > n) {
      expected_size_ = end > std::numeric_limits<size_t>::max() ? std::numeric_limits<size_t>::max()
                                                                : static_cast<size_t>(end);
      return Step::kPartial;
    }
    const size_t data_end = pos_ + static_cast<size_t>(bulk_len_);
    if (in[data_end] != '\r' || in[data_end + 1] != '\n') canonical_ = false;
    arg_spans_.emplace_back(pos_, static_cast<size_t>(bulk_len_));
    pos_ = static_cast<size_t>(end);
    scan_ = pos_;
    bulk_len_ = -1;
    expected_size_ = 0;
    --multibulk_left_;
  }

  cmd->args.reserve(arg_spans_.size());
  for (const auto& [offset, len] : arg_spans_) cmd->args.emplace_back(in.data() + offset, len);
  if (canonical_) cmd->raw = std::string_view(in.data(), pos_);
  cmd->is_inline = false;
  *length = pos_;
  return Step::kCommand;
}

}  // namespace bloomproxy::protocol
