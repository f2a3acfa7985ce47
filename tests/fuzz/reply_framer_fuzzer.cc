// libFuzzer target for ReplyFramer, checked against a model of RESP2 and RESP3 framing and
// against hiredis's reader (which ReplyDecoder wraps, reading RESP3 as RESP2).
//
// Input layout: the first byte picks how the rest is fed:
//   bits 0-5  chunk size - 1 (1..64 bytes per read)
//   bits 6-7  unused
// The rest is what an upstream sends: replies back to back, possibly broken. It is framed twice,
// whole and in chunks, like the proxy that frames every complete reply after each read, and:
//   - both find the same frame lengths, then the same kNeedMore (same bytes left) or kError
//     (same message), and these are exactly what the model (Scan) finds;
//   - after kError the framer keeps returning kError, with the same message, until Reset();
//   - every frame is one reply to hiredis too, of exactly that length: hiredis has no reply
//     before its last byte and a reply at it, having consumed all of it, whenever the frame
//     nests no deeper than hiredis supports (7 levels below the top) and its integers are
//     integers (hiredis checks them, the framer does not look) and it holds no RESP3 type
//     (hiredis 0.14 reads RESP2 only); otherwise hiredis refuses it;
//   - ReplyDecoder::Decode on every frame, with one decoder for all of them, decodes exactly
//     those frames and the RESP3 ones that read as RESP2 the same way (booleans are #t or #f,
//     verbatim strings have their format prefix), to a reply of the frame's type as RESP2
//     has it (attributes dropped), and returns null for the others;
//   - the bytes left after the last frame are no reply to hiredis either.
#include <hiredis/hiredis.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "protocol/reply_decoder.h"
#include "protocol/reply_framer.h"
#include "protocol/request_parser.h"

namespace {

using bloomproxy::protocol::FrameStatus;
using bloomproxy::protocol::ReplyDecoder;
using bloomproxy::protocol::ReplyFramer;
using bloomproxy::protocol::ReplyPtr;
using bloomproxy::protocol::StringToInt64;

// Aborts with a message, so the crash report says which invariant broke.
#define FUZZ_CHECK(cond)                                                            \
  do {                                                                              \
    if (!(cond)) {                                                                  \
      std::fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
      std::abort();                                                                 \
    }                                                                               \
  } while (0)

// The reply is at level 0 and the elements of an array at level n are at level n + 1. hiredis's
// reader refuses an array (even an empty or null one) at a level deeper than this: "No support
// for nested multi bulk replies with depth > 7".
constexpr int kHiredisMaxArrayLevel = 7;

// What the model finds at the start of its input. A RESP3 attribute's pairs are dropped when a
// reply is read as RESP2 (protocol/resp3.h), so what hiredis and ReplyDecoder will check is
// noted only for the values outside attributes.
struct Model {
  FrameStatus status = FrameStatus::kNeedMore;
  size_t length = 0;         // of the reply, when kComplete
  size_t top = 0;            // where the value the reply decodes to starts (after attributes)
  int max_array_level = -1;  // the deepest array header read (map, set and push included)
  bool integers_ok = true;   // every ':' line read holds a strict 64-bit integer
  bool resp3 = false;        // a RESP3 type was read, anywhere (hiredis 0.14 refuses them)
  bool convertible = true;   // booleans are #t/#f, verbatim strings have their "xxx:" prefix
  uint64_t max_count = 0;    // the largest aggregate count read
};

// An aggregate still open in the model: the values it still owes, and whether they are an
// attribute's pairs (which describe the value that follows the attribute).
struct Open {
  int64_t left;
  bool attribute;
};

// RESP2 and RESP3 framing as ReplyFramer documents it, written independently: lines end at the
// first CR, which must be followed by LF; '+', '-', ':', '_', '#', ',' and '(' lines are taken
// whole; "$<n>" and "*<n>" need a strict integer n >= -1 (Redis's string2ll), '=', '!', '%',
// '~', '>' and '|' one >= 0; a bulk's n bytes must be followed by CRLF; an array, set or push of
// n owes n values, a map 2n; an attribute's 2n are followed by the value it describes, which
// is the value in the attribute's place. Also notes what hiredis will check on top.
Model Scan(std::string_view in) {
  Model m;
  std::vector<Open> open;  // innermost last
  int attributes = 0;      // open attributes
  // The framer's bounds: at most 2^40 values owed in all, bulks of at most 4 GB.
  constexpr int64_t kMaxElements = int64_t{1} << 40;
  constexpr int64_t kMaxBulk = int64_t{4} << 30;
  int64_t owed = 1;  // values still owed in all (the framer's single counter)
  size_t pos = 0;
  bool top_found = false;
  while (true) {
    const size_t cr = in.find('\r', pos);
    if (cr == std::string_view::npos || cr + 1 >= in.size()) {
      m.status = FrameStatus::kNeedMore;
      return m;
    }
    if (in[cr + 1] != '\n' || cr == pos) {
      m.status = FrameStatus::kError;
      return m;
    }
    const std::string_view line = in.substr(pos, cr - pos);
    const size_t next = cr + 2;
    const char type = line[0];
    const bool read = attributes == 0;  // what RESP2 readers see
    if (open.empty() && type != '|' && !top_found) {
      m.top = pos;
      top_found = true;
    }
    if (std::string_view("_#,(=!%~>|").find(type) != std::string_view::npos) m.resp3 = true;
    int64_t n = 0;
    switch (type) {
      case '+':
      case '-':
      case '_':
      case ',':
      case '(':
        pos = next;
        --owed;
        break;
      case '#':
        if (line != "#t" && line != "#f") m.convertible = false;
        pos = next;
        --owed;
        break;
      case ':':
        if (!StringToInt64(line.substr(1), &n) && read) m.integers_ok = false;
        pos = next;
        --owed;
        break;
      case '$':
      case '=':
      case '!':
        if (!StringToInt64(line.substr(1), &n) || n < (type == '$' ? -1 : 0) || n > kMaxBulk) {
          m.status = FrameStatus::kError;
          return m;
        }
        if (n == -1) {
          pos = next;
          --owed;
          break;
        }
        if (in.size() - next < static_cast<uint64_t>(n) + 2) {
          m.status = FrameStatus::kNeedMore;
          return m;
        }
        if (in.substr(next + static_cast<size_t>(n), 2) != "\r\n") {
          m.status = FrameStatus::kError;
          return m;
        }
        if (type == '=' && read && (n < 4 || in[next + 3] != ':')) m.convertible = false;
        pos = next + static_cast<size_t>(n) + 2;
        --owed;
        break;
      case '*':
      case '~':
      case '>':
      case '%':
      case '|': {
        const bool pairs = type == '%' || type == '|';
        if (!StringToInt64(line.substr(1), &n) || n < (type == '*' ? -1 : 0) || n > kMaxElements) {
          m.status = FrameStatus::kError;
          return m;
        }
        const int64_t values = pairs ? 2 * n : n;
        if (values > kMaxElements - owed) {
          m.status = FrameStatus::kError;
          return m;
        }
        pos = next;
        m.max_count = std::max(m.max_count, static_cast<uint64_t>(values > 0 ? values : 0));
        if (type == '|') {
          // No value of its own: its pairs, then the value it describes, in its place.
          owed += values;
          if (values > 0) {
            open.push_back({values, true});
            ++attributes;
          }
          continue;
        }
        owed += (values > 0 ? values : 0) - 1;  // takes its own place, owes its elements
        if (read) m.max_array_level = std::max(m.max_array_level, static_cast<int>(open.size()));
        if (values > 0) {
          open.push_back({values, false});
          continue;
        }
        break;
      }
      default:
        m.status = FrameStatus::kError;
        return m;
    }
    // A value is complete: it settles one element of the innermost aggregate, which may
    // complete it, which settles one element of its parent, and so on. An attribute's last
    // pair settles nothing further: the value it describes is still to come.
    bool described_next = false;
    while (!open.empty() && --open.back().left == 0) {
      const bool attribute = open.back().attribute;
      open.pop_back();
      if (attribute) {
        --attributes;
        described_next = true;
        break;
      }
    }
    if (open.empty() && !described_next) {
      m.status = FrameStatus::kComplete;
      m.length = pos;
      return m;
    }
  }
}

struct Framing {
  std::vector<size_t> lengths;  // the frames, in order
  FrameStatus last = FrameStatus::kNeedMore;
  std::string error;
  size_t leftover = 0;  // bytes after the last frame (kNeedMore)
};

// A fresh allocation of exactly `bytes`, so ASan catches a read past the end and a framer that
// keeps pointers into a previous call's input.
std::unique_ptr<char[]> Copy(std::string_view bytes) {
  std::unique_ptr<char[]> copy(new char[bytes.size() + 1]);
  std::memcpy(copy.get(), bytes.data(), bytes.size());
  return copy;
}

// After kError on `input`: sticky until Reset(), then the framer starts over.
void CheckError(ReplyFramer* framer, std::string_view input) {
  const std::string error = framer->error();
  FUZZ_CHECK(!error.empty());
  size_t length = 12345;
  FUZZ_CHECK(framer->Next(input, &length) == FrameStatus::kError);
  FUZZ_CHECK(framer->Next(std::string_view(), &length) == FrameStatus::kError);
  FUZZ_CHECK(framer->Next("+OK\r\n", &length) == FrameStatus::kError);
  const std::string more = std::string(input) + "+OK\r\n";
  FUZZ_CHECK(framer->Next(more, &length) == FrameStatus::kError);
  FUZZ_CHECK(length == 12345);
  FUZZ_CHECK(framer->error() == error);
  // Reset forgets everything: the same bytes fail the same way, a good reply frames.
  framer->Reset();
  FUZZ_CHECK(framer->error().empty());
  FUZZ_CHECK(framer->Next(input, &length) == FrameStatus::kError);
  FUZZ_CHECK(framer->error() == error);
  framer->Reset();
  FUZZ_CHECK(framer->Next("+OK\r\n", &length) == FrameStatus::kComplete);
  FUZZ_CHECK(length == 5);
}

// Feeds `data` `chunk` bytes at a time; after each read, frames every complete reply.
Framing Feed(std::string_view data, size_t chunk) {
  Framing out;
  ReplyFramer framer;
  std::string pending;
  for (size_t fed = 0; fed < data.size() || fed == 0;) {
    const size_t n = std::min(chunk, data.size() - fed);
    pending.append(data.substr(fed, n));
    fed += n;
    while (true) {
      const std::unique_ptr<char[]> copy = Copy(pending);
      const std::string_view input(copy.get(), pending.size());
      size_t length = 0;
      const FrameStatus status = framer.Next(input, &length);
      if (status == FrameStatus::kError) {
        out.last = status;
        out.error = framer.error();
        CheckError(&framer, input);
        return out;
      }
      FUZZ_CHECK(framer.error().empty());
      if (status == FrameStatus::kNeedMore) break;
      FUZZ_CHECK(status == FrameStatus::kComplete);
      FUZZ_CHECK(length > 0 && length <= input.size());
      out.lengths.push_back(length);
      pending.erase(0, length);
    }
    if (data.empty()) break;
  }
  out.last = FrameStatus::kNeedMore;
  out.leftover = pending.size();
  return out;
}

// The top of a decoded reply against the first line of `value`, the frame's value without
// the attributes before it; a RESP3 value decodes as the RESP2 reply Redis would send.
void CheckDecoded(const redisReply* reply, std::string_view value) {
  const size_t cr = value.find('\r');
  const std::string_view rest = value.substr(1, cr - 1);
  int64_t n = 0;
  const auto string_is = [&](int type, std::string_view s) {
    FUZZ_CHECK(reply->type == type);
    FUZZ_CHECK(std::string_view(reply->str, reply->len) == s);
  };
  switch (value[0]) {
    case '+':
      return string_is(REDIS_REPLY_STATUS, rest);
    case '-':
      return string_is(REDIS_REPLY_ERROR, rest);
    case ',':
    case '(':
      return string_is(REDIS_REPLY_STRING, rest);
    case ':':
      FUZZ_CHECK(reply->type == REDIS_REPLY_INTEGER);
      FUZZ_CHECK(StringToInt64(rest, &n) && reply->integer == n);
      return;
    case '#':
      FUZZ_CHECK(reply->type == (rest == "t" ? REDIS_REPLY_INTEGER : REDIS_REPLY_NIL));
      if (rest == "t") FUZZ_CHECK(reply->integer == 1);
      return;
    case '_':
      FUZZ_CHECK(reply->type == REDIS_REPLY_NIL);
      return;
    case '$':
    case '=':
    case '!': {
      FUZZ_CHECK(StringToInt64(rest, &n));
      if (n == -1) {
        FUZZ_CHECK(reply->type == REDIS_REPLY_NIL);
        return;
      }
      const std::string_view body = value.substr(cr + 2, n);
      if (value[0] == '$') return string_is(REDIS_REPLY_STRING, body);
      if (value[0] == '=') return string_is(REDIS_REPLY_STRING, body.substr(4));
      // An error line cannot hold CR or LF: they become spaces, as in Redis.
      std::string line(body);
      std::replace(line.begin(), line.end(), '\r', ' ');
      std::replace(line.begin(), line.end(), '\n', ' ');
      return string_is(REDIS_REPLY_ERROR, line);
    }
    case '*':
    case '~':
    case '>':
    case '%':
      FUZZ_CHECK(StringToInt64(rest, &n));
      if (n == -1) {
        FUZZ_CHECK(reply->type == REDIS_REPLY_NIL);
      } else {
        FUZZ_CHECK(reply->type == REDIS_REPLY_ARRAY);
        FUZZ_CHECK(reply->elements == static_cast<size_t>(value[0] == '%' ? 2 * n : n));
      }
      return;
    default:
      FUZZ_CHECK(false);
  }
}

// One frame against hiredis's reader and ReplyDecoder.
void CheckFrame(std::string_view frame, const Model& model, ReplyDecoder* decoder) {
  // ReplyDecoder reads a RESP3 frame as RESP2 first; hiredis alone refuses it.
  const bool decodable =
      model.max_array_level <= kHiredisMaxArrayLevel && model.integers_ok && model.convertible;
  const bool hiredis_reads = decodable && !model.resp3;
  redisReader* reader = redisReaderCreate();
  FUZZ_CHECK(reader != nullptr);
  void* reply = nullptr;
  FUZZ_CHECK(redisReaderFeed(reader, frame.data(), frame.size() - 1) == REDIS_OK);
  int rc = redisReaderGetReply(reader, &reply);
  if (rc == REDIS_OK) {
    FUZZ_CHECK(reply == nullptr);  // no reply before the frame's last byte
    FUZZ_CHECK(redisReaderFeed(reader, frame.data() + frame.size() - 1, 1) == REDIS_OK);
    rc = redisReaderGetReply(reader, &reply);
  }
  if (hiredis_reads) {
    FUZZ_CHECK(rc == REDIS_OK);
    FUZZ_CHECK(reply != nullptr);
    FUZZ_CHECK(reader->pos == reader->len);  // all of the frame, nothing left over
    CheckDecoded(static_cast<redisReply*>(reply), frame.substr(model.top));
  } else {
    FUZZ_CHECK(rc == REDIS_ERR);
    FUZZ_CHECK(reply == nullptr);
  }
  if (reply != nullptr) freeReplyObject(reply);
  redisReaderFree(reader);

  const std::unique_ptr<char[]> copy = Copy(frame);
  const ReplyPtr decoded = decoder->Decode(std::string_view(copy.get(), frame.size()));
  FUZZ_CHECK((decoded != nullptr) == decodable);
  if (decoded) CheckDecoded(decoded.get(), frame.substr(model.top));
}

// The bytes after the last frame, which the framer says are not a reply yet.
void CheckLeftover(std::string_view rest, const Model& model) {
  // hiredis allocates an array's element pointers when it reads the count: keep absurd counts
  // (which no input this size can complete) away from it.
  if (model.max_count > rest.size()) return;
  redisReader* reader = redisReaderCreate();
  FUZZ_CHECK(reader != nullptr);
  void* reply = nullptr;
  FUZZ_CHECK(redisReaderFeed(reader, rest.data(), rest.size()) == REDIS_OK);
  // No reply; hiredis may refuse what the framer does not look at (a bad integer, an array
  // header at level 8, which it refuses as soon as the '*' arrives).
  redisReaderGetReply(reader, &reply);
  FUZZ_CHECK(reply == nullptr);
  redisReaderFree(reader);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* bytes, size_t size) {
  if (size < 1) return 0;
  const size_t chunk = 1 + (bytes[0] & 0x3f);
  const std::string_view data(reinterpret_cast<const char*>(bytes) + 1, size - 1);

  const Framing whole = Feed(data, data.size() == 0 ? 1 : data.size());
  const Framing chunked = Feed(data, chunk);
  FUZZ_CHECK(chunked.lengths == whole.lengths);
  FUZZ_CHECK(chunked.last == whole.last);
  FUZZ_CHECK(chunked.error == whole.error);
  FUZZ_CHECK(chunked.leftover == whole.leftover);

  // The model frames the same, and each frame is one reply to hiredis.
  ReplyDecoder decoder;
  size_t offset = 0;
  for (size_t length : whole.lengths) {
    const std::string_view rest = data.substr(offset);
    const Model model = Scan(rest);
    FUZZ_CHECK(model.status == FrameStatus::kComplete);
    FUZZ_CHECK(model.length == length);
    CheckFrame(rest.substr(0, length), model, &decoder);
    offset += length;
  }
  const std::string_view rest = data.substr(offset);
  const Model model = Scan(rest);
  FUZZ_CHECK(model.status == whole.last);
  if (whole.last == FrameStatus::kNeedMore) {
    FUZZ_CHECK(whole.leftover == rest.size());
    CheckLeftover(rest, model);
  }
  return 0;
}
